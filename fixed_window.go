package ratelua

import (
	"time"

	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/model"
)

// Fixed allows at most Max events in a fixed window of Window: one integer
// counter per window, to which every call that counts adds its events
// (INCRBY), as envoyproxy/ratelimit counts.
type Fixed struct {
	// Max is the events allowed in the window, 0 to 2^52 (0 denies every
	// event).
	Max int64
	// Window is the window's length: the window of a time t starts at
	// floor(t / Window) * Window (t from 1970).
	Window time.Duration
	// Expire is the counter's TTL, set by every call that counts (EXPIRE),
	// in whole seconds from 1 s; 0 means Window rounded up to a second.
	// envoyproxy/ratelimit sets the unit's seconds plus a jitter of up to
	// EXPIRATION_JITTER_MAX_SECONDS.
	Expire time.Duration
}

// NewFixedWindow returns a limiter that counts events in a fixed window
// (script fixed_window, from v7): one integer counter per window, INCRBY
// by the events and EXPIRE by Expire, deciding over the limit when the
// count after the events is above Max. With Options.CountDenied it counts
// every event, allowed or not (envoyproxy/ratelimit's counting); without,
// a denied call counts nothing.
//
// The counter is of one window, so its state key must name the window:
// with Options.ExactKeys the event key is the state key as given (a
// caller sharing envoyproxy/ratelimit's counters passes its key,
// <prefix><domain>_<key>_<value>_..._<window start>); otherwise the Go
// API's key names no window, and the counter lives until Expire after
// the last call that counted, whatever the window.
func NewFixedWindow(client Client, opts Options, f Fixed) (*Limiter, error) {
	return newLimiter(client, opts, spec{
		script:    FixedWindow,
		durations: []time.Duration{f.Window},
		quotas:    []quota{{f.Max, f.Window}},
		model: func(share float64, u unit) func() model.Model {
			max := fallback.ScaleMax(f.Max, share)
			window, expire := u.Count(f.Window), expireSeconds(f)
			return func() model.Model { return &model.FixedWindow{Max: max, Window: window, Expire: expire} }
		},
		args: func(u unit) ([]string, error) {
			return limitArgs([]Fixed{f}, func(c *check, f Fixed) []string {
				args := []string{
					c.count("Max", f.Max, 0, maxScriptInt),
					c.duration("Window", f.Window, u),
					c.count("Expire", expireSeconds(f), 1, maxScriptInt),
				}
				if c.err == nil && f.Expire != 0 && f.Expire%time.Second != 0 {
					c.fail("Expire", "must be whole seconds (EXPIRE), got %v", f.Expire)
				}
				return args
			})
		},
	})
}

// expireSeconds is f's Expire in seconds: Window rounded up when 0.
func expireSeconds(f Fixed) int64 {
	d := f.Expire
	if d == 0 {
		d = f.Window
	}
	if d < 0 {
		return -1
	}
	return int64((d + time.Second - 1) / time.Second)
}
