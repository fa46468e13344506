package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpliceHotKeys: the hot-key section is appended to a file without
// one, replaces the one a file has (the rest unchanged), and hotKeysPart
// reads it back; a full run re-splices what hotKeysPart read.
func TestSpliceHotKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	head := "# Benchmarks\n\n## Time per decision\n\nrows\n"
	if err := os.WriteFile(path, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := hotKeysPart(path); got != "" {
		t.Fatalf("hotKeysPart of a file without the section = %q", got)
	}
	one := hkBegin + "\n## Hot keys\n\nfirst\n" + hkEnd + "\n"
	if err := spliceHotKeys(path, one); err != nil {
		t.Fatal(err)
	}
	if got := read(t, path); got != head+"\n"+one {
		t.Fatalf("after the first splice:\n%s", got)
	}
	two := hkBegin + "\n## Hot keys\n\nsecond\n" + hkEnd + "\n"
	if err := spliceHotKeys(path, two); err != nil {
		t.Fatal(err)
	}
	got := read(t, path)
	if got != head+"\n"+two || strings.Contains(got, "first") {
		t.Fatalf("after the second splice:\n%s", got)
	}
	if part := hotKeysPart(path); part != two {
		t.Fatalf("hotKeysPart = %q, want %q", part, two)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
