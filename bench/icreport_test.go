package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpliceInstructions: a run of the instructions section alone
// replaces its part of BENCHMARKS.md and keeps the rest, or puts it after
// the title when the file has none, with the timed part's heading.
func TestSpliceInstructions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	timed := "Written by make bench.\n\n## redis 7.0.15\n\n| row |\n"
	if err := os.WriteFile(path, []byte("# Benchmarks\n\n"+timed), 0o644); err != nil {
		t.Fatal(err)
	}
	section := func(s string) string { return icBegin + "\n" + s + "\n" + icEnd + "\n" }
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if err := spliceInstructions(path, section("first")); err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\n" + section("first") + "\n" + timeHeading + "\n\n" + timed
	if got := read(); got != want {
		t.Fatalf("first splice:\n%s\nwant:\n%s", got, want)
	}
	if err := spliceInstructions(path, section("second")); err != nil {
		t.Fatal(err)
	}
	want = strings.Replace(want, "first", "second", 1)
	if got := read(); got != want {
		t.Fatalf("second splice:\n%s\nwant:\n%s", got, want)
	}
}
