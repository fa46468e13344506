package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

// The scaling sweeps measure one ratelua script as one parameter grows, in
// the steady state: the state of every driven key is full before the
// measurement starts. They use the same method as the main table (floor
// just before and after, ratio to their mean, best of the rounds) with a
// load made for each sweep (see sweepMethod, quoted in BENCHMARKS.md).
const (
	sweepBuckets = "buckets"
	sweepLimits  = "limits"
	sweepZSetMax = "zset max"

	// sweepKeys hot keys for the sliding_window sweeps: with 16 callers
	// each sees about a thousand events a second, so every window holds
	// thousands of events spread over its buckets.
	sweepKeys = 32
	// sweepWindow is the window of the buckets sweep; each sweep warms up
	// for its longest window plus a margin, so the state is full.
	sweepWindow = 2 * time.Second
	sweepMargin = 500 * time.Millisecond
	// sweepMax never denies: every call records an event, so every window
	// stays full of events (a denied call would record nothing).
	sweepMax = 1_000_000

	// zsetHotKeys keys, each pre-filled with max events (window 1 h), then
	// driven: every measured call decides against a full log of max events.
	zsetHotKeys = 4
	zsetWindow  = time.Hour
	zsetChunk   = 1000
)

// sweepMethod says how the sweeps are loaded, for the report.
var sweepMethod = fmt.Sprintf(`**Buckets** (sliding_window, 1 limit): max %d (so no call is denied and every call records an event), window %v, resolution = window / buckets; %d hot keys, %d callers as in the main table; warm-up %v (the window plus %v) before every measurement, so each key holds a full window of events spread over its buckets (about a thousand events a second per key).
**Limits** (sliding_window, 60 buckets each): limit i (0-based) has resolution (33 - i) ms and duration 60 resolutions (1.98 s down to 1.08 s), all distinct, max %d; same keys and warm-up.
**zset_log max**: window 1 hour; %d hot keys, each pre-filled once with max events (AllowN in chunks of %d) before the first round, then driven uniformly by the callers: every measured call is a denied decision against a log of max events, the steady state of a key at its limit. (Uniform load over 10,000 keys would leave a few events per key and say nothing about max.)`,
	sweepMax, sweepWindow, sweepKeys, 16, sweepWindow+sweepMargin, sweepMargin, sweepMax, zsetHotKeys, zsetChunk)

func sweepContender(name, sweep string, x float64, warm time.Duration, keys []string, build func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error)) contender {
	c := rl(name, "", build)
	c.group, c.sweep, c.x, c.warm, c.keys = groupSweep, sweep, x, warm, keys
	return c
}

// sweepContenders: sliding_window over buckets 10..10,000 and limits
// 1..16, zset_log over max 10..100,000.
func sweepContenders() []contender {
	var cs []contender
	keys := hotKeys(sweepKeys)
	warm := sweepWindow + sweepMargin
	for _, n := range []int{10, 100, 1000, 10000} {
		w := ratelua.Window{Max: sweepMax, Duration: sweepWindow, Resolution: sweepWindow / time.Duration(n)}
		cs = append(cs, sweepContender(fmt.Sprintf("sliding_window, 1 limit, %d buckets", n), sweepBuckets, float64(n), warm, keys,
			func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewSlidingWindow(ratelua.Rueidis(c), o, w)
			}))
	}
	for _, n := range []int{1, 2, 4, 8, 16} {
		ws := make([]ratelua.Window, n)
		for i := range ws {
			res := time.Duration(33-i) * time.Millisecond
			ws[i] = ratelua.Window{Max: sweepMax, Duration: 60 * res, Resolution: res}
		}
		cs = append(cs, sweepContender(fmt.Sprintf("sliding_window, %d limit%s, 60 buckets each", n, plural(n)), sweepLimits, float64(n), warm, keys,
			func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewSlidingWindow(ratelua.Rueidis(c), o, ws...)
			}))
	}
	zkeys := hotKeys(zsetHotKeys)
	for i := range zkeys {
		zkeys[i] = "z" + zkeys[i]
	}
	for _, m := range []int64{10, 1000, 100000} {
		c := sweepContender("zset_log, max "+strconv.FormatInt(m, 10)+", full log", sweepZSetMax, float64(m), 0, zkeys,
			func(c rueidis.Client, o ratelua.Options) (*ratelua.Limiter, error) {
				return ratelua.NewZSetLog(ratelua.Rueidis(c), o, ratelua.Log{Max: m, Window: zsetWindow})
			})
		c.prepare = func(ctx context.Context, r runner) error { return prefill(ctx, r, zkeys, m) }
		cs = append(cs, c)
	}
	return cs
}

// prefill records max events on each key with AllowN, in chunks.
func prefill(ctx context.Context, r runner, keys []string, max int64) error {
	l, ok := r.(rateluaRunner)
	if !ok {
		return fmt.Errorf("prefill: not a ratelua limiter")
	}
	for _, k := range keys {
		for done := int64(0); done < max; {
			n := min(zsetChunk, max-done)
			res, err := l.l.AllowN(ctx, k, n)
			if err != nil {
				return fmt.Errorf("prefill %s: %w", k, err)
			}
			if !res.Allowed {
				return fmt.Errorf("prefill %s: denied after %d events", k, done)
			}
			done += n
		}
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
