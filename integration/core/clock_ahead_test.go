package core

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// TestClockFarAheadOnServers (issue 30, M5): one call with a caller clock
// at year 9999 (accepted: below 2^52 ms), in mode 1, then calls on the
// server's clock: the first is decided as on a fresh key (allowed), the
// second is denied by that event only (retry within the window), and no
// PTTL after any call exceeds the widest window (1 h). Before, the later
// callers were denied for about 8,000 years, with a TTL to match. Then a
// caller far behind (5 ms since 1970) does not wipe a state of the
// server's clock. Released v6 and the newest version (the Go API's
// default) each.
func TestClockFarAheadOnServers(t *testing.T) {
	// Per case: the script, limits whose widest window (or horizon) is an
	// hour with max 1, and the bound of every PTTL and of the retry of the
	// denied server-clock call (token_bucket's bucket goes down to
	// -capacity in mode 1: two hours).
	cases := map[string]struct {
		name       string
		lim        []string
		ttl, retry int64
	}{
		"sliding_window": {ratelua.SlidingWindow, []string{"1", "1000", "100", "1", "3600000", "60000"}, 3_600_000, 3_600_000},
		"zset_log":       {ratelua.ZSetLog, []string{"1", "1000", "1", "3600000"}, 3_600_000, 3_600_000},
		"token_bucket/1": {ratelua.TokenBucket, []string{"1", "1", "3600000"}, 7_200_000, 7_200_000},
		"token_bucket/2": {ratelua.TokenBucket, []string{"1", "1", "3600000", "2", "1", "1000"}, 7_200_000, 7_200_000},
		"ar1/1":          {ratelua.AR1, []string{"1", "1000000", "1800000"}, 3_600_000, 3_600_000},
		"ar1/2":          {ratelua.AR1, []string{"1", "1000000", "1800000", "5", "2000", "1000"}, 3_600_000, 3_600_000},
	}
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		for name, sc := range cases {
			for _, version := range []string{"v6", "newest"} {
				src, lim := scriptV6(t, sc.name), sc.lim
				if version == "newest" {
					src = scriptNewest(t, sc.name)
				}
				clockFarAheadOnServer(t, ctx, client, name+"@"+version, src, lim, sc.ttl, sc.retry)
			}
		}
	})
}

// clockFarAheadOnServer is TestClockFarAheadOnServers for one script
// source src (named name) with limits lim: maxTTL bounds every PTTL and
// maxRetry the retry of the denied server-clock call.
func clockFarAheadOnServer(t *testing.T, ctx context.Context, client rueidis.Client, name, src string, lim []string, maxTTL, maxRetry int64) {
	t.Helper()
	key := "ahead:{" + name + "}"
	client.Do(ctx, client.B().Del().Key(key).Build())
	call := func(count, now, mode string) []int64 {
		t.Helper()
		got, err := eval(ctx, client, src, key, append([]string{count, "ms", now, mode}, lim...)...).AsIntSlice()
		if err != nil {
			t.Fatalf("%s at %q: %v", name, now, err)
		}
		ttl, err := client.Do(ctx, client.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil || ttl > maxTTL {
			t.Errorf("%s after a call at %q: PTTL %d, %v; want at most %d", name, now, ttl, err, maxTTL)
		}
		return got
	}
	for range 3 {
		call("1", "253402300799000", "1")
	}
	if got := call("1", "", "1"); got[0] != 1 {
		t.Errorf("%s: a server-clock call after the year-9999 ones: %v, want allowed", name, got)
	}
	if got := call("1", "", "1"); got[0] != 0 || got[2] < 0 || got[2] > maxRetry {
		t.Errorf("%s: the second server-clock call: %v, want denied by its own first event within the window", name, got)
	}
	if got := call("1", "5", "0"); got[0] != 0 {
		t.Errorf("%s: a caller far behind: %v, want denied at the last write's time", name, got)
	}
	if n, _ := client.Do(ctx, client.B().Exists().Key(key).Build()).AsInt64(); n != 1 {
		t.Errorf("%s: the caller far behind deleted the state", name)
	}
}
