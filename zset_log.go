package ratelua

import (
	"time"

	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/model"
)

// maxLogEvents bounds a Log's Max: a zset_log call adds or drops at most
// Max + 1 members, so this bounds the server's work of one call (about
// 10,000 members: a few milliseconds; 10^6 took 1.2-1.5 s and 115 MB).
const maxLogEvents = 10_000

// Log allows at most Max events in any Window, exactly: every event is kept
// (as a sorted-set member) until it leaves the window. Max is at most
// 10,000 (use a sliding window for more).
type Log struct {
	Max    int64
	Window time.Duration
}

// NewZSetLog returns an exact sliding-log limiter (script zset_log): one
// sorted set per event key holding up to the largest Max events.
func NewZSetLog(client Client, opts Options, logs ...Log) (*Limiter, error) {
	var durations []time.Duration
	var quotas []quota
	for _, g := range logs {
		durations = append(durations, g.Window)
		quotas = append(quotas, quota{g.Max, g.Window})
	}
	return newLimiter(client, opts, spec{
		script:    ZSetLog,
		durations: durations,
		quotas:    quotas,
		model: func(share float64, u unit) func() model.Model {
			limits := make([]model.ZSetLogLimit, len(logs))
			for i, g := range logs {
				limits[i] = model.ZSetLogLimit{Max: fallback.ScaleMax(g.Max, share), Window: u.Count(g.Window)}
			}
			return func() model.Model { return &model.LogBuckets{Limits: limits} }
		},
		args: func(u unit) ([]string, error) {
			return limitArgs(logs, func(c *check, g Log) []string {
				return []string{c.count("Max", g.Max, 1, maxLogEvents), c.duration("Window", g.Window, u)}
			})
		},
	})
}
