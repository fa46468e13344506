package model

// ZSetLogLimit allows Max events in any Window.
type ZSetLogLimit struct {
	Max, Window int64
}

// ZSetLog models zset_log as the plain list of recorded events.
type ZSetLog struct {
	Limits []ZSetLogLimit
	// KeepsStale is v5's rule: a state far ahead of every clock (see Stale)
	// is kept and decided at its last write's time; from v6 it is forgotten.
	KeepsStale bool
	events     []event // in recording order, times non-decreasing
	exists     bool
	last       int64
	ttl        int64
}

// Exists reports whether state must exist.
func (m *ZSetLog) Exists() bool { return m.exists }

// TTLMillis is the TTL of the last write.
func (m *ZSetLog) TTLMillis() int64 { return m.ttl }

func (m *ZSetLog) count(l ZSetLogLimit, stamp int64) int64 {
	var n int64
	for _, e := range m.events {
		if e.t > stamp-l.Window {
			n += e.n
		}
	}
	return n
}

// Do applies one call.
func (m *ZSetLog) Do(c Call) Reply {
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
		widest = max(widest, l.Window)
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
		if m.count(l, stamp)+asked > l.Max {
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
		window := m.count(l, stamp)
		o := &outcomes[i]
		o.remaining = max(0, l.Max-window)
		if asked > l.Max {
			o.retry = -1
		} else if !allowed && window+asked > l.Max {
			// The (Max - asked + 1)-th newest event must leave the window.
			need := l.Max - asked + 1
			for j := len(m.events) - 1; j >= 0; j-- {
				need -= m.events[j].n
				if need <= 0 {
					o.retry = clampDuration(m.events[j].t + l.Window - c.Now)
					break
				}
			}
		}
		if window > 0 {
			o.reset = clampDuration(m.last + l.Window - c.Now)
		}
		resetAfter = max(resetAfter, o.reset)
	}
	if record {
		m.ttl = ttlMillis(c.Unit, resetAfter)
	}
	// Drop events no window can count again: time never goes back past the
	// last write.
	keep := m.events[:0]
	for _, e := range m.events {
		if e.t > m.last-widest {
			keep = append(keep, e)
		}
	}
	m.events = keep
	return decide(allowed, outcomes)
}
