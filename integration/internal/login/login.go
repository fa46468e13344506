// Package login is the integration suites' one login fixture: seed 002's
// login case, 1 attempt per 5 s AND 5 per hour, as the limits of every
// script and as the limiters built from them.
package login

import (
	"strconv"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
)

// Windows are the login limits of sliding_window: 1 per 5 s (1 s
// buckets) and 5 per hour (10 min buckets).
func Windows() []ratelua.Window {
	return []ratelua.Window{
		{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute},
	}
}

// Decays are the login limits of ar1: 1 halving every 5 s, 5 halving
// every hour.
func Decays() []ratelua.Decay {
	return []ratelua.Decay{
		{Max: 1, Factor: 2, Resolution: 5 * time.Second},
		{Max: 5, Factor: 2, Resolution: time.Hour},
	}
}

// Logs are the login limits of zset_log: 1 in any 5 s, 5 in any hour.
func Logs() []ratelua.Log {
	return []ratelua.Log{{Max: 1, Window: 5 * time.Second}, {Max: 5, Window: time.Hour}}
}

// Buckets are the login limits of token_bucket: 1 refilled every 5 s, 5
// refilled one every 12 minutes.
func Buckets() []ratelua.Bucket {
	return []ratelua.Bucket{
		{Capacity: 1, RefillAmount: 1, RefillInterval: 5 * time.Second},
		{Capacity: 5, RefillAmount: 1, RefillInterval: 12 * time.Minute},
	}
}

// Limiters builds the login case with every script on client, under
// opts, by script name (ratelua.SlidingWindow, ratelua.AR1,
// ratelua.ZSetLog, ratelua.TokenBucket). A limiter that cannot be built
// fails tb.
func Limiters(tb testing.TB, client ratelua.Client, opts ratelua.Options) map[string]*ratelua.Limiter {
	tb.Helper()
	sw, err1 := ratelua.NewSlidingWindow(client, opts, Windows()...)
	ar, err2 := ratelua.NewAR1(client, opts, Decays()...)
	zl, err3 := ratelua.NewZSetLog(client, opts, Logs()...)
	tk, err4 := ratelua.NewTokenBucket(client, opts, Buckets()...)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			tb.Fatalf("the login limiters: %v", err)
		}
	}
	return map[string]*ratelua.Limiter{ratelua.SlidingWindow: sw, ratelua.AR1: ar, ratelua.ZSetLog: zl, ratelua.TokenBucket: tk}
}

// Scripts are the four scripts' names in a fixed order: sliding_window,
// ar1, zset_log, token_bucket.
func Scripts() []string {
	return []string{ratelua.SlidingWindow, ratelua.AR1, ratelua.ZSetLog, ratelua.TokenBucket}
}

// WindowArgs are Windows as sliding_window's ARGV takes them in ms (the
// command line's call and reset too): max, duration and resolution of
// each, "1 5000 1000 5 3600000 600000".
func WindowArgs() []string {
	var out []string
	for _, w := range Windows() {
		out = append(out, strconv.FormatInt(w.Max, 10), strconv.FormatInt(w.Duration.Milliseconds(), 10),
			strconv.FormatInt(w.Resolution.Milliseconds(), 10))
	}
	return out
}

// WireLimits are Windows as the Python and Node packages take them (in
// JSON): max, duration_us and resolution_us of each, as ints.
func WireLimits() []map[string]any {
	var out []map[string]any
	for _, w := range Windows() {
		out = append(out, map[string]any{"max": int(w.Max),
			"duration_us": int(w.Duration.Microseconds()), "resolution_us": int(w.Resolution.Microseconds())})
	}
	return out
}
