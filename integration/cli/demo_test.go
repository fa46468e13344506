package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/testbench"
)

// demos are the scripts the demo shows.
var demos = []string{"sliding_window", "token_bucket", "zset_log", "ar1"}

// demoGolden is the golden file of a demo run on the embedded engine, kept
// beside the command (cmd/ratelua/testdata).
func demoGolden(script string, countDenied bool) string {
	name := "demo_" + script
	if countDenied {
		name += "_count_denied"
	}
	return filepath.Join("..", "..", "cmd", "ratelua", "testdata", name+".golden")
}

// demoArgs are the demo's arguments for a script.
func demoArgs(script string, countDenied bool, extra ...string) []string {
	args := append([]string{"demo", "--script", script}, extra...)
	if countDenied {
		args = append(args, "--count-denied")
	}
	return args
}

// callSHA1 is the script's SHA1 in the demo's call line, which the golden
// files hold as "<sha1>" (cmd/ratelua's demo test says why).
var callSHA1 = regexp.MustCompile(`EVALSHA [0-9a-f]{40} `)

// withoutRunsOn drops the line that says where the demo runs and puts
// "<sha1>" for the SHA1 in the call line.
func withoutRunsOn(out string) string {
	out = callSHA1.ReplaceAllString(out, "EVALSHA <sha1> ")
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "  runs on ") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// TestDemoOnServer: against a real server (the caller's clock set to the
// simulated time) the timeline is the engine's, line for line, but for the
// line that says where it runs; a second run starts fresh.
func TestDemoOnServer(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *testbench.Node, client rueidis.Client) {
		for _, script := range demos {
			for _, countDenied := range []bool{false, true} {
				want, err := os.ReadFile(demoGolden(script, countDenied))
				if err != nil {
					t.Fatal(err)
				}
				for range 2 {
					r := cli(t, demoArgs(script, countDenied, "--addr", srv.Addr)...)
					r.wantCode(t, exitOK)
					if got, w := withoutRunsOn(r.stdout), withoutRunsOn(string(want)); got != w {
						t.Errorf("demo %s --addr (count denied %v) differs from the engine's:\n%s", script, countDenied, r.stdout)
					}
					if !strings.Contains(r.stdout, "runs on "+srv.Addr+";") {
						t.Errorf("demo --addr does not say where it runs:\n%s", r.stdout)
					}
				}
			}
		}
		keys, err := do(t, client, "KEYS", "*").AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !strings.HasPrefix(k, "demo:") {
				t.Errorf("demo wrote key %q, not under demo:", k)
			}
		}
		if len(keys) == 0 {
			t.Error("demo left no state")
		}
	})
}
