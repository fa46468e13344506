package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/testbench"
)

var update = flag.Bool("update", false, "rewrite the demo's golden files in testdata")

// demoGolden is the golden file of a demo run.
func demoGolden(script string, countDenied bool) string {
	name := "demo_" + script
	if countDenied {
		name += "_count_denied"
	}
	return filepath.Join("testdata", name+".golden")
}

// demoArgs are the demo's arguments for a script.
func demoArgs(script string, countDenied bool, extra ...string) []string {
	args := append([]string{"demo", "--script", script}, extra...)
	if countDenied {
		args = append(args, "--count-denied")
	}
	return args
}

// TestDemoGolden: the demo on the embedded engine is deterministic and
// reads as in testdata (go test -update rewrites it).
func TestDemoGolden(t *testing.T) {
	for script := range demos {
		for _, countDenied := range []bool{false, true} {
			r := cli(t, demoArgs(script, countDenied)...)
			r.wantCode(t, exitOK)
			golden := demoGolden(script, countDenied)
			if *update {
				if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if r.stdout != string(want) {
				t.Errorf("demo %s (count denied %v) differs from %s:\n%s", script, countDenied, golden, r.stdout)
			}
			if again := cli(t, demoArgs(script, countDenied)...); again.stdout != r.stdout {
				t.Errorf("demo %s is not deterministic", script)
			}
		}
	}
	// With no flags the demo is sliding_window's.
	r := cli(t, "demo")
	r.wantCode(t, exitOK)
	if want, _ := os.ReadFile(demoGolden("sliding_window", false)); r.stdout != string(want) {
		t.Errorf("demo without flags is not the sliding_window demo")
	}
}

// TestDemoShowsBothLimits: the default timeline has admitted attempts,
// denials by each limit with their waits, and the hour-later recovery.
func TestDemoShowsBothLimits(t *testing.T) {
	r := cli(t, "demo")
	for _, want := range []string{
		"t=+0s        attempt 1   ADMITTED  remaining 0\n",
		"t=+2s        attempt 2   denied    retry in 3s (limit 1: 1 per 5s)\n",
		"t=+26s       attempt 14  denied    retry in 59m34s (limit 2: 5 per 1h)\n",
		"t=+1h        attempt 31  ADMITTED  remaining 0\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("demo lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestDemoOnServer: against a real server (the caller's clock set to the
// simulated time) the timeline is the engine's, line for line, but for the
// line that says where it runs; a second run starts fresh.
func TestDemoOnServer(t *testing.T) {
	forEachServer(t, func(t *testing.T, srv *testbench.Node, client rueidis.Client) {
		for script := range demos {
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

func withoutRunsOn(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "  runs on ") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
