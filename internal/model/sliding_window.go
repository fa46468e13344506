package model

import "sort"

// SlidingWindowLimit allows Max events in Duration, counted in buckets of
// Resolution.
type SlidingWindowLimit struct {
	Max, Duration, Resolution int64
}

// event is n events recorded at time t, by reservation id (0: none). A
// settle (or an expiry found) sets the n of its reservation's event to 0:
// the event stands for the units it recorded in the bucket of every limit.
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
	// reserved are the reservations the state holds (v7), all live after
	// a call's conversions: each counts in every window until settled
	// (issue 32), and the TTL, reset_after, covers it until its expiry's
	// bucket leaves the window.
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
// all taken out is no bucket (the script deletes a bucket it empties).
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

// forget drops the state and its reservations.
func (m *SlidingWindow) forget() {
	m.events, m.exists, m.reserved = nil, false, nil
}

// Do applies one call.
//
// v7 (issue 32): a reservation holds its units until it is settled. Every
// check of a limit counts, besides its window's buckets, the estimate of
// every reservation held whose recorded bucket has left the window (hold);
// a settle takes the whole estimate out of its recorded bucket and records
// the actual cost at stamp; a reservation found expired (every call finds
// them first) is settled with its estimate at its expiry (or the last
// write, if later). Why no window then admits more than max when a
// reservation's units are admitted anywhere in [reserve, settle]: a check
// at time c counts every reservation held at c in full (in its bucket or
// by the hold), and one settled (or expired) at s <= c in the bucket of s,
// which every window holding one of its admissions (all at times <= s)
// and checked at c >= s counts too; so every check counts at least the
// admissions its window holds, and admits only when they fit.
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
	converted := m.convert(c.Now)
	// written ends a call that wrote: its time, its TTL, and the state gone
	// when it holds nothing (a settle's or a conversion's).
	written := func(reply Reply, resetAfter int64, wrote bool) Reply {
		if !wrote {
			return reply
		}
		m.exists, m.last = true, stamp
		m.ttl = ttlMillis(c.Unit, resetAfter)
		if len(m.reserved) == 0 && resetAfter == 0 {
			m.forget()
		}
		m.prune()
		return reply
	}
	switch c.Op {
	case OpReserve:
		if _, ok := m.reserved.live(c.ID, c.Now); ok {
			// Held already (a reserve retried): nothing recorded; the reply
			// of an admission, read as a peek.
			reply, resetAfter := decide(true, m.outcomes(c, stamp, 1, true)), m.resetAfter(c, stamp)
			return written(reply, resetAfter, converted)
		}
		allowed := m.fits(stamp, c.Count)
		if allowed {
			m.events = append(m.events, event{stamp, c.Count, c.ID})
			if m.reserved == nil {
				m.reserved = reservations{}
			}
			m.reserved[c.ID] = reservation{expiry: c.Now + c.Lifetime, estimate: c.Count, at: stamp}
		}
		reply := decide(allowed, m.outcomes(c, stamp, c.Count, allowed))
		return written(reply, m.resetAfter(c, stamp), allowed || converted)
	case OpSettle:
		r, ok := m.reserved.live(c.ID, c.Now)
		if !ok {
			reply := notApplied(decide(m.fits(stamp, 1), m.outcomes(c, stamp, 1, m.fits(stamp, 1))))
			return written(reply, m.resetAfter(c, stamp), converted)
		}
		// The whole estimate leaves the reservation's bucket (a bucket no
		// window counts any more gives nothing back); the actual cost is
		// recorded at stamp, never denied.
		m.unrecord(c.ID, r.at)
		delete(m.reserved, c.ID)
		if c.Count > 0 {
			m.events = append(m.events, event{stamp, c.Count, 0})
		}
		allowed := m.fits(stamp, 1)
		reply := decide(allowed, m.outcomes(c, stamp, 1, allowed))
		return written(reply, m.resetAfter(c, stamp), true)
	}
	asked := max(c.Count, 1)
	allowed := m.fits(stamp, asked)
	record := c.Count > 0 && (allowed || c.Mode == 1)
	if record {
		m.events = append(m.events, event{stamp, c.Count, 0})
	}
	reply := decide(allowed, m.outcomes(c, stamp, asked, allowed))
	return written(reply, m.resetAfter(c, stamp), record || converted)
}

