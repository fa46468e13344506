// Package luagen assembles the released Lua scripts from their sources and
// writes the manifest that describes them.
//
// A source in lua/src may contain lines of the form
//
//	-- #include prelude.v1.lua
//
// which are replaced by the named file from the same folder. The assembled
// script is what is released, embedded and pinned by SHA1; its sources are
// kept so that the shared prelude is written once.
//
// A source may also contain one line starting
//
//	-- #call
//
// after its includes and its own helpers. It stays in the released script
// as a comment; in the release's Functions library (see SharedLibrary) what
// comes before it runs once per FUNCTION LOAD and what follows it is the
// function's body, run on every call.
//
// A source and the files it includes may define macros (-- #define ...
// -- #end) that the source uses on lines of their own (-- #expand ...): see
// macro.go. They leave no function to build on a call.
package luagen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/ratelua/ratelua/internal/manifest"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
)

var includeLine = regexp.MustCompile(`(?m)^-- #include ([A-Za-z0-9_.]+)\n`)

// callLine marks where a script's per-call code begins.
var callLine = regexp.MustCompile(`(?m)^-- #call.*\n`)

// Assemble returns the released text of the script source file name in the
// folder src of fsys, with every include expanded once.
func Assemble(fsys fs.FS, src, name string) ([]byte, error) {
	body, err := fs.ReadFile(fsys, path.Join(src, name))
	if err != nil {
		return nil, fmt.Errorf("luagen: read source: %w", err)
	}
	var firstErr error
	out := includeLine.ReplaceAllFunc(body, func(line []byte) []byte {
		included := string(includeLine.FindSubmatch(line)[1])
		text, err := fs.ReadFile(fsys, path.Join(src, included))
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("luagen: %s includes %s: %w", name, included, err)
		}
		if bytes.Contains(text, []byte("-- #include ")) && firstErr == nil {
			firstErr = fmt.Errorf("luagen: %s: nested includes are not supported", included)
		}
		return text
	})
	if firstErr != nil {
		return nil, firstErr
	}
	_, out, err = macroText(nil, out, name)
	return out, err
}

// Entry is one script version in the manifest (the runtime reads it with
// package manifest).
type Entry = manifest.Entry

// Manifest is the checked-in lua/manifest.json.
type Manifest = manifest.Manifest

// ParseFileName splits "name.vN.lua" into its name and version.
func ParseFileName(file string) (string, int, bool) { return manifest.ParseFileName(file) }

// SHA1 returns the hex SHA1 of a script, as SCRIPT LOAD and EVALSHA use it.
func SHA1(source []byte) string { return manifest.SHA1(source) }

