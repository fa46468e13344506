package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The login case's rules, written out here and not read from the program:
// at most 1 attempt per 5 s AND 5 per hour from one address; a client that
// tries every 2 s for a minute, then every 2 s for 10 s from an hour after
// its first attempt.
//
// A limit counts events in buckets of its resolution (0: each event is
// its own bucket, an exact log); a bucket counts while its start is less
// than the duration old. An attempt is admitted when every limit counts
// fewer events than its max. Mode 0 records admitted attempts only; mode 1
// records every attempt. A denial's wait is the longest, over the limits,
// of the time until the limit counts fewer than its max (events leave only
// as their buckets age; in mode 1 the denied attempt is among them), and it
// names that limit (the first, on a tie).
type ruleLimit struct {
	max                  int
	duration, resolution time.Duration
}

// ruleDecision is one line of the timeline.
type ruleDecision struct {
	at        time.Duration
	attempt   int
	admitted  bool
	remaining int           // when admitted
	wait      time.Duration // when denied
	limit     int           // when denied, from 1
}

func (d ruleDecision) String() string {
	if d.admitted {
		return fmt.Sprintf("+%v attempt %d admitted, remaining %d", d.at, d.attempt, d.remaining)
	}
	return fmt.Sprintf("+%v attempt %d denied, retry in %v (limit %d)", d.at, d.attempt, d.wait, d.limit)
}

// loginRules computes the timeline of the login case under limits.
func loginRules(limits []ruleLimit, countDenied bool) []ruleDecision {
	var schedule []time.Duration
	for at := time.Duration(0); at < time.Minute; at += 2 * time.Second {
		schedule = append(schedule, at)
	}
	for at := time.Hour; at <= time.Hour+10*time.Second; at += 2 * time.Second {
		schedule = append(schedule, at)
	}
	bucket := func(l ruleLimit, e time.Duration) time.Duration {
		if l.resolution == 0 {
			return e
		}
		return e - e%l.resolution
	}
	// counted returns the bucket starts of the events limit l counts at
	// at, oldest first.
	counted := func(l ruleLimit, events []time.Duration, at time.Duration) []time.Duration {
		var starts []time.Duration
		for _, e := range events {
			if b := bucket(l, e); b > at-l.duration {
				starts = append(starts, b)
			}
		}
		slices.Sort(starts)
		return starts
	}
	var events []time.Duration
	var out []ruleDecision
	for i, at := range schedule {
		d := ruleDecision{at: at, attempt: i + 1, admitted: true}
		for _, l := range limits {
			if len(counted(l, events, at)) >= l.max {
				d.admitted = false
			}
		}
		if d.admitted || countDenied {
			events = append(events, at)
		}
		if d.admitted {
			d.remaining = limits[0].max
			for _, l := range limits {
				d.remaining = min(d.remaining, l.max-len(counted(l, events, at)))
			}
		} else {
			for j, l := range limits {
				starts := counted(l, events, at)
				if len(starts) < l.max {
					continue
				}
				// The bucket whose leaving brings the count below max.
				wait := starts[len(starts)-l.max] + l.duration - at
				if wait > d.wait {
					d.wait, d.limit = wait, j+1
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// timelineLine is a decision line of the demo's output.
var timelineLine = regexp.MustCompile(`^t=\+(\S+)\s+attempt (\d+)\s+(?:ADMITTED  remaining (\d+)|denied    retry in (\S+) \(limit (\d+): [^)]*\))$`)

// parseTimeline reads the decisions and the closing count of a demo's
// output.
func parseTimeline(t *testing.T, out string) (decisions []ruleDecision, summary string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(line, "admitted "); ok {
			summary = s
			continue
		}
		m := timelineLine.FindStringSubmatch(line)
		if !strings.HasPrefix(line, "t=+") {
			continue
		}
		if m == nil {
			t.Fatalf("a timeline line that does not parse: %q", line)
		}
		at, err1 := time.ParseDuration(m[1])
		attempt, err2 := strconv.Atoi(m[2])
		if err1 != nil || err2 != nil {
			t.Fatalf("%q: %v %v", line, err1, err2)
		}
		d := ruleDecision{at: at, attempt: attempt, admitted: m[3] != ""}
		if d.admitted {
			d.remaining, _ = strconv.Atoi(m[3])
		} else {
			var err error
			if d.wait, err = time.ParseDuration(m[4]); err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			d.limit, _ = strconv.Atoi(m[5])
		}
		decisions = append(decisions, d)
	}
	return decisions, summary
}

// TestDemoFollowsTheLoginRules: the demo's timeline (and its golden file,
// which -update would write from the program) is what the login case's
// rules above give, attempt by attempt: sliding_window with the demo's
// resolutions (1 s and 10 min) and zset_log, an exact log, in both modes.
// token_bucket and ar1 follow other rules (a refill, a decay) and are
// checked by the golden files and the model tests.
func TestDemoFollowsTheLoginRules(t *testing.T) {
	rules := map[string][]ruleLimit{
		"sliding_window": {{1, 5 * time.Second, time.Second}, {5, time.Hour, 10 * time.Minute}},
		"zset_log":       {{1, 5 * time.Second, 0}, {5, time.Hour, 0}},
	}
	for script, limits := range rules {
		for _, countDenied := range []bool{false, true} {
			want := loginRules(limits, countDenied)
			admitted := 0
			for _, d := range want {
				if d.admitted {
					admitted++
				}
			}
			wantSummary := fmt.Sprintf("%d of %d attempts", admitted, len(want))
			golden, err := os.ReadFile(demoGolden(script, countDenied))
			if err != nil {
				t.Fatal(err)
			}
			r := cli(t, demoArgs(script, countDenied)...)
			r.wantCode(t, exitOK)
			for source, out := range map[string]string{"the demo": r.stdout, demoGolden(script, countDenied): string(golden)} {
				got, summary := parseTimeline(t, out)
				if len(got) != len(want) {
					t.Errorf("%s (%s, count denied %v): %d decisions, the rules give %d", source, script, countDenied, len(got), len(want))
					continue
				}
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("%s (%s, count denied %v): %v; the rules give %v", source, script, countDenied, got[i], want[i])
					}
				}
				if summary != wantSummary {
					t.Errorf("%s (%s, count denied %v): admitted %s; the rules give %s", source, script, countDenied, summary, wantSummary)
				}
			}
		}
	}
}
