package cli

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/testbench"
)

func TestResetKey(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *testbench.Node, client rueidis.Client) {
		key := "login:{203.0.113.7}"
		limits := login.WindowArgs()
		call := func() result {
			return cli(t, append([]string{"call", "sliding_window@5", "--addr", srv.Addr, key, "1", "-", "0"}, limits...)...)
		}
		call().wantCode(t, exitOK)
		call().wantCode(t, exitFailure)
		r := cli(t, append([]string{"reset", "sliding_window@5", key, "--addr", srv.Addr}, limits...)...)
		r.wantCode(t, exitOK)
		if r.stdout != "reset "+key+"\n" {
			t.Errorf("reset: %q", r.stdout)
		}
		if n, err := do(t, client, "EXISTS", key).AsInt64(); err != nil || n != 0 {
			t.Errorf("EXISTS after reset: %d %v", n, err)
		}
		call().wantCode(t, exitOK)
		// The script checks the limits: bad ones are a usage error and
		// leave the state.
		r = cli(t, "reset", "sliding_window@5", key, "--addr", srv.Addr, "1", "5000", "10000")
		r.wantCode(t, exitUsage)
		if !strings.Contains(r.stderr, "resolution must be at most duration") {
			t.Errorf("bad limits: %q", r.stderr)
		}
		if n, _ := do(t, client, "EXISTS", key).AsInt64(); n != 1 {
			t.Error("a rejected reset deleted the state")
		}
	})
}

func TestResetPrefix(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *testbench.Node, client rueidis.Client) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var cmds rueidis.Commands
		for i := range 1200 {
			cmds = append(cmds, client.B().Set().Key(fmt.Sprintf("bulk:{k%d}:sliding_window:v1:abcd0123", i)).Value("x").Build())
		}
		// Not the state of a limiter whose prefix is bulk: an application's
		// keys, a sibling prefix's limiter, keys that only look alike.
		others := []string{"bulkier:{a}", "other:{b}", "bulk", "bulk:session:42", "bulk:{x}",
			"bulk:admin:{k1}:token_bucket:v2:abcd0123", "bulk:{k1}:token_bucket:v2:abcd012", "bulk:{k1}:Token:v2:abcd0123"}
		for _, k := range others {
			cmds = append(cmds, client.B().Set().Key(k).Value("x").Build())
		}
		for _, resp := range client.DoMulti(ctx, cmds...) {
			if err := resp.Error(); err != nil {
				t.Fatal(err)
			}
		}
		// A dry run counts and deletes nothing.
		r := cli(t, "reset", "--addr", srv.Addr, "--prefix", "bulk", "--dry-run")
		r.wantCode(t, exitOK)
		if r.stdout != "would delete 1200 keys\n" {
			t.Errorf("reset --prefix --dry-run: %q", r.stdout)
		}
		if n, _ := do(t, client, "DBSIZE").AsInt64(); n != int64(1200+len(others)) {
			t.Errorf("DBSIZE %d after a dry run, want %d", n, 1200+len(others))
		}
		// Not a terminal: no progress, the count on stdout.
		r = cli(t, "reset", "--addr", srv.Addr, "--prefix", "bulk")
		r.wantCode(t, exitOK)
		if r.stdout != "deleted 1200 keys\n" {
			t.Errorf("reset --prefix: %q", r.stdout)
		}
		for _, k := range others {
			if n, _ := do(t, client, "EXISTS", k).AsInt64(); n != 1 {
				t.Errorf("reset --prefix bulk deleted %q", k)
			}
		}
		r = cli(t, "reset", "--addr", srv.Addr, "--prefix", "bulk")
		r.wantCode(t, exitOK)
		if r.stdout != "deleted 0 keys\n" {
			t.Errorf("second reset --prefix: %q", r.stdout)
		}
	})
}

// TestResetDryRunDeletesNothing (row 4): --dry-run deletes nothing,
// whatever the other arguments: with a script and a key it is a usage
// error (exit 2), before or after the arguments, and the key's state
// stays.
func TestResetDryRunDeletesNothing(t *testing.T) {
	forEachServer(t, func(t *testing.T, node *testbench.Node, client rueidis.Client) {
		key := "login:{203.0.113.7}"
		limits := login.WindowArgs()
		cli(t, append([]string{"call", "sliding_window@5", "--addr", node.Addr, key, "1", "-", "0"}, limits...)...).wantCode(t, exitOK)
		exists := func() bool {
			n, err := do(t, client, "EXISTS", key).AsInt64()
			if err != nil {
				t.Fatal(err)
			}
			return n == 1
		}
		if !exists() {
			t.Fatal("the call wrote no state")
		}
		for _, args := range [][]string{
			append([]string{"reset", "--dry-run", "sliding_window@5", key, "--addr", node.Addr}, limits...),
			append(append([]string{"reset", "sliding_window@5", key, "--addr", node.Addr}, limits...), "--dry-run"),
			append([]string{"reset", "--dry-run=true", "sliding_window@5", key, "--addr", node.Addr}, limits...),
		} {
			r := cli(t, args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "--dry-run") || r.stdout != "" {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, a usage error naming --dry-run", args[1:3], r.code, r.stdout, r.stderr)
			}
			if !exists() {
				t.Fatalf("%v deleted the key", args[1:3])
			}
		}
	})
}

// TestResetLongPrefixIsUsage (row 13): a --prefix no limiter can have
// (over 128 bytes) is a usage error, exit 2, that says why, before any
// server is asked.
func TestResetLongPrefixIsUsage(t *testing.T) {
	forEachServer(t, func(t *testing.T, node *testbench.Node, _ rueidis.Client) {
		for _, dry := range []bool{false, true} {
			args := []string{"reset", "--addr", node.Addr, "--prefix", strings.Repeat("p", 200)}
			if dry {
				args = append(args, "--dry-run")
			}
			r := cli(t, args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, "at most") || strings.Contains(r.stderr, "deleted") {
				t.Errorf("dry-run %v: exit %d, stderr %q; want exit 2 naming the bound", dry, r.code, r.stderr)
			}
		}
	})
}
