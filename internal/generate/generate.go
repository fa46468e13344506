// Package generate computes every file the repository generates from
// lua/src and from the code that answers for them, and writes or checks
// them: the scripts, the Functions libraries and the manifest in lua/ (by
// package luagen), the Python and Node packages' copies of them and of
// LICENSE, the key vectors (testdata/keyvectors.json, from the Go API), the
// client-address cases (testdata/clientaddr.json, from clientaddr), the
// scripts table of lua/README.md and README.md's generated blocks.
//
// It is the only writer and the only checker of those files: the command
// internal/luagen/cmd/luagen runs it (make generate is -write, make
// check-generated is -check). It imports the root package to ask the Go
// API for keys and replies; the root package never imports it.
package generate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Output is what the generator makes: every generated file's path (slash
// separated, relative to the repository's root) and text, and the folders
// that hold generated files only, where any other file is a leftover.
type Output struct {
	Files map[string][]byte
	Owned []string
}

// add records a file, or an error if two parts generate the same path.
func (o *Output) add(path string, data []byte) error {
	if o.Files == nil {
		o.Files = map[string][]byte{}
	}
	if _, ok := o.Files[path]; ok {
		return fmt.Errorf("generate: %s is generated twice", path)
	}
	o.Files[path] = data
	return nil
}

// Paths returns the generated files' paths, sorted.
func (o Output) Paths() []string {
	var out []string
	for p := range o.Files {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// A Problem is a generated file that is not what the generator makes:
// stale, missing, or a leftover in a folder of generated files.
type Problem struct {
	Path   string
	Reason string // "stale", "missing" or "not generated"
	// Excerpt shows where a stale file first differs (lines starting "-"
	// are on disk, "+" what the generator makes).
	Excerpt string
}

func (p Problem) String() string {
	s := p.Path + ": " + p.Reason
	if p.Excerpt != "" {
		s += "\n" + p.Excerpt
	}
	return s
}

// Check compares the files under root with out and returns every
// difference, in path order; it writes nothing.
func Check(root string, out Output) ([]Problem, error) {
	var problems []Problem
	for _, path := range out.Paths() {
		want := out.Files[path]
		got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, Problem{Path: path, Reason: "missing"})
		case err != nil:
			return nil, fmt.Errorf("generate: %w", err)
		case string(got) != string(want):
			problems = append(problems, Problem{Path: path, Reason: "stale", Excerpt: Excerpt(string(got), string(want))})
		}
	}
	leftovers, err := leftovers(root, out)
	if err != nil {
		return nil, err
	}
	for _, path := range leftovers {
		problems = append(problems, Problem{Path: path, Reason: "not generated (a leftover in a folder of generated files)"})
	}
	slices.SortFunc(problems, func(a, b Problem) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	return problems, nil
}

// Write writes every file of out under root whose text differs, removes
// the leftovers in out's folders of generated files, and returns the paths
// it wrote or removed.
func Write(root string, out Output) ([]string, error) {
	var changed []string
	for _, path := range out.Paths() {
		file := filepath.Join(root, filepath.FromSlash(path))
		if got, err := os.ReadFile(file); err == nil && string(got) == string(out.Files[path]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return changed, fmt.Errorf("generate: %w", err)
		}
		if err := os.WriteFile(file, out.Files[path], 0o644); err != nil {
			return changed, fmt.Errorf("generate: %w", err)
		}
		changed = append(changed, path)
	}
	leftovers, err := leftovers(root, out)
	if err != nil {
		return changed, err
	}
	for _, path := range leftovers {
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(path))); err != nil {
			return changed, fmt.Errorf("generate: remove a leftover: %w", err)
		}
		changed = append(changed, path)
	}
	return changed, nil
}

// leftovers are the files in out's folders of generated files that out
// does not generate.
func leftovers(root string, out Output) ([]string, error) {
	var paths []string
	for _, dir := range out.Owned {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("generate: %w", err)
		}
		for _, e := range entries {
			path := dir + "/" + e.Name()
			if _, ok := out.Files[path]; !ok {
				paths = append(paths, path)
			}
		}
	}
	return paths, nil
}
