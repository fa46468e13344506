package integration

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua/integration/release"
)

// treeRoot is the repository's root: integration/ is one of its folders.
func treeRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// outside returns a new temporary folder, failing the test when it lies
// inside the repository (a consumer there would see the tree's go.mod).
func outside(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	if rel, err := filepath.Rel(root, dir); err == nil && !strings.HasPrefix(rel, "..") {
		t.Fatalf("the temporary folder %s is inside the repository %s: set TMPDIR elsewhere", dir, root)
	}
	return dir
}

// consume writes the proxy of the tree at root and runs a consumer on it,
// returning the consumer's log and error.
func consume(t *testing.T, root string, mods []release.Module, e release.Entry) (string, error) {
	t.Helper()
	work := outside(t, root)
	proxy := filepath.Join(work, "proxy")
	if err := release.WriteProxy(proxy, mods, e); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	// A cold build cache compiles every dependency (gRPC, OpenTelemetry,
	// Docker's client): minutes on a loaded machine. The run may take
	// what is left of the test binary's time, less a margin to report.
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	c := release.Consumer{Proxy: proxy, Work: work, Modules: mods, Version: e.Version, Log: &log}
	err := c.Run(ctx)
	return log.String(), err
}

// TestConsumerInstallsTheRelease is what a user does with the release:
// from a module outside the repository with an empty module cache, it
// gets the root and every released module at the CHANGELOG's newest
// version from a proxy built from the tree, then builds and vets a
// program using every package they hold, and go-installs every command
// of every released module (ratelua, ratelua-rls) and runs its --help.
func TestConsumerInstallsTheRelease(t *testing.T) {
	root := treeRoot(t)
	mods, err := release.Find(root)
	if err != nil {
		t.Fatal(err)
	}
	e, err := release.ReadChangelog(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := release.CheckVersions(mods, e.Version); err != nil {
		t.Fatalf("the tree is not ready for %s:\n%v", e.Version, err)
	}
	released := release.Released(mods)
	if len(released) < 2 {
		t.Fatalf("released modules: %d, want the root and at least one adapter", len(released))
	}
	start := time.Now()
	log, err := consume(t, root, mods, e)
	if err != nil {
		t.Fatalf("a user cannot install %s: %v\nlog:\n%s", e.Version, err, log)
	}
	var paths []string
	for _, m := range released {
		paths = append(paths, m.Path)
	}
	t.Logf("installed %s of %d modules (%s) from the proxy with an empty module cache in %s:\n%s",
		e.Version, len(released), strings.Join(paths, ", "), time.Since(start).Round(time.Millisecond), commands(log))
}

// TestConsumerFailsOnAVersionTheProxyLacks shows that the consumer test
// can fail: in a copy of the tree, one released nested module requires a
// root version the proxy does not hold, lower or higher than the release,
// and the consumer fails naming it (CheckVersions names it too).
func TestConsumerFailsOnAVersionTheProxyLacks(t *testing.T) {
	root := treeRoot(t)
	e, err := release.ReadChangelog(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, missing := range []string{"v0.0.9", "v0.1.1"} {
		t.Run(missing, func(t *testing.T) {
			copyRoot := filepath.Join(outside(t, root), "tree")
			if err := copyRepo(root, copyRoot); err != nil {
				t.Fatal(err)
			}
			mods, err := release.Find(copyRoot)
			if err != nil {
				t.Fatal(err)
			}
			broken := requireRootAt(t, mods, missing)
			if mods, err = release.Find(copyRoot); err != nil {
				t.Fatal(err)
			}
			err = release.CheckVersions(mods, e.Version)
			if want := broken + "/go.mod: requires " + mods[0].Path + " " + missing; err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("CheckVersions = %v, want an error holding %q", err, want)
			}
			start := time.Now()
			log, err := consume(t, root, mods, e)
			if err == nil {
				t.Fatalf("the consumer built with %s/go.mod requiring %s@%s, which the proxy does not hold\nlog:\n%s", broken, mods[0].Path, missing, log)
			}
			want := mods[0].Path + "@" + missing
			line := lineWith(err.Error(), want)
			if line == "" {
				t.Fatalf("the consumer failed without naming %s: %v\nlog:\n%s", want, err, log)
			}
			t.Logf("the consumer failed in %s, as it must: %s", time.Since(start).Round(time.Millisecond), line)
		})
	}
}

// requireRootAt makes the first released nested module that requires the
// root require it at version instead, and returns its folder.
func requireRootAt(t *testing.T, mods []release.Module, version string) string {
	t.Helper()
	for _, m := range release.Released(mods)[1:] {
		for _, r := range m.File.Require {
			if r.Mod.Path != mods[0].Path {
				continue
			}
			if err := m.File.AddRequire(mods[0].Path, version); err != nil {
				t.Fatal(err)
			}
			data, err := m.File.Format()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(m.Dir, "go.mod"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			return m.Rel
		}
	}
	t.Fatal("no released nested module requires the root")
	return ""
}

// copyRepo copies the regular files of the tree at src to dst, leaving
// out .git.
func copyRepo(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// commands is the consumer log's command lines, each with its duration.
func commands(log string) string {
	var lines []string
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "$ ") {
			lines = append(lines, line)
		}
	}
	return strings.Join(lines, "\n")
}

// lineWith is the first line of s that holds sub, or "".
func lineWith(s, sub string) string {
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}
