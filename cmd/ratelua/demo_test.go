package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
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

// callSHA1 is the script's SHA1 in the demo's call line. The golden files
// hold "<sha1>" there, so that new script text (a version in development)
// changes no golden file; the timeline is what they check.
var callSHA1 = regexp.MustCompile(`EVALSHA [0-9a-f]{40} `)

// withoutSHA1 puts "<sha1>" for the SHA1 in the demo's call line.
func withoutSHA1(out string) string { return callSHA1.ReplaceAllString(out, "EVALSHA <sha1> ") }

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
				if err := os.WriteFile(golden, []byte(withoutSHA1(r.stdout)), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if !callSHA1.MatchString(r.stdout) || withoutSHA1(r.stdout) != string(want) {
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
	if want, _ := os.ReadFile(demoGolden("sliding_window", false)); withoutSHA1(r.stdout) != string(want) {
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

func withoutRunsOn(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "  runs on ") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}
