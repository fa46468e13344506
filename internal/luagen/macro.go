package luagen

import (
	"fmt"
	"regexp"
	"strings"
)

// Macros: a source (or a file it includes) may define a block of
// statements once,
//
//	-- #define server_now(OUT, UNIT)
//	local time = redis.call('TIME')
//	...
//	-- #end
//
// and use it where its code is needed, on a line of its own:
//
//	  -- #expand server_now(now, unit)
//
// The definition leaves the assembled text; each use becomes the block,
// indented as the use, with each parameter (a whole name, not after '.' or
// ':') replaced by the argument's text. A script run by EVALSHA builds every
// function of its text again on each call; a macro is code in place, so the
// common path of a released script builds none. A block that declares
// locals wraps itself in do ... end.

// defineBlock matches a definition, with the comment lines right above it
// (its doc comment, which leaves with it; not a -- # line) and one blank line after it: its
// name, its parameters and its body.
var defineBlock = regexp.MustCompile(`(?ms)(?:^--(?: [^#\n][^\n]*)?\n)*^-- #define ([A-Za-z_][A-Za-z0-9_]*)\(([^)]*)\)[ \t]*\n(.*?)^-- #end[ \t]*\n(?:\n)?`)

// expandLine matches a use: its indentation, the macro and its arguments.
var expandLine = regexp.MustCompile(`(?m)^([ \t]*)-- #expand ([A-Za-z_][A-Za-z0-9_]*)\((.*)\)[ \t]*\n`)

// leftDefine and leftExpand find what the two above did not take.
var (
	leftDefine = regexp.MustCompile(`(?m)^-- #define `)
	leftExpand = regexp.MustCompile(`-- #expand [A-Za-z_]`)
)

// identifier matches a Lua name and the byte before it, if any.
var identifier = regexp.MustCompile(`(^|[^A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)`)

// A macro is a defined block of statements.
type macro struct {
	params []string
	body   string
}

// defines removes the macro definitions from text and returns what is
// left and the macros by name.
func defines(text []byte, into map[string]macro) ([]byte, error) {
	var err error
	out := defineBlock.ReplaceAllFunc(text, func(block []byte) []byte {
		m := defineBlock.FindSubmatch(block)
		name := string(m[1])
		if _, dup := into[name]; dup && err == nil {
			err = fmt.Errorf("luagen: macro %s is defined twice", name)
		}
		into[name] = macro{params: splitArgs(string(m[2])), body: string(m[3])}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if leftDefine.Match(out) {
		return nil, fmt.Errorf("luagen: a -- #define without its -- #end")
	}
	return out, nil
}

// expand replaces every use of a macro in text with its block; file names
// the text in errors.
func expand(text []byte, macros map[string]macro, file string) ([]byte, error) {
	var err error
	out := expandLine.ReplaceAllFunc(text, func(line []byte) []byte {
		m := expandLine.FindSubmatch(line)
		indent, name, args := string(m[1]), string(m[2]), splitArgs(string(m[3]))
		def, ok := macros[name]
		if !ok {
			if err == nil {
				err = fmt.Errorf("luagen: %s expands %s, which is not defined", file, name)
			}
			return line
		}
		if len(args) != len(def.params) {
			if err == nil {
				err = fmt.Errorf("luagen: %s expands %s with %d arguments, want %d", file, name, len(args), len(def.params))
			}
			return line
		}
		with := make(map[string]string, len(args))
		for i, p := range def.params {
			with[p] = args[i]
		}
		body := identifier.ReplaceAllStringFunc(def.body, func(s string) string {
			sub := identifier.FindStringSubmatch(s)
			before, word := sub[1], sub[2]
			if arg, ok := with[word]; ok && before != "." && before != ":" {
				return before + arg
			}
			return s
		})
		var b strings.Builder
		for _, l := range strings.SplitAfter(body, "\n") {
			if strings.TrimSpace(l) != "" {
				b.WriteString(indent)
			}
			b.WriteString(l)
		}
		return []byte(b.String())
	})
	if err != nil {
		return nil, err
	}
	if leftExpand.Match(out) {
		return nil, fmt.Errorf("luagen: %s: a -- #expand that is not a line of its own", file)
	}
	return out, nil
}

// splitArgs splits a list of arguments at the commas outside brackets and
// quotes, each trimmed; "" is no argument.
func splitArgs(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	depth, quote, start := 0, byte(0), 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(' || c == '[' || c == '{':
			depth++
		case c == ')' || c == ']' || c == '}':
			depth--
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// macroText applies the macros of a source: definitions in shared (its
// included files) and in source are removed, and every use in source is
// expanded. It returns shared and source without their definitions, the
// uses in source expanded.
func macroText(shared, source []byte, file string) ([]byte, []byte, error) {
	macros := map[string]macro{}
	shared, err := defines(shared, macros)
	if err != nil {
		return nil, nil, err
	}
	source, err = defines(source, macros)
	if err != nil {
		return nil, nil, err
	}
	source, err = expand(source, macros, file)
	if err != nil {
		return nil, nil, err
	}
	return shared, source, nil
}
