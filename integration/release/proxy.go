package release

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// WriteProxy writes a file-system module proxy into dir holding every
// released module of mods at e.Version, as a proxy serves it
// (https://go.dev/ref/mod#goproxy-protocol):
//
//	<dir>/<escaped module path>/@v/list
//	<dir>/<escaped module path>/@v/<version>.info   {"Version", "Time"}
//	<dir>/<escaped module path>/@v/<version>.mod    the module's go.mod
//	<dir>/<escaped module path>/@v/<version>.zip    the module's files
//
// The zip is made by golang.org/x/mod/zip from the module's folder as it
// is on disk, as the Go command makes it: without nested modules, VCS
// folders or files a module zip may not hold. The go.mod is the one on
// disk, replace lines included (the Go command ignores them outside the
// main module).
func WriteProxy(dir string, mods []Module, e Entry) error {
	return writeProxy(dir, mods, e, func(w io.Writer, m Module, v module.Version) error {
		return zip.CreateFromDir(w, v, m.Dir)
	})
}

// WriteProxyAt is WriteProxy with each module's zip made from the git
// commit revision of the repository at repoRoot (zip.CreateFromVCS), as
// a public proxy makes it from the tag: the files committed, and none of
// the ignored files a working tree may hold (caches, build output). The
// go.mod served is the one on disk: the caller checks that nothing is
// left uncommitted.
func WriteProxyAt(dir string, mods []Module, e Entry, repoRoot, revision string) error {
	return writeProxy(dir, mods, e, func(w io.Writer, m Module, v module.Version) error {
		subdir := m.Rel
		if subdir == "." {
			subdir = ""
		}
		return zip.CreateFromVCS(w, v, repoRoot, revision, subdir)
	})
}

// writeProxy writes the proxy with the module zips made by zipOf.
func writeProxy(dir string, mods []Module, e Entry, zipOf func(io.Writer, Module, module.Version) error) error {
	info, err := json.Marshal(struct {
		Version string
		Time    string
	}{e.Version, e.Date.UTC().Format("2006-01-02T15:04:05Z")})
	if err != nil {
		return fmt.Errorf("write the proxy: %w", err)
	}
	for _, m := range Released(mods) {
		if err := writeModule(dir, m, e.Version, info, zipOf); err != nil {
			return fmt.Errorf("write %s@%s to the proxy: %w", m.Path, e.Version, err)
		}
	}
	return nil
}

// writeModule writes one module version's four files.
func writeModule(dir string, m Module, version string, info []byte, zipOf func(io.Writer, Module, module.Version) error) error {
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	v := filepath.Join(dir, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(v, 0o755); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(m.Dir, "go.mod"))
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  gomod,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(v, name), data, 0o644); err != nil {
			return err
		}
	}
	z, err := os.Create(filepath.Join(v, version+".zip"))
	if err != nil {
		return err
	}
	if err := zipOf(z, m, module.Version{Path: m.Path, Version: version}); err != nil {
		z.Close()
		return err
	}
	return z.Close()
}

// ProxyURL is the GOPROXY entry of a file-system proxy in dir.
func ProxyURL(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("proxy URL: %w", err)
	}
	p := filepath.ToSlash(abs)
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // a Windows drive: file:///C:/...
	}
	return (&url.URL{Scheme: "file", Path: p}).String(), nil
}
