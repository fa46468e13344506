package model

import "sort"

// SlidingWindowLimit allows Max events in Duration, counted in buckets of
// Resolution.
type SlidingWindowLimit struct {
	Max, Duration, Resolution int64
}

// event is n events recorded at time t.
type event struct {
	t, n int64
}

// SlidingWindow models sliding_window as the plain list of recorded events.
type SlidingWindow struct {
	Limits []SlidingWindowLimit
	// KeepsStale is v5's rule: a state far ahead of every clock (see Stale)
	// is kept and decided at its last write's time; from v6 it is forgotten.
	KeepsStale bool
	events     []event // in recording order, times non-decreasing
	exists     bool
	last       int64 // time of the last recorded events
	ttl        int64
}

// Exists reports whether state must exist.
func (m *SlidingWindow) Exists() bool { return m.exists }

// TTLMillis is the TTL of the last write.
func (m *SlidingWindow) TTLMillis() int64 { return m.ttl }

// buckets returns the event counts per bucket inside limit l's window at
// stamp, and the buckets in ascending order.
func (m *SlidingWindow) buckets(l SlidingWindowLimit, stamp int64) (map[int64]int64, []int64) {
	low := floorDiv(stamp-l.Duration, l.Resolution)
	counts := map[int64]int64{}
	var order []int64
	for _, e := range m.events {
		b := floorDiv(e.t, l.Resolution)
		if b <= low {
			continue
		}
		if _, ok := counts[b]; !ok {
			order = append(order, b)
		}
		counts[b] += e.n
	}
	sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
	return counts, order
}

// Do applies one call.
func (m *SlidingWindow) Do(c Call) Reply {
	if c.Count < 0 {
		m.events, m.exists = nil, false
		maxima := make([]int64, len(m.Limits))
		for i, l := range m.Limits {
			maxima[i] = l.Max
		}
		return fresh(maxima)
	}
	var widest int64
	for _, l := range m.Limits {
		widest = max(widest, l.Duration)
	}
	if m.exists && !m.KeepsStale && Stale(c, m.last, widest) {
		m.events, m.exists = nil, false
	}
	stamp := c.Now
	if m.exists {
		stamp = max(stamp, m.last)
	}
	asked := max(c.Count, 1)
	allowed := true
	for _, l := range m.Limits {
		counts, _ := m.buckets(l, stamp)
		var window int64
		for _, n := range counts {
			window += n
		}
		if window+asked > l.Max {
			allowed = false
		}
	}
	record := c.Count > 0 && (allowed || c.Mode == 1)
	if record {
		m.events = append(m.events, event{stamp, c.Count})
		m.exists, m.last = true, stamp
	}
	outcomes := make([]outcome, len(m.Limits))
	var resetAfter int64
	for i, l := range m.Limits {
		counts, order := m.buckets(l, stamp)
		var window int64
		for _, n := range counts {
			window += n
		}
		o := &outcomes[i]
		o.remaining = max(0, l.Max-window)
		if asked > l.Max {
			o.retry = -1
		} else if !allowed && window+asked > l.Max {
			excess := window + asked - l.Max
			for _, b := range order {
				excess -= counts[b]
				if excess <= 0 {
					o.retry = clampDuration(b*l.Resolution + l.Duration - c.Now)
					break
				}
			}
		}
		if window > 0 {
			newest := order[len(order)-1]
			o.reset = clampDuration(newest*l.Resolution + l.Duration - c.Now)
		}
		resetAfter = max(resetAfter, o.reset)
	}
	if record {
		m.ttl = ttlMillis(c.Unit, resetAfter)
	}
	m.prune()
	return decide(allowed, outcomes)
}

// prune drops events that no window can count again (time never goes back
// past the last write).
func (m *SlidingWindow) prune() {
	var longest int64
	for _, l := range m.Limits {
		longest = max(longest, l.Duration+l.Resolution)
	}
	keep := m.events[:0]
	for _, e := range m.events {
		if e.t > m.last-longest {
			keep = append(keep, e)
		}
	}
	m.events = keep
}
