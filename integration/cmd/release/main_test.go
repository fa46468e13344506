package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree writes a small repository: a root module and an adapter requiring
// it at the version of the CHANGELOG, with gomod as the adapter's go.mod
// when not "".
func tree(t *testing.T, gomod string) string {
	t.Helper()
	if gomod == "" {
		gomod = "module example.com/r/ad\n\ngo 1.25\n\nreplace example.com/r => ../\n\nrequire example.com/r v0.1.0\n"
	}
	root := t.TempDir()
	for name, data := range map[string]string{
		"go.mod":       "module example.com/r\n\ngo 1.25\n",
		"r.go":         "// Package r is a library.\npackage r\n\n// New returns one.\nfunc New() int { return 1 }\n",
		"CHANGELOG.md": "# Changelog\n\n## 0.1.0 (2026-11-25)\n\n- first\n",
		"ad/go.mod":    gomod,
		"ad/ad.go":     "// Package ad adapts.\npackage ad\n\nimport \"example.com/r\"\n\n// One is r.New.\nvar One = r.New\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestRunPrintsTheTagsOfAReadyTree(t *testing.T) {
	var out strings.Builder
	if err := run(context.Background(), &out, tree(t, ""), options{consumer: true, uncommitted: true}); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{"release v0.1.0 (2026-11-25)", "ok   versions", "ok   tidy ad", "ok   vet .", "ok   consumer", "git tag v0.1.0\n", "git tag ad/v0.1.0\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunReportsEveryFailureAndNoTags(t *testing.T) {
	root := tree(t, "module example.com/r/ad\n\ngo 1.25\n\nreplace example.com/r => ../\n\nrequire example.com/r v0.0.9\n")
	if err := os.WriteFile(filepath.Join(root, "bad.go"), []byte("package r\nfunc  Bad() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err := run(context.Background(), &out, root, options{})
	if err == nil || !strings.Contains(err.Error(), "versions, gofmt, committed failed") {
		t.Errorf("run = %v, want the versions, gofmt and committed checks failed", err)
	}
	for _, want := range []string{"ad/go.mod: requires example.com/r v0.0.9, want v0.1.0", "gofmt needed:\n    bad.go", "FAIL committed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "git tag") {
		t.Errorf("the report names tags for a tree that is not ready:\n%s", out.String())
	}
}
