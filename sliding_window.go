package ratelua

import (
	"time"

	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/model"
)

// Window allows at most Max events in any Duration, counted in buckets of
// Resolution: an event at time t falls in bucket floor(t/Resolution), and a
// bucket leaves the window as a whole. Finer resolution is more exact and
// costs more memory: at most 10,000 buckets per window.
type Window struct {
	Max        int64
	Duration   time.Duration
	Resolution time.Duration
}

// PerWindow is a Window with one bucket per tenth of the duration:
// PerWindow(5, time.Hour) allows 5 per hour in 6-minute buckets.
func PerWindow(max int64, d time.Duration) Window {
	return Window{Max: max, Duration: d, Resolution: d / 10}
}

// NewSlidingWindow returns a limiter that checks and records events against
// every window at once (script sliding_window): one hash per event key,
// whatever the number of windows.
func NewSlidingWindow(client Client, opts Options, windows ...Window) (*Limiter, error) {
	var durations []time.Duration
	var quotas []quota
	for _, w := range windows {
		durations = append(durations, w.Duration, w.Resolution)
		quotas = append(quotas, quota{w.Max, w.Duration})
	}
	return newLimiter(client, opts, spec{
		script:    SlidingWindow,
		durations: durations,
		quotas:    quotas,
		model: func(share float64, u unit) func() model.Model {
			limits := make([]model.SlidingWindowLimit, len(windows))
			for i, w := range windows {
				limits[i] = model.SlidingWindowLimit{Max: fallback.ScaleMax(w.Max, share), Duration: u.Count(w.Duration), Resolution: u.Count(w.Resolution)}
			}
			// Reserves: the fallback holds reservations as the script does.
			return func() model.Model { return &model.SlidingWindow{Limits: limits, Reserves: true} }
		},
		args: func(u unit) ([]string, error) {
			return limitArgs(windows, func(c *check, w Window) []string {
				args := []string{
					c.count("Max", w.Max, 1, 1e9),
					c.duration("Duration", w.Duration, u),
					c.duration("Resolution", w.Resolution, u),
				}
				if c.err == nil && w.Resolution > w.Duration {
					c.fail("Resolution", "must be at most Duration, got %v > %v", w.Resolution, w.Duration)
				}
				if c.err == nil && buckets(w) > 10000 {
					c.fail("Resolution", "makes more than 10000 buckets in %v", w.Duration)
				}
				return args
			})
		},
	})
}

// buckets is ceil(Duration / Resolution), without overflow.
func buckets(w Window) time.Duration {
	n := w.Duration / w.Resolution
	if w.Duration%w.Resolution != 0 {
		n++
	}
	return n
}
