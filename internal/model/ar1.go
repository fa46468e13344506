package model

import "math"

// AR1Limit is one decaying count: at most Max events, divided by
// Decay/1000 at every multiple of Resolution.
type AR1Limit struct {
	Max, Decay, Resolution int64
}

// Horizon is the limit's horizon for the stale rule: an event's mean
// lifetime in the count, Resolution * Decay / (Decay - 1000), rounded up to
// whole resolutions: Resolution * ceil(Decay / (Decay - 1000)).
func (l AR1Limit) Horizon() int64 {
	return l.Resolution * ceilDiv(l.Decay, l.Decay-1000)
}

// ar1Epsilon is the count below which a decayed count is 0.
const ar1Epsilon = 0.001

// AR1 models ar1 with float64 counts, as the script computes them.
type AR1 struct {
	Limits []AR1Limit
	// KeepsStale is v5's rule: a state written by a clock far ahead (see
	// Stale) is kept and decided at its last write's time; from v6 it is
	// forgotten.
	KeepsStale bool
	exists     bool
	stamp      int64
	counts     []float64
	ttl        int64
}

// Exists reports whether state must exist.
func (m *AR1) Exists() bool { return m.exists }

// TTLMillis is the TTL of the last write.
func (m *AR1) TTLMillis() int64 { return m.ttl }

// pow is factor^k by repeated squaring: the scripts' exact arithmetic.
func pow(factor float64, k int64) float64 {
	result := 1.0
	for k > 0 {
		if k%2 == 1 {
			result *= factor
		}
		factor *= factor
		k /= 2
	}
	return result
}

// Decayed returns count after k boundaries at the given factor.
func Decayed(count, factor float64, k int64) float64 {
	if k > 0 {
		count /= pow(factor, k)
	}
	if count < ar1Epsilon {
		return 0
	}
	return count
}

// fewest returns the smallest k >= 1 with done(k), searching linearly from
// an estimate (independent of the script's doubling search).
func fewest(estimate float64, done func(int64) bool) int64 {
	k := int64(1)
	if estimate > 1 && estimate < 1e15 {
		k = int64(estimate)
	}
	for k > 1 && done(k-1) {
		k--
	}
	for !done(k) {
		k++
	}
	return k
}

// Do applies one call.
func (m *AR1) Do(c Call) Reply {
	if c.Count < 0 {
		m.exists, m.counts = false, nil
		maxima := make([]int64, len(m.Limits))
		for i, l := range m.Limits {
			maxima[i] = l.Max
		}
		return fresh(maxima)
	}
	if m.exists && !m.KeepsStale {
		// The last write: with one limit, the script keeps only its
		// boundary, so the start of that boundary.
		last, widest := m.stamp, int64(0)
		if len(m.Limits) == 1 {
			last = m.stamp / m.Limits[0].Resolution * m.Limits[0].Resolution
		}
		for _, l := range m.Limits {
			widest = max(widest, l.Horizon())
		}
		if Stale(c, last, widest) {
			m.exists, m.counts = false, nil
		}
	}
	stamp := c.Now
	counts := make([]float64, len(m.Limits))
	if m.exists {
		stamp = max(stamp, m.stamp)
		for i, l := range m.Limits {
			k := stamp/l.Resolution - m.stamp/l.Resolution
			counts[i] = Decayed(m.counts[i], float64(l.Decay)/1000, k)
		}
	}
	asked := max(c.Count, 1)
	allowed := true
	for i, l := range m.Limits {
		if counts[i]+float64(asked) > float64(l.Max) {
			allowed = false
		}
	}
	record := c.Count > 0 && (allowed || c.Mode == 1)
	if record {
		for i := range counts {
			counts[i] += float64(c.Count)
		}
	}
	outcomes := make([]outcome, len(m.Limits))
	var resetAfter int64
	for i, l := range m.Limits {
		factor := float64(l.Decay) / 1000
		v := counts[i]
		o := &outcomes[i]
		o.remaining = max(0, int64(math.Floor(float64(l.Max)-v)))
		slotStart := stamp / l.Resolution * l.Resolution
		if asked > l.Max {
			o.retry = -1
		} else if v+float64(asked) > float64(l.Max) {
			estimate := math.Log(v/float64(l.Max-asked+1)) / math.Log(factor)
			k := fewest(estimate, func(k int64) bool {
				return Decayed(v, factor, k)+float64(asked) <= float64(l.Max)
			})
			o.retry = clampFloat(float64(slotStart) + float64(k)*float64(l.Resolution) - float64(c.Now))
		}
		if v > 0 {
			k := fewest(math.Log(v/ar1Epsilon)/math.Log(factor), func(k int64) bool {
				return Decayed(v, factor, k) == 0
			})
			o.reset = clampFloat(float64(slotStart) + float64(k)*float64(l.Resolution) - float64(c.Now))
		}
		resetAfter = max(resetAfter, o.reset)
	}
	if record {
		m.exists, m.stamp, m.counts = true, stamp, counts
		m.ttl = ttlMillis(c.Unit, resetAfter)
	}
	return decide(allowed, outcomes)
}

// clampFloat bounds a duration computed in float64, as the script does.
func clampFloat(d float64) int64 {
	if d >= MaxTime {
		return MaxTime
	}
	return max(int64(d), 0)
}
