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
	// Reserves is v7: the calls may be reserves and settles (Call.Op
	// OpReserve, OpSettle). The model does not model the refusal of a
	// reserve past MaxReservations (a case test does).
	Reserves bool
	events   []logEvent // in recording order, times non-decreasing
	exists   bool
	last     int64 // the time of the last write
	ttl      int64
	// reserved are the reservations the state holds (v7), settled ones
	// included until they are dropped: while it holds any, the key's TTL
	// never shortens.
	reserved reservations
}

// logEvent is n events recorded at time t, by reservation id (0: none).
type logEvent struct {
	t, n, id int64
}

// Exists reports whether state must exist.
func (m *ZSetLog) Exists() bool { return m.exists }

// TTLMillis is the TTL of the last write.
func (m *ZSetLog) TTLMillis() int64 { return m.ttl }

// Reservable reports whether the calls may reserve and settle (v7).
func (m *ZSetLog) Reservable() bool { return m.Reserves }

// Reservations returns the ids of the reservations the state holds, live,
// expired or settled, for drawing calls that name them.
func (m *ZSetLog) Reservations() []int64 { return m.reserved.ids() }

func (m *ZSetLog) count(l ZSetLogLimit, stamp int64) int64 {
	var n int64
	for _, e := range m.events {
		if e.t > stamp-l.Window {
			n += e.n
		}
	}
	return n
}

// forget drops the state and its reservations.
func (m *ZSetLog) forget() {
	m.events, m.exists, m.reserved = nil, false, nil
}

// Do applies one call.
func (m *ZSetLog) Do(c Call) Reply {
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
		widest = max(widest, l.Window)
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
		reply, resetAfter := m.decide(c, stamp, c.Count, 0, c.ID, widest)
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
			reply, _ := m.decide(c, stamp, 0, 0, 0, widest)
			return notApplied(reply)
		}
		// The reservation's events count actual if fewer; an overrun is
		// recorded at stamp, never denied.
		for i := len(m.events) - 1; i >= 0; i-- {
			// Its events: the newest of its id at its time (an id settled
			// and reserved again at one time has older ones).
			if e := m.events[i]; e.id == c.ID && e.t == r.at {
				m.events[i].n = min(e.n, c.Count)
				break
			}
		}
		if extra := c.Count - r.estimate; extra > 0 {
			m.events = append(m.events, logEvent{stamp, extra, 0})
		}
		m.last = stamp
		r.settled = true
		m.reserved[c.ID] = r
		allowed := true
		for _, l := range m.Limits {
			if m.count(l, stamp)+1 > l.Max {
				allowed = false
			}
		}
		outcomes := m.outcomes(c, stamp, 1, allowed)
		var resetAfter int64
		for _, o := range outcomes {
			resetAfter = max(resetAfter, o.reset)
		}
		m.ttl = max(m.ttl, ttlMillis(c.Unit, resetAfter))
		m.drop(widest)
		return decide(allowed, outcomes)
	}
	reply, _ := m.decide(c, stamp, c.Count, c.Mode, 0, widest)
	return reply
}

// decide decides count events at stamp in mode, records them (for
// reservation id, or 0) when it should and returns the reply and the
// reset_after it wrote.
func (m *ZSetLog) decide(c Call, stamp, count int64, mode int, id, widest int64) (Reply, int64) {
	asked := max(count, 1)
	allowed := true
	for _, l := range m.Limits {
		if m.count(l, stamp)+asked > l.Max {
			allowed = false
		}
	}
	record := count > 0 && (allowed || mode == 1)
	if record {
		m.events = append(m.events, logEvent{stamp, count, id})
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
	m.drop(widest)
	return decide(allowed, outcomes), resetAfter
}

// outcomes are the limits' outcomes for asked events at stamp.
func (m *ZSetLog) outcomes(c Call, stamp, asked int64, allowed bool) []outcome {
	// The newest event held: reset_after counts from it.
	var newest int64
	for _, e := range m.events {
		if e.n > 0 {
			newest = e.t
		}
	}
	outcomes := make([]outcome, len(m.Limits))
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
			o.reset = clampDuration(newest + l.Window - c.Now)
		}
	}
	return outcomes
}

// drop drops the events no window can count again: time never goes back
// past the last write.
func (m *ZSetLog) drop(widest int64) {
	keep := m.events[:0]
	for _, e := range m.events {
		if e.t > m.last-widest && e.n > 0 {
			keep = append(keep, e)
		}
	}
	m.events = keep
}
