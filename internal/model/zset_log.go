package model

import (
	"cmp"
	"slices"
)

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
	// reserved are the reservations the state holds (v7): held (not
	// settled: live, or expired and not yet converted), whose estimates
	// every window counts, and settled or converted ones until they are
	// dropped; while it holds any, the key's TTL never shortens.
	reserved reservations
}

// logEvent is n events recorded at time t (id: a reservation's, 0 for
// zset_log, whose reservations record no event while held).
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

// count is the events in l's window at stamp, and (v7) the estimate of
// every reservation held.
func (m *ZSetLog) count(l ZSetLogLimit, stamp int64) int64 {
	n := m.held()
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
//
// v7 (Reserves): a reservation holds its units until it is settled: every
// check of a limit counts, besides the events in its window, the estimate
// of every reservation held (live, or expired and not yet converted), in
// every window; a settle records the units used (actual) as events at its
// stamp; a reservation found expired by a call that may write (one with
// eventCount > 0, or a settle that applies) is converted first, as a
// settle of its estimate at its expiry (at the last write's time if that
// is later). Why no window admits more than a limit when a reservation's
// units are admitted anywhere in [reserve, settle]: take any window and
// the last admitting check c at or before its end (a plain call or a
// reserve); every reservation with a unit in the window was reserved by c
// (no reserve after c admitted) and either held at c (counted in full) or
// settled (or converted) at a time s in the window (a unit was admitted at
// or before s), so counted at c too, and every plain event in the window
// was admitted by c and is in c's window: c's check bounds them all.
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
		converted := m.convert(c.Now)
		if _, ok := m.reserved.live(c.ID, c.Now); ok {
			// Held already (a reserve retried): nothing recorded; the reply
			// of an admission, read as a peek.
			reply := decide(true, m.outcomes(c, stamp, 1, true))
			if converted {
				m.wrote(c, stamp, reply.ResetAfter)
			}
			return reply
		}
		had, prev := len(m.reserved) > 0, m.ttl
		allowed := true
		for _, l := range m.Limits {
			if m.count(l, stamp)+c.Count > l.Max {
				allowed = false
			}
		}
		if !allowed || !m.reserved.room(c.ID, c.Now) {
			reply := decide(allowed, m.outcomes(c, stamp, c.Count, allowed))
			if converted {
				m.wrote(c, stamp, reply.ResetAfter)
			}
			return reply
		}
		if m.reserved == nil {
			m.reserved = reservations{}
		}
		// Held: no event is recorded until it is settled.
		m.reserved[c.ID] = reservation{expiry: c.Now + c.Lifetime, estimate: c.Count}
		m.exists, m.last = true, stamp
		reply := decide(true, m.outcomes(c, stamp, c.Count, true))
		m.ttl = ttlMillis(c.Unit, max(reply.ResetAfter, c.Lifetime))
		if had {
			m.ttl = max(m.ttl, prev)
		}
		m.drop(widest)
		return reply
	case OpSettle:
		r, ok := m.reserved.live(c.ID, c.Now)
		if !ok {
			reply, _ := m.decide(c, stamp, 0, 0, widest)
			return notApplied(reply)
		}
		m.convert(c.Now)
		// The units used count from the settle: actual events at stamp,
		// never denied.
		r.settled = true
		m.reserved[c.ID] = r
		if c.Count > 0 {
			m.events = append(m.events, logEvent{stamp, c.Count, 0})
		}
		allowed := true
		for _, l := range m.Limits {
			if m.count(l, stamp)+1 > l.Max {
				allowed = false
			}
		}
		reply := decide(allowed, m.outcomes(c, stamp, 1, allowed))
		m.wrote(c, stamp, reply.ResetAfter)
		m.drop(widest)
		return reply
	}
	converted := c.Count > 0 && m.convert(c.Now)
	reply, record := m.decide(c, stamp, c.Count, c.Mode, widest)
	if converted && !record {
		m.wrote(c, stamp, reply.ResetAfter)
	}
	return reply
}

// convert converts the reservations held whose expiry is at or before now
// (v7): each is settled with its estimate as its actual cost, at its
// expiry or the last write's time if later, in the order of their
// expiries (then ids). It reports whether it converted any.
func (m *ZSetLog) convert(now int64) bool {
	var due []int64
	for id, r := range m.reserved {
		if !r.settled && r.expiry <= now {
			due = append(due, id)
		}
	}
	if len(due) == 0 {
		return false
	}
	slices.SortFunc(due, func(a, b int64) int {
		return cmp.Or(cmp.Compare(m.reserved[a].expiry, m.reserved[b].expiry), cmp.Compare(a, b))
	})
	for _, id := range due {
		r := m.reserved[id]
		m.events = append(m.events, logEvent{max(r.expiry, m.last), r.estimate, 0})
		r.settled = true
		m.reserved[id] = r
	}
	return true
}

// wrote is a write of a key holding reservations at stamp that records
// no event of the call: its last write's time and a TTL that never
// shortens.
func (m *ZSetLog) wrote(c Call, stamp, resetAfter int64) {
	m.exists, m.last = true, stamp
	m.ttl = max(m.ttl, ttlMillis(c.Unit, resetAfter))
}

// held is the sum of the estimates of the reservations held (v7: live, or
// expired and not yet converted), which every window counts.
func (m *ZSetLog) held() int64 {
	var n int64
	for _, r := range m.reserved {
		if !r.settled {
			n += r.estimate
		}
	}
	return n
}

// holds are the reservations held, as events at the time their units are
// counted until if never settled (their expiry, or stamp if later), the
// newest first: what a retry_after and a reset_after wait for.
func (m *ZSetLog) holds(stamp int64) []logEvent {
	var out []logEvent
	for _, r := range m.reserved {
		if !r.settled {
			out = append(out, logEvent{max(r.expiry, stamp), r.estimate, 0})
		}
	}
	slices.SortFunc(out, func(a, b logEvent) int { return cmp.Compare(b.t, a.t) })
	return out
}

// decide decides count events at stamp in mode, records them when it
// should and returns the reply and whether it recorded.
func (m *ZSetLog) decide(c Call, stamp, count int64, mode int, widest int64) (Reply, bool) {
	asked := max(count, 1)
	allowed := true
	for _, l := range m.Limits {
		if m.count(l, stamp)+asked > l.Max {
			allowed = false
		}
	}
	record := count > 0 && (allowed || mode == 1)
	if record {
		m.events = append(m.events, logEvent{stamp, count, 0})
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
	return decide(allowed, outcomes), record
}

// outcomes are the limits' outcomes for asked events at stamp.
func (m *ZSetLog) outcomes(c Call, stamp, asked int64, allowed bool) []outcome {
	// The newest event held: reset_after counts from it. v7: the
	// reservations held are newer (their units count until their expiry
	// or stamp if they are never settled), the newest first.
	var newest int64
	for _, e := range m.events {
		if e.n > 0 {
			newest = e.t
		}
	}
	holds := m.holds(stamp)
	if len(holds) > 0 {
		newest = holds[0].t
	}
	newestFirst := slices.Clone(holds)
	for j := len(m.events) - 1; j >= 0; j-- {
		newestFirst = append(newestFirst, m.events[j])
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
			for _, e := range newestFirst {
				need -= e.n
				if need <= 0 {
					o.retry = clampDuration(e.t + l.Window - c.Now)
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
