package config

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLoaderLoadsOnlyChanges: a Loader parses the directory the first
// time, not again while its files stay the same (unless forced), again
// when a file changes or when the symbolic link above the directory is
// swapped to other files (RUNTIME_ROOT's "current", as the reference's
// runtime is deployed), and a set of files that fails to parse
// once is not parsed again until it changes.
func TestLoaderLoadsOnlyChanges(t *testing.T) {
	root := t.TempDir()
	v1, v2 := filepath.Join(root, "..v1"), filepath.Join(root, "..v2")
	rule := func(n int) string {
		return "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: " + string(rune('0'+n)) + "}\n"
	}
	write(t, filepath.Join(v1, "config"), "a.yaml", rule(1))
	write(t, filepath.Join(v2, "config"), "a.yaml", rule(2))
	link := filepath.Join(root, "current")
	if err := os.Symlink(v1, link); err != nil {
		t.Fatal(err)
	}
	l := &Loader{Dir: filepath.Join(link, "config")}
	rpu := func(force bool) int {
		t.Helper()
		got, err := l.Load(force)
		if err != nil {
			t.Fatal(err)
		}
		if got.Files != 1 {
			t.Fatalf("%d files, want 1", got.Files)
		}
		if got.Config == nil {
			return -1
		}
		return int(got.Config.Rules[0].Limits[0].RequestsPerUnit)
	}
	if got := rpu(false); got != 1 {
		t.Fatalf("first load: %d, want 1", got)
	}
	if got := rpu(false); got != -1 {
		t.Fatalf("unchanged files loaded again (%d)", got)
	}
	if got := rpu(true); got != 1 {
		t.Fatalf("forced: %d, want 1", got)
	}
	// The swap: a new link renamed over the old one, as Kubernetes does.
	tmp := filepath.Join(root, "current.tmp")
	if err := os.Symlink(v2, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	if got := rpu(false); got != 2 {
		t.Fatalf("after the swap: %d, want 2", got)
	}
	write(t, filepath.Join(v2, "config"), "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n")
	if _, err := l.Load(false); err == nil {
		t.Fatal("a bad file loaded")
	}
	if got, err := l.Load(false); err != nil || got.Config != nil {
		t.Fatalf("the same bad file again: %v, %v; want nothing to do", got.Config, err)
	}
	write(t, filepath.Join(v2, "config"), "a.yaml", rule(3))
	if got := rpu(false); got != 3 {
		t.Fatalf("fixed: %d, want 3", got)
	}
}
