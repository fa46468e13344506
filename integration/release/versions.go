package release

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"golang.org/x/mod/semver"
)

// CheckVersions checks that the modules are ready to be released at
// version (e.g. "v0.1.0"): every requirement of one of the tree's modules
// is at that version, with a replace to the required module's folder for
// local work (the replace is ignored by the Go command outside this
// module, so a user resolves the real version) or, in a module that
// holds a command, a go.work beside its go.mod using both folders
// (go install refuses a go.mod with a replace directive); and a released
// module requires no module that is not released. It reports every
// problem found, each naming the go.mod and the requirement.
func CheckVersions(mods []Module, version string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Prerelease(version) != "" {
		return fmt.Errorf("check versions: %q is not a release version (want vMAJOR.MINOR.PATCH)", version)
	}
	if len(mods) == 0 {
		return errors.New("check versions: no modules")
	}
	byPath := map[string]Module{}
	for _, m := range mods {
		byPath[m.Path] = m
	}
	rootPath := mods[0].Path
	cmds, err := Commands(mods)
	if err != nil {
		return fmt.Errorf("check versions: %w", err)
	}
	installed := map[string]string{} // module path: a command it holds
	for _, c := range cmds {
		installed[Owner(mods, c.ImportPath).Path] = c.ImportPath
	}
	var errs []error
	for _, m := range mods {
		gomod := path.Join(m.Rel, "go.mod")
		if cmd, ok := installed[m.Path]; ok && len(m.File.Replace) > 0 {
			errs = append(errs, fmt.Errorf("%s: holds the command %s but has a replace directive, which go install refuses (develop through a go.work beside it)", gomod, cmd))
		}
		for _, r := range m.File.Require {
			p := r.Mod.Path
			if p != rootPath && !strings.HasPrefix(p, rootPath+"/") {
				continue
			}
			dep, ok := byPath[p]
			if !ok {
				errs = append(errs, fmt.Errorf("%s: requires %s, which is no module of the tree", gomod, p))
				continue
			}
			if r.Mod.Version != version {
				errs = append(errs, fmt.Errorf("%s: requires %s %s, want %s (the release version)", gomod, p, r.Mod.Version, version))
			}
			if m.Released && !dep.Released {
				errs = append(errs, fmt.Errorf("%s: a released module requires %s, which is not released (its go.mod says %q)", gomod, p, NotReleased))
			}
			if err := checkLocal(m, dep); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", gomod, err))
			}
		}
	}
	return errors.Join(errs...)
}

// checkLocal checks that local work on m builds dep from its folder: by a
// replace of dep by its folder in m's go.mod or, for a module that holds
// a command, in the go.work beside it.
func checkLocal(m, dep Module) error {
	replaces := m.File.Replace
	where := "go.mod"
	if len(replaces) == 0 && m.Work != nil {
		replaces, where = m.Work.Replace, "go.work"
	}
	for _, r := range replaces {
		if r.Old.Path != dep.Path {
			continue
		}
		if r.New.Version != "" || path.Clean(path.Join(m.Rel, r.New.Path)) != path.Clean(dep.Rel) {
			return fmt.Errorf("its %s replaces %s by %s %s, want %s (its folder)", where, dep.Path, r.New.Path, r.New.Version, relTo(m.Rel, dep.Rel))
		}
		return nil
	}
	return fmt.Errorf("requires %s with no replace => %s in its go.mod or go.work (local work would build the released version, not the tree)", dep.Path, relTo(m.Rel, dep.Rel))
}

// relTo is the slash path of folder to, relative to folder from (both
// relative to the tree's root).
func relTo(from, to string) string {
	var up []string
	if from != "." {
		for range strings.Split(from, "/") {
			up = append(up, "..")
		}
	}
	if to != "." {
		up = append(up, to)
	}
	if len(up) == 0 {
		return "."
	}
	return strings.Join(up, "/")
}

// Tags returns the tags that release the released modules at version:
// the version itself for the root module, and "<folder>/<version>" for a
// nested one (e.g. goredis/v0.1.0), as the Go command looks them up.
func Tags(mods []Module, version string) []string {
	var tags []string
	for _, m := range Released(mods) {
		if m.Rel == "." {
			tags = append(tags, version)
		} else {
			tags = append(tags, m.Rel+"/"+version)
		}
	}
	return tags
}

// Owner is the module of mods that holds the package importPath: the one
// with the longest path that is the import path or a prefix of it
// followed by a slash. It is the zero Module when none holds it.
func Owner(mods []Module, importPath string) Module {
	var best Module
	for _, m := range mods {
		if (importPath == m.Path || strings.HasPrefix(importPath, m.Path+"/")) && len(m.Path) > len(best.Path) {
			best = m
		}
	}
	return best
}
