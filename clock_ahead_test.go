package ratelua

import (
	"strconv"
	"testing"
)

// year9999 is 9999-12-31T23:59:59Z in ms: a caller clock the contract
// accepts (below 2^52 ms).
const year9999 = "253402300799000"

// staleCase is a script with the stale rule (issue 30, M5) and limits in ms
// whose widest window (or horizon) is an hour, with max 1: ttl bounds every
// PTTL and retry the retry of a denied server-clock call after one event
// (token_bucket's bucket can go down to -capacity in mode 1: two hours).
type staleCase struct {
	name       string
	limits     []string
	ttl, retry int64
}

// staleCases: every v6 script but concurrency, with one limit and with two
// (the scripts' paths differ).
var staleCases = map[string]staleCase{
	"sliding_window": {SlidingWindow, []string{"1", "1000", "100", "1", "3600000", "60000"}, 3_600_000, 3_600_000},
	"zset_log":       {ZSetLog, []string{"1", "1000", "1", "3600000"}, 3_600_000, 3_600_000},
	"token_bucket/1": {TokenBucket, []string{"1", "1", "3600000"}, 7_200_000, 7_200_000},
	"token_bucket/2": {TokenBucket, []string{"1", "1", "3600000", "2", "1", "1000"}, 7_200_000, 7_200_000},
	"ar1/1":          {AR1, []string{"1", "1000000", "1800000"}, 3_600_000, 3_600_000},
	"ar1/2":          {AR1, []string{"1", "1000000", "1800000", "5", "2000", "1000"}, 3_600_000, 3_600_000},
}

// TestClockFarAheadCannotLockAKey: one call with a caller clock at year
// 9999 (mode 1, denied or not) followed by calls on the server's clock and
// on a right caller clock: those are decided as on a fresh key (allowed),
// and every TTL written is at most the widest window. Before v6's stale
// rule, the later callers were denied for about 8,000 years, with a TTL to
// match.
func TestClockFarAheadCannotLockAKey(t *testing.T) {
	for name, sc := range staleCases {
		t.Run(name, func(t *testing.T) {
			src, limits := source(t, sc.name), sc.limits
			e := frozenEngine()
			server := int64(1_700_000_000_000) // the engine's TIME in ms
			call := func(count, now, mode string) []int64 {
				t.Helper()
				got, _, err := run(t, e, src, append([]string{count, "ms", now, mode}, limits...))
				if err != nil {
					t.Fatal(err)
				}
				if ttl := e.PTTL(testKey); ttl > sc.ttl {
					t.Errorf("after %s at %q: PTTL %d ms, more than %d ms", count, now, ttl, sc.ttl)
				}
				return got
			}
			for range 3 {
				call("1", year9999, "1")
			}
			if got := call("1", "", "1"); got[0] != 1 {
				t.Errorf("a server-clock call after the year-9999 one: %v, want allowed (the stale state counted from now)", got)
			}
			if got := call("1", "", "1"); got[0] != 0 || got[2] < 0 || got[2] > sc.retry {
				t.Errorf("the second server-clock call: %v, want denied by its own first event, within the window", got)
			}
			e.FlushAll()
			call("1", year9999, "0")
			if got := call("1", strconv.FormatInt(server, 10), "0"); got[0] != 1 {
				t.Errorf("a right caller clock after the year-9999 call: %v, want allowed", got)
			}
		})
	}
}

// TestClockFarBehindKeepsTheState: a caller clock far behind a state that
// agrees with the server's TIME does not make it stale: it is decided at
// the last write's time (denied) and the key keeps its events.
func TestClockFarBehindKeepsTheState(t *testing.T) {
	for name, sc := range staleCases {
		t.Run(name, func(t *testing.T) {
			src, limits := source(t, sc.name), sc.limits
			e := frozenEngine()
			if got, _, err := run(t, e, src, append([]string{"1", "ms", "", "0"}, limits...)); err != nil || got[0] != 1 {
				t.Fatalf("the first server-clock call: %v, %v", got, err)
			}
			got, _, err := run(t, e, src, append([]string{"1", "ms", "5", "0"}, limits...))
			if err != nil || got[0] != 0 {
				t.Errorf("a caller at 5 ms since 1970, far behind a state of the server's clock: %v, %v; want denied", got, err)
			}
			if e.Dump(testKey) == nil {
				t.Error("the caller far behind deleted the state")
			}
		})
	}
}
