package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// ratelua builds the command line once per test binary.
var cliBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "ratelua-cli-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "ratelua")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/ratelua/ratelua/cmd/ratelua").CombinedOutput()
	if err != nil {
		return "", errors.New("go build: " + err.Error() + ": " + string(out))
	}
	return bin, nil
})

// runCLI runs the command line with args and returns its exit code,
// stdout and stderr.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	bin, err := cliBinary()
	if err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// exists reports whether key exists on node.
func exists(t *testing.T, node *testbench.Node, key string) bool {
	t.Helper()
	n, err := node.Do(context.Background(), "EXISTS", key)
	if err != nil {
		t.Fatal(err)
	}
	return n == int64(1)
}

// TestCLIResetDryRunDeletesNothing (row 4): --dry-run deletes nothing,
// whatever the other arguments: with a script and a key it is a usage
// error (exit 2), before or after the arguments, and the key's state
// stays.
func TestCLIResetDryRunDeletesNothing(t *testing.T) {
	onEachFamily(t, func(t *testing.T, client ratelua.Client, node *testbench.Node, prefix string) {
		key := prefix + ":{203.0.113.7}"
		limits := []string{"1", "5000", "1000", "5", "3600000", "600000"}
		if code, _, stderr := runCLI(t, append([]string{"call", "sliding_window@5", "--addr", node.Addr, key, "1", "-", "0"}, limits...)...); code != 0 {
			t.Fatalf("call: exit %d: %s", code, stderr)
		}
		if !exists(t, node, key) {
			t.Fatal("the call wrote no state")
		}
		for _, args := range [][]string{
			append([]string{"reset", "--dry-run", "sliding_window@5", key, "--addr", node.Addr}, limits...),
			append(append([]string{"reset", "sliding_window@5", key, "--addr", node.Addr}, limits...), "--dry-run"),
			append([]string{"reset", "--dry-run=true", "sliding_window@5", key, "--addr", node.Addr}, limits...),
		} {
			code, stdout, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, "--dry-run") || stdout != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, a usage error naming --dry-run", args[1:3], code, stdout, stderr)
			}
			if !exists(t, node, key) {
				t.Fatalf("%v deleted the key", args[1:3])
			}
		}
	})
}

// TestCLIResetLongPrefixIsUsage (row 13): a --prefix no limiter can have
// (over 128 bytes) is a usage error, exit 2, that says why, before any
// server is asked.
func TestCLIResetLongPrefixIsUsage(t *testing.T) {
	onEachFamily(t, func(t *testing.T, _ ratelua.Client, node *testbench.Node, _ string) {
		for _, dry := range []bool{false, true} {
			args := []string{"reset", "--addr", node.Addr, "--prefix", strings.Repeat("p", 200)}
			if dry {
				args = append(args, "--dry-run")
			}
			code, _, stderr := runCLI(t, args...)
			if code != 2 || !strings.Contains(stderr, "at most") || strings.Contains(stderr, "deleted") {
				t.Errorf("dry-run %v: exit %d, stderr %q; want exit 2 naming the bound", dry, code, stderr)
			}
		}
	})
}