// Build returns the manifest for the assembled scripts (file name to text),
// taking each script's contract from contracts.
func Build(scripts map[string][]byte) ([]byte, error) {
	m := Manifest{Comment: manifestComment}
	for file, text := range scripts {
		name, version, ok := ParseFileName(file)
		if !ok {
			return nil, fmt.Errorf("luagen: %q is not named name.vN.lua", file)
		}
		c, ok := contracts[fmt.Sprintf("%s.v%d", name, version)]
		if !ok {
			return nil, fmt.Errorf("luagen: no contract for %s v%d", name, version)
		}
		c.Name, c.Version, c.File, c.SHA1 = name, version, file, SHA1(text)
		if c.StateVersion == 0 {
			c.StateVersion = version
		}
		c.Function, c.Library = FunctionName(name, version), LibraryFile(version)
		m.Scripts = append(m.Scripts, c)
	}
	slices.SortFunc(m.Scripts, func(a, b Entry) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return a.Version - b.Version
	})
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("luagen: encode manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// AssembleAll assembles every script source (name.vN.lua, not the included
// files whose names start with "_") in the folder src of fsys, keyed by file
// name.
func AssembleAll(fsys fs.FS, src string) (map[string][]byte, error) {
	entries, err := fs.ReadDir(fsys, src)
	if err != nil {
		return nil, fmt.Errorf("luagen: list sources: %w", err)
	}
	out := make(map[string][]byte)
	for _, e := range entries {
		if _, _, ok := ParseFileName(e.Name()); !ok || e.IsDir() {
			continue
		}
		text, err := Assemble(fsys, src, e.Name())
		if err != nil {
			return nil, err
		}
		out[e.Name()] = text
	}
	return out, nil
}

// LibraryName is the Redis Functions library of a release: ratelua_v<N>.
func LibraryName(version int) string { return manifest.LibraryName(version) }

// FunctionName is the function a script version registers in its library.
func FunctionName(name string, version int) string { return manifest.FunctionName(name, version) }

// LibraryFile is the file name of a release's Functions library in lua/.
func LibraryFile(version int) string { return manifest.LibraryFile(version) }

// Library returns the Redis Functions library of every script of version
// (file name to assembled text): each script's exact text becomes the body
// of its function, with KEYS and ARGV as the function's arguments, so a
// function and its script can never differ.
func Library(version int, scripts map[string][]byte) ([]byte, error) {
	var files []string
	for file := range scripts {
		if _, v, ok := ParseFileName(file); ok && v == version {
			files = append(files, file)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("luagen: no scripts of version %d", version)
	}
	slices.Sort(files)
	var b bytes.Buffer
	fmt.Fprintf(&b, "#!lua name=%s\n", LibraryName(version))
	fmt.Fprintf(&b, "-- Generated from lua/src by luagen: every v%d script as a function with\n", version)
	b.WriteString("-- the same KEYS/ARGV/reply contract (FCALL <function> 1 <key> <ARGV...>).\n")
	for _, file := range files {
		name, _, _ := ParseFileName(file)
		fmt.Fprintf(&b, "\nredis.register_function('%s', function(KEYS, ARGV)\n", FunctionName(name, version))
		b.Write(scripts[file])
		b.WriteString("end)\n")
	}
	return b.Bytes(), nil
}

// SharedLibrary returns the Redis Functions library of every script of
// version from its sources in the folder src of fsys. When the sources mark
// their per-call code with a "-- #call" line, the shared prelude (the
// included files, which every script of the version must include alike)
// runs once at the library's top level, each script's own helpers once in
// a block of their own, and each function's body is the script after its
// "-- #call" line, so that the helpers are upvalues and not rebuilt on every
// call; replies and state are the script's. Without the mark it returns
// Library(version, scripts) of the assembled scripts.
func SharedLibrary(fsys fs.FS, src string, version int) ([]byte, error) {
	scripts, err := AssembleAll(fsys, src)
	if err != nil {
		return nil, err
	}
	var files []string
	marked := 0
	for file := range scripts {
		if _, v, ok := ParseFileName(file); ok && v == version {
			files = append(files, file)
			if callLine.Match(scripts[file]) {
				marked++
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("luagen: no scripts of version %d", version)
	}
	if marked == 0 {
		return Library(version, scripts)
	}
	if marked != len(files) {
		return nil, fmt.Errorf("luagen: v%d: %d of %d scripts mark their per-call code with -- #call", version, marked, len(files))
	}
	slices.Sort(files)
	var prelude []byte
	var b bytes.Buffer
	fmt.Fprintf(&b, "#!lua name=%s\n", LibraryName(version))
	fmt.Fprintf(&b, "-- Generated from lua/src by luagen: every v%d script as a function with\n", version)
	b.WriteString("-- the same KEYS/ARGV/reply contract (FCALL <function> 1 <key> <ARGV...>).\n")
	b.WriteString("-- The shared prelude and each script's helpers run once per FUNCTION LOAD;\n")
	b.WriteString("-- a function's body is its script's text after the script's '-- #call' line.\n")
	var bodies bytes.Buffer
	for _, file := range files {
		source, err := fs.ReadFile(fsys, path.Join(src, file))
		if err != nil {
			return nil, fmt.Errorf("luagen: read source: %w", err)
		}
		var shared []byte
		for _, inc := range includeLine.FindAllSubmatch(source, -1) {
			text, err := fs.ReadFile(fsys, path.Join(src, string(inc[1])))
			if err != nil {
				return nil, fmt.Errorf("luagen: %s includes %s: %w", file, inc[1], err)
			}
			shared = append(shared, text...)
		}
		// The prelude's macros leave it; the script's uses become code.
		shared, source, err = macroText(shared, source, file)
		if err != nil {
			return nil, err
		}
		includes := includeLine.FindAllIndex(source, -1)
		call := callLine.FindIndex(source)
		if len(includes) == 0 || call[0] < includes[len(includes)-1][1] {
			return nil, fmt.Errorf("luagen: %s: the -- #call line must follow its includes", file)
		}
		if prelude == nil {
			prelude = shared
		} else if !bytes.Equal(prelude, shared) {
			return nil, fmt.Errorf("luagen: %s includes other files than the other v%d scripts", file, version)
		}
		name, _, _ := ParseFileName(file)
		helpers := bytes.TrimLeft(source[includes[len(includes)-1][1]:call[0]], "\n")
		fmt.Fprintf(&bodies, "\n-- %s v%d (lua/%s)\ndo\n", name, version, file)
		bodies.Write(helpers)
		if len(helpers) > 0 && !bytes.HasSuffix(helpers, []byte("\n\n")) {
			bodies.WriteString("\n")
		}
		fmt.Fprintf(&bodies, "redis.register_function('%s', function(KEYS, ARGV)\n", FunctionName(name, version))
		bodies.Write(source[call[1]:])
		bodies.WriteString("end)\nend\n")
	}
	b.WriteString("\n")
	b.Write(prelude)
	b.Write(bodies.Bytes())
	return b.Bytes(), nil
}
