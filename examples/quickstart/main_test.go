package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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
	want := outputPattern
	if !want.Match(out) {
		t.Errorf("quickstart printed:\n%s\nwant:\n%s", out, want)
	}
}

// outputPattern is what the quickstart prints.
var outputPattern = regexp.MustCompile(`^call 1: allowed true, 1 left, retry after 0s
call 2: allowed true, 0 left, retry after 0s
call 3: allowed false, 0 left, retry after (1m0s|5[0-9]s)
$`)

// TestReadmeShowsQuickstart: README.md opens with this program, verbatim,
// and with what it prints; the README stays within 300 lines and names
// make test.
func TestReadmeShowsQuickstart(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	page := string(readme)
	block := "```go\n" + string(src) + "```\n\n```\n"
	i := strings.Index(page, block)
	if i < 0 {
		t.Fatal("README.md does not show examples/quickstart/main.go verbatim in a ```go block followed by its output")
	}
	if first := strings.Index(page, "```go\n"); first != i {
		t.Error("the quickstart is not README.md's first Go block")
	}
	rest := page[i+len(block):]
	output, _, ok := strings.Cut(rest, "```\n")
	if !ok || !outputPattern.MatchString(output) {
		t.Errorf("README.md shows the quickstart printing:\n%s\nwant:\n%s", output, outputPattern)
	}
	if n := strings.Count(page, "\n"); n > 300 {
		t.Errorf("README.md has %d lines, more than 300", n)
	}
	if !strings.Contains(page, "make test") {
		t.Error("README.md does not name make test")
	}
}
