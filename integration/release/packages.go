package release

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/format"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Package is a package of a released module that a user imports, or a
// command a user installs.
type Package struct {
	// ImportPath is the package's import path.
	ImportPath string
	// Name is the package name.
	Name string
	// Command is true for a main package under a cmd/ folder, which a user
	// installs rather than imports.
	Command bool
	// Symbol is an exported name the consumer program refers to, "" when
	// the package exports none that can be named without type arguments.
	Symbol string
	// IsType is true when Symbol names a type.
	IsType bool
}

// Packages returns the packages of the released modules that a user would
// use (modules marked NotBuilt aside): every folder with Go files for this platform, except internal
// ones, nested modules, testdata, and main packages that are not under a
// cmd/ folder (examples). The list follows the modules found, so a new
// module or package is covered without a hand-kept list.
func Packages(mods []Module) ([]Package, error) {
	var pkgs []Package
	for _, m := range Released(mods) {
		if !m.Built {
			continue
		}
		found, err := modulePackages(m)
		if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, found...)
	}
	return pkgs, nil
}

// Commands returns the commands (main packages under a cmd/ folder) of
// every released module, the modules marked NotBuilt included: a user
// installs each with go install <import path>@<version>.
func Commands(mods []Module) ([]Package, error) {
	var cmds []Package
	for _, m := range Released(mods) {
		found, err := modulePackages(m)
		if err != nil {
			return nil, err
		}
		for _, p := range found {
			if p.Command {
				cmds = append(cmds, p)
			}
		}
	}
	return cmds, nil
}

// modulePackages returns the packages of module m in the order of their
// folders: every folder with Go files for this platform, except internal
// ones, nested modules, testdata, and main packages that are not under a
// cmd/ folder.
func modulePackages(m Module) ([]Package, error) {
	var pkgs []Package
	err := filepath.WalkDir(m.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if p != m.Dir {
			if skipDir(d.Name()) || d.Name() == "internal" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
		}
		pkg, ok, err := readPackage(m, p)
		if err != nil {
			return err
		}
		if ok {
			pkgs = append(pkgs, pkg)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("packages of %s: %w", m.Path, err)
	}
	return pkgs, nil
}

// readPackage reads the package in dir, a folder of module m.
func readPackage(m Module, dir string) (Package, bool, error) {
	bp, err := build.ImportDir(dir, 0)
	var none *build.NoGoError
	if errors.As(err, &none) {
		return Package{}, false, nil
	}
	if err != nil {
		return Package{}, false, err
	}
	rel, err := filepath.Rel(m.Dir, dir)
	if err != nil {
		return Package{}, false, err
	}
	pkg := Package{ImportPath: path.Join(m.Path, filepath.ToSlash(rel)), Name: bp.Name}
	if bp.Name == "main" {
		pkg.Command = strings.Contains("/"+filepath.ToSlash(rel)+"/", "/cmd/")
		return pkg, pkg.Command, nil
	}
	pkg.Symbol, pkg.IsType, err = exportedSymbol(dir, bp.GoFiles)
	return pkg, true, err
}

// exportedSymbol picks the exported name a program refers to in the
// package made of files: the first function by name, else the first
// type, else the first variable or constant. Generic functions and types
// are passed over (naming them needs type arguments).
func exportedSymbol(dir string, files []string) (string, bool, error) {
	var funcs, types, values []string
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", false, err
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() && d.Type.TypeParams == nil {
					funcs = append(funcs, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.TypeParams == nil {
							types = append(types, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								values = append(values, n.Name)
							}
						}
					}
				}
			}
		}
	}
	for i, names := range [][]string{funcs, types, values} {
		if len(names) > 0 {
			sort.Strings(names)
			return names[0], i == 1, nil
		}
	}
	return "", false, nil
}

// ConsumerMain returns the source of a program that imports every
// non-command package of pkgs and refers to its symbol, so that building
// it compiles each package against its dependencies as a user's build
// would, and vetting it checks the uses.
func ConsumerMain(pkgs []Package, version string) ([]byte, error) {
	var imports, uses bytes.Buffer
	taken := map[string]bool{"fmt": true, "main": true}
	n := 0
	for _, p := range pkgs {
		if p.Command {
			continue
		}
		n++
		alias := p.Name
		for i := 2; taken[alias]; i++ {
			alias = fmt.Sprintf("%s%d", p.Name, i)
		}
		taken[alias] = true
		switch {
		case p.Symbol == "":
			fmt.Fprintf(&imports, "\t_ %q\n", p.ImportPath)
		case p.IsType:
			fmt.Fprintf(&imports, "\t%s %q\n", alias, p.ImportPath)
			fmt.Fprintf(&uses, "\t_ *%s.%s\n", alias, p.Symbol)
		default:
			fmt.Fprintf(&imports, "\t%s %q\n", alias, p.ImportPath)
			fmt.Fprintf(&uses, "\t_ = %s.%s\n", alias, p.Symbol)
		}
	}
	src := fmt.Sprintf(`// Command consumer uses every package of ratelua %[1]s, built from
// a module proxy outside the repository.
package main

import (
	"fmt"

%[2]s)

var (
%[3]s)

func main() {
	fmt.Println("consumer: %[4]d packages of ratelua %[1]s")
}
`, version, imports.String(), uses.String(), n)
	out, err := format.Source([]byte(src))
	if err != nil {
		return nil, fmt.Errorf("consumer program: %w\n%s", err, src)
	}
	return out, nil
}
