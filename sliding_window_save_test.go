package ratelua

import (
	"testing"

	"github.com/ratelua/ratelua/internal/model"
)

// TestSlidingWindowSaveBehind: a call that records nothing (a peek, or a
// denial in mode '0') and finds more than 16 buckets leaving the window
// must write nothing. v5 and v6 saved the advanced rings there but kept
// the last write's time, so a later call whose clock is behind that call
// but not behind the last write was read at its own time without the
// dropped buckets, which its window still covers: it under-counted (one
// limit of 100 per 100 s, one event a second from 100 to 130, a peek at
// 225, then 1 event at 131 answered remaining 94 where 68 are left). The
// cases go through the one-limit fast path, the several-limit one and the
// general code (a bucket partly in the window), with a peek and with a
// denial, each call checked against the model.
func TestSlidingWindowSaveBehind(t *testing.T) {
	ramp := func(from, to int64) []swStep {
		var steps []swStep
		for i := from; i <= to; i++ {
			steps = append(steps, swStep{1, i, "0"})
		}
		return steps
	}
	for _, c := range []struct {
		name   string
		limits []model.SlidingWindowLimit
		steps  []swStep
	}{
		{"one limit, a peek", []model.SlidingWindowLimit{{Max: 100, Duration: 100, Resolution: 1}},
			append(ramp(100, 130), swStep{0, 225, "0"}, swStep{1, 131, "0"})},
		{"one limit, a denial", []model.SlidingWindowLimit{{Max: 100, Duration: 100, Resolution: 1}},
			append(ramp(100, 130), swStep{101, 225, "0"}, swStep{1, 131, "0"})},
		{"two limits, a peek", []model.SlidingWindowLimit{{Max: 100, Duration: 100, Resolution: 1}, {Max: 1000, Duration: 300, Resolution: 1}},
			append(ramp(100, 130), swStep{0, 225, "0"}, swStep{1, 131, "0"})},
		{"two limits, a denial", []model.SlidingWindowLimit{{Max: 100, Duration: 100, Resolution: 1}, {Max: 1000, Duration: 300, Resolution: 1}},
			append(ramp(100, 130), swStep{101, 225, "0"}, swStep{1, 131, "0"})},
		{"a bucket partly in the window, a peek", []model.SlidingWindowLimit{{Max: 100, Duration: 100, Resolution: 3}},
			append(ramp(100, 190), swStep{0, 280, "0"}, swStep{1, 191, "0"})},
		{"a bucket partly in the window, a denial", []model.SlidingWindowLimit{{Max: 100, Duration: 100, Resolution: 3}},
			append(ramp(100, 190), swStep{101, 280, "0"}, swStep{1, 191, "0"})},
	} {
		t.Run(c.name, func(t *testing.T) {
			swAgainstModel(t, c.limits, c.steps)
		})
	}
}
