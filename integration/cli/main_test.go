package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/testbench"
)

// The exit statuses of the command (cmd/ratelua's main.go).
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitUnreachable = 3
)

// binary is the ratelua command, built once by TestMain.
var binary string

// h is the package's server harness: it reports the cases that ran on
// each server as suite "cli" (each case starts servers of its own: the
// command's loads, resets and demo start from an empty server).
var h = harness.New()

// TestMain builds the command from the tree and runs the tests, which run
// it as a user does: a process with arguments and an exit status.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ratelua-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "ratelua")
	build := exec.Command("go", "build", "-o", binary, "github.com/ratelua/ratelua/cmd/ratelua")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build the ratelua command:", err)
		os.Exit(1)
	}
	code := h.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// cli runs the command with args.
func cli(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("run ratelua %v: %v", args, err)
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func (r result) wantCode(t *testing.T, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	if code != exitOK && code != exitFailure && !strings.HasPrefix(r.stderr, "ratelua: ") {
		t.Fatalf("stderr %q, want a line starting with \"ratelua: \"", r.stderr)
	}
}

// forEachServer runs f as a subtest on a fresh redis-server and a fresh
// valkey-server (skipped when missing, except under CI=true).
func forEachServer(t *testing.T, f func(t *testing.T, srv *testbench.Node, client rueidis.Client)) {
	for _, kind := range harness.Families() {
		t.Run(string(kind), func(t *testing.T) {
			srv := testbench.StartSingle(t, testbench.Options{Kind: kind})
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			h.Record(t, "cli", "", harness.Single(srv))
			f(t, srv, client)
		})
	}
}

// do runs one command on the test client.
func do(t *testing.T, client rueidis.Client, args ...string) rueidis.RedisResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return client.Do(ctx, client.B().Arbitrary(args...).Build())
}
