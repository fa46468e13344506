package release

import (
	"os"
	"path/filepath"
	"testing"
)

// writeTree writes files (slash paths to contents) under a new temporary
// folder and returns it.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
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

// sample is a small repository: a root module with a library package, an
// internal package, a command and an example; a released adapter; a
// test-only module; and a go.mod under testdata, which is no module.
func sample() map[string]string {
	return map[string]string{
		"go.mod":                "module example.com/r\n\ngo 1.25\n",
		"r.go":                  "// Package r is a library.\npackage r\n\n// New returns one.\nfunc New() int { return 1 }\n\n// Limit is a limit.\ntype Limit struct{}\n",
		"r_test.go":             "package r\n",
		"internal/x/x.go":       "package x\n\n// X is internal.\nfunc X() {}\n",
		"cmd/tool/main.go":      "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"usage: tool\") }\n",
		"examples/demo/main.go": "package main\n\nfunc main() {}\n",
		"testdata/m/go.mod":     "module example.com/r/testdata/m\n",
		"ad/go.mod":             "module example.com/r/ad\n\ngo 1.25\n\nreplace example.com/r => ../\n\nrequire example.com/r v0.1.0\n",
		"ad/ad.go":              "// Package ad adapts.\npackage ad\n\nimport _ \"example.com/r\"\n\n// G is generic.\nfunc G[T any]() {}\n\n// T is a type.\ntype T struct{}\n",
		"tests/go.mod":          NotReleased + " (tests only)\nmodule example.com/r/tests\n\ngo 1.25\n\nreplace (\n\texample.com/r => ../\n\texample.com/r/ad => ../ad\n)\n\nrequire (\n\texample.com/r v0.1.0\n\texample.com/r/ad v0.1.0\n)\n",
		"tests/tests_test.go":   "package tests\n",
	}
}

// findSample writes a tree and finds its modules.
func findSample(t *testing.T, files map[string]string) (string, []Module) {
	t.Helper()
	root := writeTree(t, files)
	mods, err := Find(root)
	if err != nil {
		t.Fatal(err)
	}
	return root, mods
}
