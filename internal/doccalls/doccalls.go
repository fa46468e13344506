// Package doccalls reads the raw script calls that the documentation shows
// (README.md, lua/README.md) and their documented replies, so that tests
// can run them on the embedded engine and on real servers: a documented
// reply that the script does not give fails a test.
//
// A call is a line in a fenced block that starts with EVALSHA:
//
//	EVALSHA <sha1> 1 <key> <ARGV...>           a SHA1 of the manifest
//	EVALSHA <name SHA1> 1 <key> <ARGV...>      the newest version of name
//	EVALSHA ... <ARGV...>                       the previous call's script and key
//
// followed on the same line, or alone on the next, by "-> " and the five
// integers of the reply; what follows them is a comment. A line without a
// reply shows a form, not a call. Each fenced block
// is one sequence, starting from no state.
package doccalls

import (
	"fmt"
	"strconv"
	"strings"
)

// Call is one documented call and its reply.
type Call struct {
	Line   int    // 1-based line of the call in the page
	Script string // the SHA1 as written, or "<name SHA1>"
	Key    string
	Args   []string
	Reply  []int64
}

// Block is the calls of one fenced block, in order.
type Block []Call

// Parse returns the blocks of page that hold calls, or an error naming the
// line of a call it cannot read.
func Parse(page string) ([]Block, error) {
	var blocks []Block
	var cur Block
	fenced := false
	lines := strings.Split(page, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "```") {
			if fenced && len(cur) > 0 {
				blocks = append(blocks, cur)
			}
			fenced, cur = !fenced, nil
			continue
		}
		if !fenced || !strings.HasPrefix(line, "EVALSHA ") {
			continue
		}
		at := i + 1
		call, reply, _ := strings.Cut(line, "->")
		if reply == "" && i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "->") {
			i++
			reply = strings.TrimPrefix(strings.TrimSpace(lines[i]), "->")
		}
		if reply == "" {
			continue // a call's form (EVALSHA <sha1> 1 <key> <ARGV...>), not a call
		}
		c, err := parseCall(call, cur)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", at, err)
		}
		c.Line = at
		f := strings.Fields(reply)
		if len(f) < 5 {
			return nil, fmt.Errorf("line %d: reply %q: five integers wanted", c.Line, reply)
		}
		for _, s := range f[:5] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: reply %q: %w", c.Line, reply, err)
			}
			c.Reply = append(c.Reply, n)
		}
		cur = append(cur, c)
	}
	if fenced {
		return nil, fmt.Errorf("a fenced block is not closed")
	}
	return blocks, nil
}

func parseCall(s string, prev Block) (Call, error) {
	f := strings.Fields(s)[1:]
	if len(f) > 0 && f[0] == "..." {
		if len(prev) == 0 {
			return Call{}, fmt.Errorf("EVALSHA ... with no call before it in the block")
		}
		last := prev[len(prev)-1]
		return Call{Script: last.Script, Key: last.Key, Args: f[1:]}, nil
	}
	var script string
	switch {
	case len(f) > 1 && strings.HasPrefix(f[0], "<") && f[1] == "SHA1>":
		script, f = f[0]+" "+f[1], f[2:]
	case len(f) > 0 && len(f[0]) == 40:
		script, f = f[0], f[1:]
	default:
		return Call{}, fmt.Errorf("%q: EVALSHA <sha1>, EVALSHA <name SHA1> or EVALSHA ... wanted", s)
	}
	if len(f) < 2 || f[0] != "1" {
		return Call{}, fmt.Errorf("%q: numkeys 1 and a key wanted", s)
	}
	return Call{Script: script, Key: f[1], Args: f[2:]}, nil
}

// Name returns the script name of a "<name SHA1>" placeholder, or "".
func (c Call) Name() string {
	if name, ok := strings.CutSuffix(c.Script, " SHA1>"); ok {
		return strings.TrimPrefix(name, "<")
	}
	return ""
}
