package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// goIn runs the go command in dir, with no go.work file, and returns an
// error holding its output when it fails.
func goIn(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
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
