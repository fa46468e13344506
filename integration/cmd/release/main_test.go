package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratelua/ratelua/integration/release"
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

// git runs git in dir with a fixed identity, failing the test on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestRunTagsEveryModuleOnceAndNeverMovesATag(t *testing.T) {
	root := tree(t, "")
	git(t, root, "init", "-q")
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "one")
	head := git(t, root, "rev-parse", "HEAD")
	for i := range 2 { // the second run finds the tags in place
		var out strings.Builder
		if err := run(context.Background(), &out, root, options{tag: true}); err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, out.String())
		}
		for _, tag := range []string{"v0.1.0", "ad/v0.1.0"} {
			if at := git(t, root, "rev-parse", tag+"^{commit}"); at != head {
				t.Errorf("run %d: %s at %s, want HEAD %s", i+1, tag, at, head)
			}
			if kind := git(t, root, "cat-file", "-t", tag); kind != "tag" {
				t.Errorf("run %d: %s is a %s, want an annotated tag", i+1, tag, kind)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(root, "NEWS"), []byte("more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, root, "add", ".")
	git(t, root, "commit", "-qm", "two")
	var out strings.Builder
	err := run(context.Background(), &out, root, options{tag: true})
	if err == nil || !strings.Contains(err.Error(), "tag v0.1.0 exists at "+head) {
		t.Errorf("run on a later commit = %v, want the existing tag named", err)
	}
	if at := git(t, root, "rev-parse", "v0.1.0^{commit}"); at != head {
		t.Errorf("v0.1.0 moved to %s", at)
	}
}

func TestRunRefusesAReplaceInAModuleWithACommand(t *testing.T) {
	root := tree(t, "")
	for name, data := range map[string]string{
		"ad/cmd/adtool/main.go": "// Command adtool prints usage.\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"usage: adtool\") }\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	err := run(context.Background(), &out, root, options{uncommitted: true})
	if want := "ad/go.mod: holds the command example.com/r/ad/cmd/adtool but has a replace directive"; err == nil || !strings.Contains(out.String(), want) {
		t.Errorf("run = %v, want the report to hold %q:\n%s", err, want, out.String())
	}
	// Developed through a go.work instead, the module is ready, and the
	// consumer installs its command from the proxy and runs --help.
	if err := os.WriteFile(filepath.Join(root, "ad", "go.mod"), []byte("module example.com/r/ad\n\ngo 1.25\n\nrequire example.com/r v0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "ad", "go.work"), []byte("go 1.25\n\nuse .\n\nreplace example.com/r => ../\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Its go.sum holds the root's release, as go mod tidy writes it
	// with the proxy of the tree (make release checks it is tidy so).
	mods, err := release.Find(root)
	if err != nil {
		t.Fatal(err)
	}
	e, err := release.ReadChangelog(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := filepath.Join(t.TempDir(), "proxy")
	if err := release.WriteProxy(proxy, mods, e); err != nil {
		t.Fatal(err)
	}
	env, err := proxyEnv(t.Context(), proxy, mods[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if err := goIn(t.Context(), filepath.Join(root, "ad"), env, "mod", "tidy"); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run(context.Background(), &out, root, options{uncommitted: true, consumer: true, verbose: true}); err != nil {
		t.Fatalf("run with a go.work: %v\n%s", err, out.String())
	}
	for _, want := range []string{"install -trimpath example.com/r/ad/cmd/adtool@v0.1.0", "usage: adtool"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}
