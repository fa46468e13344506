package release

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
)

// NotReleased is the comment line that marks a module as not released
// (test-only and benchmark modules). A go.mod holding a line that starts
// with it is left out of the proxy, the tags and the consumer build.
const NotReleased = "// ratelua: not released"

// NotBuilt is the comment line that marks a released module whose
// packages the consumer fetches (go get, alone and with the others) but
// does not import and build: a test tool whose dependency tree (Docker's
// client, for testbench) would cost CI minutes to compile from an empty
// cache, and that no program of a user links.
const NotBuilt = "// ratelua: not built by the consumer test"

// Module is one go.mod of the tree.
type Module struct {
	// Path is the module path, e.g. github.com/ratelua/ratelua/goredis.
	Path string
	// Dir is the module's folder on disk.
	Dir string
	// Rel is Dir relative to the tree's root, slash-separated: "." for the
	// root module, "goredis" for a nested one. It prefixes the module's tags.
	Rel string
	// Released is false when the go.mod carries the NotReleased line.
	Released bool
	// Built is false when the go.mod carries the NotBuilt line (or the
	// module is not released): the consumer fetches it but builds none of
	// its packages.
	Built bool
	// File is the parsed go.mod.
	File *modfile.File
	// Work is the parsed go.work of the module's folder, nil when it has
	// none. A module that holds a command replaces the tree's modules by
	// their folders there rather than in its go.mod, whose replace
	// directives go install refuses.
	Work *modfile.WorkFile
}

// Find returns the modules of the tree rooted at root, the root module
// first and then the nested ones in the order of their folders. It skips
// the folders the Go command ignores (names starting with "." or "_",
// testdata) and vendor and node_modules. A nested module's path must be
// the root's path followed by its folder, as the Go command requires for
// a module in a subdirectory of a repository to be found by its tags.
func Find(root string) ([]Module, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("find modules: %w", err)
	}
	var mods []Module
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "go.mod" {
			return nil
		}
		m, err := readModule(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		mods = append(mods, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("find modules under %s: %w", root, err)
	}
	sort.Slice(mods, func(i, j int) bool {
		if (mods[i].Rel == ".") != (mods[j].Rel == ".") {
			return mods[i].Rel == "."
		}
		return mods[i].Rel < mods[j].Rel
	})
	if len(mods) == 0 || mods[0].Rel != "." {
		return nil, fmt.Errorf("find modules: %s has no go.mod", root)
	}
	var errs []error
	for _, m := range mods[1:] {
		if want := mods[0].Path + "/" + m.Rel; m.Path != want {
			errs = append(errs, fmt.Errorf("%s/go.mod: module path %q, want %q (the root's path and the folder)", m.Rel, m.Path, want))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return mods, nil
}

// skipDir reports whether a folder of this name is outside every module.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "testdata" || name == "vendor" || name == "node_modules"
}

// readModule parses dir/go.mod.
func readModule(root, dir string) (Module, error) {
	rel, err := filepath.Rel(root, dir)
	if err != nil {
		return Module{}, err
	}
	rel = filepath.ToSlash(rel)
	name := path.Join(rel, "go.mod")
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return Module{}, err
	}
	f, err := modfile.Parse(name, data, nil)
	if err != nil {
		return Module{}, err
	}
	if f.Module == nil {
		return Module{}, fmt.Errorf("%s: no module line", name)
	}
	m := Module{Path: f.Module.Mod.Path, Dir: dir, Rel: rel, Released: !marked(data, NotReleased), Built: !marked(data, NotReleased) && !marked(data, NotBuilt), File: f}
	work, err := os.ReadFile(filepath.Join(dir, "go.work"))
	switch {
	case err == nil:
		if m.Work, err = modfile.ParseWork(path.Join(rel, "go.work"), work, nil); err != nil {
			return Module{}, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return Module{}, err
	}
	return m, nil
}

// marked reports whether a go.mod holds a line starting with marker.
func marked(gomod []byte, marker string) bool {
	s := bufio.NewScanner(bytes.NewReader(gomod))
	for s.Scan() {
		if strings.HasPrefix(strings.TrimSpace(s.Text()), marker) {
			return true
		}
	}
	return false
}

// Released returns the released modules of mods, in their order.
func Released(mods []Module) []Module {
	var out []Module
	for _, m := range mods {
		if m.Released {
			out = append(out, m)
		}
	}
	return out
}
