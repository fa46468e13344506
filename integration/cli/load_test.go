package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

func TestLoad(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *testbench.Node, client rueidis.Client) {
		scripts := ratelua.Scripts()
		want := srv.Addr + "  " + plural(int64(len(scripts)), "script", "scripts") + " loaded\n"
		for range 2 { // idempotent
			r := cli(t, "load", "--addr", srv.Addr)
			r.wantCode(t, exitOK)
			if r.stdout != want {
				t.Errorf("load:\n%q\nwant:\n%q", r.stdout, want)
			}
		}
		for _, s := range scripts {
			exists, err := do(t, client, "SCRIPT", "EXISTS", s.SHA1).AsIntSlice()
			if err != nil || len(exists) != 1 || exists[0] != 1 {
				t.Errorf("%s not loaded: %v %v", s, exists, err)
			}
		}
	})
}

func TestLoadFunctions(t *testing.T) {
	lib, _ := ratelua.ReleaseLibrary(0)
	if lib.Source == "" {
		t.Skip("no Functions library in this build")
	}
	forEachServer(t, func(t *testing.T, srv *testbench.Node, client rueidis.Client) {
		var scripts []ratelua.Script
		for _, s := range ratelua.Scripts() {
			if s.Version == lib.Version {
				scripts = append(scripts, s)
			}
		}
		want := srv.Addr + "  library " + lib.Name + " loaded (" + plural(int64(len(scripts)), "function", "functions") + ")\n"
		for range 2 { // FUNCTION LOAD REPLACE: idempotent
			r := cli(t, "load", "--addr", srv.Addr, "--functions")
			r.wantCode(t, exitOK)
			if r.stdout != want {
				t.Errorf("load --functions:\n%q\nwant:\n%q", r.stdout, want)
			}
		}
		list, err := do(t, client, "FUNCTION", "LIST", "LIBRARYNAME", lib.Name).ToArray()
		if err != nil || len(list) != 1 {
			t.Fatalf("FUNCTION LIST: %v %v", list, err)
		}
		// Every script is callable by FCALL with the same contract.
		for _, s := range scripts {
			fn := s.Function()
			limits := map[string][]string{
				"sliding_window": {"1", "5000", "1000"}, "zset_log": {"1", "5000"},
				"token_bucket": {"1", "1", "5000"}, "ar1": {"1", "2000", "5000"}, "concurrency": {"1", "5000"},
				"fixed_window": {"1", "5000", "60"},
			}[s.Name]
			args := append([]string{"FCALL", fn, "1", "f:{" + s.Name + "}", "1", "ms", "", "0"}, limits...)
			reply, err := do(t, client, args...).AsIntSlice()
			if err != nil || len(reply) != 5 || reply[0] != 1 {
				t.Errorf("FCALL %s: %v %v", fn, reply, err)
			}
		}
	})
}

// TestLoadReportsFailures: a node that refuses a load prints its line, and
// the error is one line on stderr.
func TestLoadReportsFailures(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *testbench.Node, client rueidis.Client) {
		do(t, client, "ACL", "SETUSER", "default", "-script")
		t.Cleanup(func() { do(t, client, "ACL", "SETUSER", "default", "+@all") })
		r := cli(t, "load", "--addr", srv.Addr)
		r.wantCode(t, exitFailure)
		if !strings.HasPrefix(r.stdout, srv.Addr+"  scripts not loaded (failed)\n") || !strings.Contains(r.stderr, "NOPERM") {
			t.Errorf("stdout %q stderr %q", r.stdout, r.stderr)
		}
	})
}

// plural is "1 <one>" or "<n> <many>", as the command words counts.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
