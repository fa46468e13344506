package model

import "sort"

// SlidingWindowLimit allows Max events in Duration, counted in buckets of
// Resolution.
type SlidingWindowLimit struct {
	Max, Duration, Resolution int64
}

// event is n events recorded at time t, by reservation id (0: none). A
// settle's refund lowers the n of its reservation's event, which stands
// for the units it recorded in the bucket of every limit.
type event struct {
	t, n, id int64
}

// SlidingWindow models sliding_window as the plain list of recorded events.
type SlidingWindow struct {
	Limits []SlidingWindowLimit
	// KeepsStale is v5's rule: a state far ahead of every clock (see Stale)
	// is kept and decided at its last write's time; from v6 it is forgotten.
	KeepsStale bool
	// Reserves is v7: the calls may be reserves and settles (Call.Op
	// OpReserve, OpSettle). The model does not model the refusal of a
	// reserve past MaxReservations (a case test does).
	Reserves bool
	events   []event // in recording order, times non-decreasing
	exists   bool
	last     int64 // time of the last write
	ttl      int64
	// reserved are the reservations the state holds (v7): while it holds
	// any, the key's TTL never shortens.
	reserved reservations
}

// Exists reports whether state must exist.
func (m *SlidingWindow) Exists() bool { return m.exists }

// TTLMillis is the TTL of the last write.
func (m *SlidingWindow) TTLMillis() int64 { return m.ttl }

// Reservable reports whether the calls may reserve and settle (v7).
func (m *SlidingWindow) Reservable() bool { return m.Reserves }

// Reservations returns the ids of the reservations the state holds, live
// or expired, for drawing calls that name them.
func (m *SlidingWindow) Reservations() []int64 { return m.reserved.ids() }

// buckets returns the event counts per bucket inside limit l's window at
// stamp, and the buckets in ascending order. A bucket whose events were
// all refunded is no bucket (the script deletes a bucket it empties).
func (m *SlidingWindow) buckets(l SlidingWindowLimit, stamp int64) (map[int64]int64, []int64) {
	low := floorDiv(stamp-l.Duration, l.Resolution)
	counts := map[int64]int64{}
	var order []int64
	for _, e := range m.events {
		b := floorDiv(e.t, l.Resolution)
		if b <= low || e.n == 0 {
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

// window returns the events limit l counts at stamp.
func (m *SlidingWindow) window(l SlidingWindowLimit, stamp int64) int64 {
	counts, _ := m.buckets(l, stamp)
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}

// forget drops the state and its reservations.
func (m *SlidingWindow) forget() {
	m.events, m.exists, m.reserved = nil, false, nil
}

// Do applies one call.
func (m *SlidingWindow) Do(c Call) Reply {
	if c.Count < 0 {
		m.forget()
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
		m.forget()
	}
	stamp := c.Now
	if m.exists {
		stamp = max(stamp, m.last)
	}
	switch c.Op {
	case OpReserve:
		if _, ok := m.reserved.live(c.ID, c.Now); ok {
			// Held already (a reserve retried): nothing recorded; the reply
			// of an admission, read as a peek.
			return decide(true, m.outcomes(c, stamp, 1, true))
		}
		had, prev := len(m.reserved) > 0, m.ttl
		reply, resetAfter := m.decide(c, stamp, c.Count, 0, c.ID)
		if reply.Allowed == 1 && m.reserved.room(c.ID, c.Now) {
			if m.reserved == nil {
				m.reserved = reservations{}
			}
			m.reserved[c.ID] = reservation{expiry: c.Now + c.Lifetime, estimate: c.Count, at: stamp}
			m.ttl = ttlMillis(c.Unit, max(resetAfter, c.Lifetime))
			if had {
				m.ttl = max(m.ttl, prev)
			}
		}
		return reply
	case OpSettle:
		r, ok := m.reserved.live(c.ID, c.Now)
		if !ok {
			reply, _ := m.decide(c, stamp, 0, 0, 0)
			return notApplied(reply)
		}
		// A refund comes out of the reservation's event while it is held
		// (a bucket no window counts any more gives nothing back), never
		// below 0; an overrun is recorded at stamp, never denied.
		for i := len(m.events) - 1; i >= 0; i-- {
			if e := m.events[i]; e.id == c.ID && e.t == r.at {
				m.events[i].n = min(e.n, c.Count)
				break
			}
		}
		if extra := c.Count - r.estimate; extra > 0 {
			m.events = append(m.events, event{stamp, extra, 0})
		}
		m.last = stamp
		delete(m.reserved, c.ID)
		allowed := true
		for _, l := range m.Limits {
			if m.window(l, stamp)+1 > l.Max {
				allowed = false
			}
		}
		outcomes := m.outcomes(c, stamp, 1, allowed)
		var resetAfter int64
		for _, o := range outcomes {
			resetAfter = max(resetAfter, o.reset)
		}
		ttl := ttlMillis(c.Unit, resetAfter)
		if len(m.reserved) == 0 {
			// The last reservation: the state is v7's without reservations
			// again, or none when no window counts anything.
			m.ttl = ttl
			if resetAfter == 0 {
				m.forget()
			}
		} else {
			m.ttl = max(m.ttl, ttl)
		}
		m.prune()
		return decide(allowed, outcomes)
	}
	reply, _ := m.decide(c, stamp, c.Count, c.Mode, 0)
	return reply
}

// decide decides count events at stamp in mode, records them (for
// reservation id, or 0) when it should and returns the reply and the
// reset_after it computed.
func (m *SlidingWindow) decide(c Call, stamp, count int64, mode int, id int64) (Reply, int64) {
	asked := max(count, 1)
	allowed := true
	for _, l := range m.Limits {
		if m.window(l, stamp)+asked > l.Max {
			allowed = false
		}
	}
	record := count > 0 && (allowed || mode == 1)
	if record {
		m.events = append(m.events, event{stamp, count, id})
		m.exists, m.last = true, stamp
	}
	outcomes := m.outcomes(c, stamp, asked, allowed)
	var resetAfter int64
	for _, o := range outcomes {
		resetAfter = max(resetAfter, o.reset)
	}
	if record {
		ttl := ttlMillis(c.Unit, resetAfter)
		if len(m.reserved) > 0 {
			// A state holding reservations: its TTL never shortens.
			ttl = max(ttl, m.ttl)
		}
		m.ttl = ttl
	}
	m.prune()
	return decide(allowed, outcomes), resetAfter
}

// outcomes are the limits' outcomes for asked events at stamp.
func (m *SlidingWindow) outcomes(c Call, stamp, asked int64, allowed bool) []outcome {
	outcomes := make([]outcome, len(m.Limits))
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
	}
	return outcomes
}

// prune drops events that no window can count again (time never goes back
// past the last write), and those refunded to nothing.
func (m *SlidingWindow) prune() {
	var longest int64
	for _, l := range m.Limits {
		longest = max(longest, l.Duration+l.Resolution)
	}
	keep := m.events[:0]
	for _, e := range m.events {
		if e.t > m.last-longest && e.n > 0 {
			keep = append(keep, e)
		}
	}
	m.events = keep
}
