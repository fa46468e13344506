package model

import (
	"math"
	"math/big"
)

// Usage is the state of one event key folded into one reading that never
// under-counts it, for the fallback's memory of keys it had to let go:
// Events events recorded at At, which no limit counts any more from Until
// on. A fresh model of the same limits given Seed is at least as full as
// the state it was read from, at every time from At on; so is one given
// the Seed of a Usage whose every field is at least as large.
type Usage struct {
	At, Events, Until int64
}

// Seed is the call that records u in a fresh model: Events at At, counted
// even over the limits.
func (u Usage) Seed(unit string) Call {
	return Call{Count: u.Events, Now: u.At, Mode: 1, Unit: unit}
}

// Usage reads the state: every event held, as if recorded at the last
// write. It reports false when nothing is held.
func (m *SlidingWindow) Usage() (Usage, bool) {
	var events, horizon int64
	for _, e := range m.events {
		events += e.n
	}
	if !m.exists || events <= 0 {
		return Usage{}, false
	}
	for _, l := range m.Limits {
		horizon = max(horizon, l.Duration+l.Resolution)
	}
	return Usage{At: m.last, Events: events, Until: min(m.last+horizon, MaxTime)}, true
}

// Usage reads the state: the largest deficit of a bucket at its last
// write, rounded up to whole tokens. It reports false when every bucket
// is full.
func (m *TokenBucket) Usage() (Usage, bool) {
	if !m.exists {
		return Usage{}, false
	}
	var events int64
	for i, l := range m.Limits {
		deficit := new(big.Rat).Sub(big.NewRat(l.Capacity, 1), m.tokens[i])
		q := new(big.Int).Quo(deficit.Num(), deficit.Denom())
		if new(big.Rat).SetInt(q).Cmp(deficit) < 0 {
			q.Add(q, big.NewInt(1))
		}
		events = max(events, q.Int64())
	}
	if events <= 0 {
		return Usage{}, false
	}
	// Seeded, a bucket holds Capacity - Events tokens, never fewer than
	// -Capacity: full again after waitFor.
	var until int64
	for _, l := range m.Limits {
		level := big.NewRat(l.Capacity-min(events, 2*l.Capacity), 1)
		until = max(until, waitFor(level, l.Capacity, l))
	}
	return Usage{At: m.stamp, Events: events, Until: min(m.stamp+until, MaxTime)}, true
}

// Usage reads the state: the largest count at the last write, rounded up.
// It reports false when every count is 0.
func (m *AR1) Usage() (Usage, bool) {
	if !m.exists {
		return Usage{}, false
	}
	var events int64
	for _, c := range m.counts {
		events = max(events, int64(math.Ceil(c)))
	}
	if events <= 0 {
		return Usage{}, false
	}
	v := float64(events)
	var until int64
	for _, l := range m.Limits {
		factor := float64(l.Decay) / 1000
		k := fewest(math.Log(v/ar1Epsilon)/math.Log(factor), func(k int64) bool {
			return Decayed(v, factor, k) == 0
		})
		until = max(until, clampFloat(float64(m.stamp/l.Resolution*l.Resolution)+float64(k)*float64(l.Resolution)))
	}
	return Usage{At: m.stamp, Events: events, Until: until}, true
}
