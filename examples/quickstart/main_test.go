package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestQuickstart builds and runs the README's first program as a user
// would (go run ./examples/quickstart, no server) and checks what it
// prints: two admissions, then a denial whose wait is the next token's.
func TestQuickstart(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "quickstart")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/quickstart: %v\n%s", err, out)
	}
	cmd := exec.Command(bin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("quickstart: %v\n%s", err, out)
	}
	// The wait is a minute less the time between the calls, rounded to
	// the second: 1m0s, or 59s on a machine that took over half a second.
	want := regexp.MustCompile(`^call 1: allowed true, 1 left, retry after 0s
call 2: allowed true, 0 left, retry after 0s
call 3: allowed false, 0 left, retry after (1m0s|5[0-9]s)
$`)
	if !want.Match(out) {
		t.Errorf("quickstart printed:\n%s\nwant:\n%s", out, want)
	}
}