// convert settles every reservation expired at now with its estimate at
// its expiry (or the last write, if later: a time before the last write is
// read as it), in order of expiry, and reports whether it settled any.
func (m *SlidingWindow) convert(now int64) bool {
	var gone []int64
	for id, r := range m.reserved {
		if r.expiry <= now {
			gone = append(gone, id)
		}
	}
	sort.Slice(gone, func(i, j int) bool {
		a, b := m.reserved[gone[i]], m.reserved[gone[j]]
		return a.expiry < b.expiry || a.expiry == b.expiry && gone[i] < gone[j]
	})
	for _, id := range gone {
		r := m.reserved[id]
		m.unrecord(id, r.at)
		m.events = append(m.events, event{max(r.expiry, m.last), r.estimate, 0})
		delete(m.reserved, id)
	}
	return len(gone) > 0
}

// unrecord takes reservation id's event, recorded at at, out of the events.
func (m *SlidingWindow) unrecord(id, at int64) {
	for i := len(m.events) - 1; i >= 0; i-- {
		if e := m.events[i]; e.id == id && e.t == at {
			m.events[i].n = 0
			break
		}
	}
}

// hold returns, for limit l at stamp, the estimates of the reservations
// held whose recorded bucket has left the window (rule 1 of issue 32),
// and those held per recorded bucket still in it.
func (m *SlidingWindow) hold(l SlidingWindowLimit, stamp int64) (int64, map[int64]int64) {
	low := floorDiv(stamp-l.Duration, l.Resolution)
	var out int64
	in := map[int64]int64{}
	for _, r := range m.reserved {
		if b := floorDiv(r.at, l.Resolution); b > low {
			in[b] += r.estimate
		} else {
			out += r.estimate
		}
	}
	return out, in
}

// window returns the events limit l counts at stamp: its buckets and the
// reservations held out of them.
func (m *SlidingWindow) window(l SlidingWindowLimit, stamp int64) int64 {
	counts, _ := m.buckets(l, stamp)
	n, _ := m.hold(l, stamp)
	for _, c := range counts {
		n += c
	}
	return n
}

// fits reports whether asked events fit every limit at stamp.
func (m *SlidingWindow) fits(stamp, asked int64) bool {
	for _, l := range m.Limits {
		if m.window(l, stamp)+asked > l.Max {
			return false
		}
	}
	return true
}

// resetAfter is the reply's reset_after at stamp.
func (m *SlidingWindow) resetAfter(c Call, stamp int64) int64 {
	var reset int64
	for _, o := range m.outcomes(c, stamp, 1, true) {
		reset = max(reset, o.reset)
	}
	return reset
}

// outcomes are the limits' outcomes for asked events at stamp. The times
// are those of the held view: a reservation held counts until it expires
// and then from the bucket of its expiry (or of stamp, if later), as if
// settled there (nothing else happening), so its estimate moves from its
// recorded bucket to that bucket.
func (m *SlidingWindow) outcomes(c Call, stamp, asked int64, allowed bool) []outcome {
	outcomes := make([]outcome, len(m.Limits))
	for i, l := range m.Limits {
		counts, _ := m.buckets(l, stamp)
		out, in := m.hold(l, stamp)
		window := out
		for b, n := range counts {
			window += n
			counts[b] = n - in[b]
		}
		for _, r := range m.reserved {
			// Found expired, it will be settled at its expiry or the last
			// write, at least stamp (a clock behind the last write's).
			counts[floorDiv(max(r.expiry, stamp), l.Resolution)] += r.estimate
		}
		var order []int64
		for b, n := range counts {
			if n > 0 {
				order = append(order, b)
			}
		}
		sort.Slice(order, func(i, j int) bool { return order[i] < order[j] })
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
// past the last write), and those taken out to nothing.
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
