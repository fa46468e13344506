package model

import (
	"math/rand/v2"
	"testing"
)

// TestCompactKeepsReplies: a model compacted after every call answers
// exactly as one that is not, over long random sequences, while holding
// at most the distinct buckets (or times) of its window.
func TestCompactKeepsReplies(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		var sw, swc SlidingWindow
		var zl, zlc ZSetLog
		for range 1 + r.IntN(3) {
			res := 1 + r.Int64N(50)
			l := SlidingWindowLimit{Max: 1 + r.Int64N(40), Duration: res * (1 + r.Int64N(10)), Resolution: res}
			sw.Limits = append(sw.Limits, l)
			zl.Limits = append(zl.Limits, ZSetLogLimit{Max: l.Max, Window: l.Duration})
		}
		swc.Limits, zlc.Limits = sw.Limits, zl.Limits
		var now int64 = 1000
		maxEvents := 0
		for step := range 2000 {
			now += r.Int64N(4)
			c := Call{Count: r.Int64N(3), Now: now, Mode: r.IntN(2), Unit: "ms"}
			if r.IntN(200) == 0 {
				c.Count = -1
			}
			if a, b := sw.Do(c), swc.Do(c); a != b {
				t.Fatalf("round %d step %d sliding window %+v: %+v, compacted %+v", round, step, c, a, b)
			}
			swc.Compact()
			if a, b := zl.Do(c), zlc.Do(c); a != b {
				t.Fatalf("round %d step %d zset log %+v: %+v, compacted %+v", round, step, c, a, b)
			}
			zlc.Compact()
			maxEvents = max(maxEvents, len(swc.events))
			if int64(len(zlc.events)) > longestWindow(zl)+1 {
				t.Fatalf("round %d: zset log holds %d events", round, len(zlc.events))
			}
		}
		// Events held: at most one per combination of buckets across the
		// span pruning keeps.
		var longest, bound int64
		for _, l := range sw.Limits {
			longest = max(longest, l.Duration+l.Resolution)
		}
		for _, l := range sw.Limits {
			bound += longest/l.Resolution + 2
		}
		if int64(maxEvents) > bound {
			t.Errorf("round %d: %d events held, want at most %d", round, maxEvents, bound)
		}
	}
}

func longestWindow(m ZSetLog) int64 {
	var w int64
	for _, l := range m.Limits {
		w = max(w, l.Window)
	}
	return w
}
