package release

import (
	"archive/zip"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

func TestWriteProxyServesEachReleasedModule(t *testing.T) {
	_, mods := findSample(t, sample())
	proxy := t.TempDir()
	e := Entry{Version: "v0.1.0", Date: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)}
	if err := WriteProxy(proxy, mods, e); err != nil {
		t.Fatal(err)
	}
	for _, m := range Released(mods) {
		v := filepath.Join(proxy, filepath.FromSlash(m.Path), "@v")
		if b, err := os.ReadFile(filepath.Join(v, "list")); err != nil || string(b) != "v0.1.0\n" {
			t.Errorf("%s list = %q, %v; want \"v0.1.0\\n\"", m.Path, b, err)
		}
		var info struct{ Version, Time string }
		if b, err := os.ReadFile(filepath.Join(v, "v0.1.0.info")); err != nil || json.Unmarshal(b, &info) != nil ||
			info.Version != "v0.1.0" || info.Time != "2026-11-25T00:00:00Z" {
			t.Errorf("%s info = %+v, %v; want v0.1.0 at 2026-11-25T00:00:00Z", m.Path, info, err)
		}
		gomod, _ := os.ReadFile(filepath.Join(m.Dir, "go.mod"))
		if b, err := os.ReadFile(filepath.Join(v, "v0.1.0.mod")); err != nil || string(b) != string(gomod) {
			t.Errorf("%s mod = %q, %v; want the go.mod %q", m.Path, b, err, gomod)
		}
		if _, err := modzip.CheckZip(module.Version{Path: m.Path, Version: "v0.1.0"}, filepath.Join(v, "v0.1.0.zip")); err != nil {
			t.Errorf("%s zip: %v", m.Path, err)
		}
	}
	if _, err := os.Stat(filepath.Join(proxy, "example.com/r/tests")); !os.IsNotExist(err) {
		t.Errorf("the proxy holds the unreleased module tests (stat: %v)", err)
	}
	got := zipFiles(t, filepath.Join(proxy, "example.com/r/@v/v0.1.0.zip"), "example.com/r@v0.1.0/")
	want := "cmd/tool/main.go examples/demo/main.go go.mod internal/x/x.go r.go r_test.go"
	if strings.Join(got, " ") != want {
		t.Errorf("the root's zip holds %s, want %s (no nested module, no testdata module)", strings.Join(got, " "), want)
	}
}

// zipFiles lists the files of a module zip, without their prefix
// (path@version/).
func zipFiles(t *testing.T, name, prefix string) []string {
	t.Helper()
	r, err := zip.OpenReader(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	for _, f := range r.File {
		rest, ok := strings.CutPrefix(f.Name, prefix)
		if !ok {
			t.Errorf("%s: %s lies outside %s", name, f.Name, prefix)
		}
		names = append(names, rest)
	}
	sort.Strings(names)
	return names
}

func TestProxyURLIsAFileURL(t *testing.T) {
	dir := t.TempDir()
	got, err := ProxyURL(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "file://" + filepath.ToSlash(dir); got != want {
		t.Errorf("ProxyURL(%s) = %s, want %s", dir, got, want)
	}
}
