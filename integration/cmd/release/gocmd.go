package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/ratelua/ratelua/integration/release"
)

// goIn runs the go command in dir with the machine's environment and env
// added, and returns an error holding its output when it fails.
func goIn(ctx context.Context, dir string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// gofmt fails naming the files under root that gofmt would change.
func gofmt(ctx context.Context, root string) error {
	cmd := exec.CommandContext(ctx, "gofmt", "-l", ".")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("gofmt -l: %w\n%s", err, stderr.Bytes())
	}
	if files := strings.TrimSpace(string(out)); files != "" {
		return fmt.Errorf("gofmt needed:\n%s", files)
	}
	return nil
}

// committed fails when the git work tree at root has changes that are not
// committed, or is no git work tree.
func committed(ctx context.Context, root string) error {
	cmd := exec.CommandContext(ctx, "git", "status", "--porcelain")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("git status: %w\n%s", err, out)
	}
	if changes := strings.TrimRight(string(out), "\n"); changes != "" {
		return fmt.Errorf("changes not committed (the tags would not point at them):\n%s", changes)
	}
	return nil
}

// proxyEnv is the environment of a go command that resolves the tree's
// modules at the release version from the proxy in dir, before the
// machine's GOPROXY, with no go.work file: as a user's build would,
// where a module developed through a go.work (ratelua-rls) requires
// versions no public proxy holds until the tags are pushed.
func proxyEnv(ctx context.Context, dir, rootPath string) ([]string, error) {
	url, err := release.ProxyURL(dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "go", "env", "GOPROXY")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOPROXY: %w", err)
	}
	if machine := strings.TrimSpace(string(out)); machine != "" {
		url += "," + machine
	}
	return []string{"GOWORK=off", "GOPROXY=" + url, "GONOSUMDB=" + rootPath, "GOFLAGS=-mod=mod"}, nil
}

// tagAll creates an annotated tag of each name at HEAD of the git work
// tree at root. A tag that exists and names HEAD's commit is kept; one
// that names another commit fails the whole call before any tag is made.
func tagAll(ctx context.Context, root string, tags []string, version string) error {
	head, err := gitOut(ctx, root, "rev-parse", "HEAD^{commit}")
	if err != nil {
		return err
	}
	var create []string
	for _, t := range tags {
		at, err := gitOut(ctx, root, "rev-parse", "-q", "--verify", "refs/tags/"+t+"^{commit}")
		switch {
		case err != nil:
			create = append(create, t)
		case at != head:
			return fmt.Errorf("tag %s exists at %s, not at HEAD %s: a released version is immutable (release a new version instead)", t, at, head)
		}
	}
	for _, t := range create {
		if _, err := gitOut(ctx, root, "tag", "-a", t, "-m", "ratelua "+t+" ("+version+")"); err != nil {
			return err
		}
	}
	return nil
}

// gitOut runs git in root and returns its trimmed output.
func gitOut(ctx context.Context, root string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
