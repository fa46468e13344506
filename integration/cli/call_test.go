package cli

import (
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/testbench"
)

func TestCall(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *testbench.Node, client rueidis.Client) {
		key := "login:{203.0.113.7}"
		call := func(now string, extra ...string) result {
			args := append([]string{"call", "sliding_window@5", "--addr", srv.Addr, key, "1", now, "0"}, login.WindowArgs()...)
			return cli(t, append(args, extra...)...)
		}
		// The README's worked example, in ms: allowed, denied by limit 1
		// with a 3 s wait, allowed again after the 5 s window.
		r := call("1000000")
		r.wantCode(t, exitOK)
		if want := "allowed 1\nremaining 0\nretry_after 0\nreset_after 3200000\nlimit_index 1\n"; r.stdout != want {
			t.Errorf("first call:\n%s\nwant:\n%s", r.stdout, want)
		}
		r = call("1002000")
		r.wantCode(t, exitFailure)
		if want := "allowed 0\nremaining 0\nretry_after 3000\nreset_after 3198000\nlimit_index 1\n"; r.stdout != want {
			t.Errorf("denied call:\n%s\nwant:\n%s", r.stdout, want)
		}
		// Flags after the arguments; a unit of seconds; the server's clock.
		r = cli(t, "call", "zset_log@v5", "clock:{x}", "1", "-", "0", "2", "60", "--addr", srv.Addr, "--unit", "s")
		r.wantCode(t, exitOK)
		if !strings.HasPrefix(r.stdout, "allowed 1\nremaining 1\nretry_after 0\nreset_after 60\n") {
			t.Errorf("server clock call:\n%s", r.stdout)
		}
		r = cli(t, "call", "zset_log@v5", "clock:{x}", "1", "", "0", "2", "60", "--addr", srv.Addr, "--unit", "s")
		r.wantCode(t, exitOK)
		if !strings.HasPrefix(r.stdout, "allowed 1\nremaining 0\n") {
			t.Errorf("server clock call with \"\":\n%s", r.stdout)
		}
		// A negative eventCount is an argument, not a flag: a reset.
		r = cli(t, "call", "zset_log@v5", "--addr", srv.Addr, "--unit", "s", "clock:{x}", "-1", "", "0", "2", "60")
		r.wantCode(t, exitOK)
		if r.stdout != "allowed 1\nremaining 2\nretry_after 0\nreset_after 0\nlimit_index 0\n" {
			t.Errorf("reset by call:\n%s", r.stdout)
		}
		// EVAL when the server lost its scripts.
		do(t, client, "SCRIPT", "FLUSH")
		r = call("1005000")
		r.wantCode(t, exitOK)
		if !strings.HasPrefix(r.stdout, "allowed 1\n") {
			t.Errorf("after SCRIPT FLUSH:\n%s", r.stdout)
		}
		// An argument the script rejects is a usage error, on one line.
		r = call("1006000", "--unit", "sec")
		r.wantCode(t, exitUsage)
		if !strings.Contains(r.stderr, "ARGV[2] unit must be 's', 'ms' or 'us', got 'sec'") || r.stdout != "" {
			t.Errorf("bad unit: stdout %q stderr %q", r.stdout, r.stderr)
		}
		// Any other error reply is an operational failure.
		do(t, client, "SET", "str:{y}", "x")
		r = cli(t, "call", "zset_log@5", "--addr", srv.Addr, "str:{y}", "1", "", "0", "2", "60000")
		r.wantCode(t, exitFailure)
		if !strings.Contains(r.stderr, "WRONGTYPE") {
			t.Errorf("wrong type: stderr %q", r.stderr)
		}
	})
}

// TestCallConcurrency: the command line acquires, renews and releases a
// concurrency lease; a lease not held (released) exits 1.
func TestCallConcurrency(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *testbench.Node, client rueidis.Client) {
		key := "logins:{account:42}"
		call := func(count, now, mode string, extra ...string) result {
			return cli(t, append([]string{"call", "concurrency@v5", "--addr", srv.Addr, "--unit", "s", key, count, now, mode, "2", "30"}, extra...)...)
		}
		do(t, client, "DEL", key)
		r := call("1", "1000", "0")
		r.wantCode(t, exitOK)
		if want := "allowed 1\nremaining 1\nretry_after 0\nreset_after 30\nlimit_index 1\n"; r.stdout != want {
			t.Errorf("acquire:\n%s\nwant:\n%s", r.stdout, want)
		}
		call("1", "1010", "0").wantCode(t, exitOK)
		r = call("1", "1015", "0")
		r.wantCode(t, exitFailure)
		if want := "allowed 0\nremaining 0\nretry_after 15\nreset_after 25\nlimit_index 1\n"; r.stdout != want {
			t.Errorf("denied:\n%s\nwant:\n%s", r.stdout, want)
		}
		call("1", "1020", "renew", "1").wantCode(t, exitOK)
		r = call("1", "1025", "release", "2")
		r.wantCode(t, exitOK)
		if want := "allowed 1\nremaining 1\nretry_after 0\nreset_after 25\nlimit_index 2\n"; r.stdout != want {
			t.Errorf("release:\n%s\nwant:\n%s", r.stdout, want)
		}
		r = call("1", "1025", "release", "2")
		r.wantCode(t, exitFailure)
		if want := "allowed 0\nremaining 1\nretry_after -1\nreset_after 25\nlimit_index 0\n"; r.stdout != want {
			t.Errorf("release again:\n%s\nwant:\n%s", r.stdout, want)
		}
		r = call("1", "1025", "renew")
		r.wantCode(t, exitUsage)
		if !strings.Contains(r.stderr, "expected 3 arguments after ARGV[4] in mode 'renew'") {
			t.Errorf("renew without an id: %q", r.stderr)
		}
	})
}
