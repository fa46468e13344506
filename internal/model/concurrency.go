package model

import (
	"slices"
	"sort"
)

// The operations of the concurrency script besides mode 0 (acquire,
// decide, reset by eventCount): Call.Op.
const (
	OpRenew   = "renew"
	OpRelease = "release"
)

// Concurrency models the concurrency script as the plain list of leases:
// at most Max slots held at once, a lease held while its expiry is after
// now.
//
// With V6 it follows v6's rules: an acquire's Call.Lease, when not 0, is
// the lease id the caller chose (never one a live lease holds: the script
// refuses that, the model does not model it); the counter's next id skips
// the ids live leases hold; and the clock rule: a now earlier than the
// last acquire's or renewal's time counts as that time, and a now more
// than Lease from it (or on a key without one) is compared with the
// server's TIME, ServerUs: neither it nor the last write counts later.
type Concurrency struct {
	Max, Lease int64
	// V6 selects v6's rules (above); ServerUs is the server's TIME in
	// microseconds, for V6.
	V6       bool
	ServerUs int64

	leases  []lease // in id order
	counter int64   // the last lease id handed out
	last    int64   // the time of the last acquire or renewal (V6)
	hasLast bool
	exists  bool
	ttl     int64
}

// lease is one lease: its id, its slots and its expiry.
type lease struct {
	id, slots, expiry int64
}

// Exists reports whether state must exist.
func (m *Concurrency) Exists() bool { return m.exists }

// TTLMillis is the TTL the key must have: the largest any write of the
// key's life set, as the TTL never shortens (the engine's clock is frozen,
// so a TTL set earlier has not run down).
func (m *Concurrency) TTLMillis() int64 { return m.ttl }

// Leases returns the ids of the leases in the state, live or expired, and
// their slots, for drawing calls that name them.
func (m *Concurrency) Leases() (ids, slots []int64) {
	for _, l := range m.leases {
		ids, slots = append(ids, l.id), append(slots, l.slots)
	}
	return ids, slots
}

// Counter is the last lease id handed out, 0 before the first.
func (m *Concurrency) Counter() int64 { return m.counter }

// live returns the expiries of the slots held at now, earliest first.
func (m *Concurrency) live(now int64) []int64 {
	var out []int64
	for _, l := range m.leases {
		if l.expiry > now {
			for range l.slots {
				out = append(out, l.expiry)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// resetAfter is the time from now to the latest expiry of a held slot.
func resetAfter(slots []int64, now int64) int64 {
	if len(slots) == 0 {
		return 0
	}
	return clampDuration(slots[len(slots)-1] - now)
}

// Do applies one call.
func (m *Concurrency) Do(c Call) Reply {
	switch c.Op {
	case OpRenew, OpRelease:
		return m.renewOrRelease(c)
	}
	if c.Count < 0 {
		// The leases go; the counter, the last write's time and the TTL
		// stay.
		m.leases = nil
		return Reply{Allowed: 1, Remaining: m.Max}
	}
	c.Now = m.at(c)
	slots := m.live(c.Now)
	held := int64(len(slots))
	asked := max(c.Count, 1)
	remaining := max(0, m.Max-held)
	if held+asked <= m.Max {
		if c.Count == 0 {
			return Reply{Allowed: 1, Remaining: remaining, ResetAfter: resetAfter(slots, c.Now), LimitIndex: 1}
		}
		kept := m.leases[:0]
		for _, l := range m.leases {
			if l.expiry > c.Now {
				kept = append(kept, l)
			}
		}
		id := c.Lease
		if !m.V6 || id == 0 {
			// The counter's next id that no live lease holds.
			id = m.counter + 1
			for slices.ContainsFunc(kept, func(l lease) bool { return l.id == id }) {
				id++
			}
			m.counter = id
		}
		m.leases = append(kept, lease{id: id, slots: c.Count, expiry: c.Now + m.Lease})
		m.wrote(c.Now)
		latest := m.latest()
		reset := clampDuration(latest - c.Now)
		m.setTTL(c.Unit, reset)
		return Reply{Allowed: 1, Remaining: remaining - c.Count, ResetAfter: reset, LimitIndex: id}
	}
	r := Reply{Remaining: remaining, RetryAfter: -1, ResetAfter: resetAfter(slots, c.Now), LimitIndex: 1}
	if asked <= m.Max {
		// The (held + asked - Max)-th earliest slot must expire.
		r.RetryAfter = clampDuration(slots[held+asked-m.Max-1] - c.Now)
	}
	return r
}

// renewOrRelease is a call in mode renew or release of lease c.Lease of
// c.Count slots.
func (m *Concurrency) renewOrRelease(c Call) Reply {
	c.Now = m.at(c)
	at := -1
	for i, l := range m.leases {
		if l.id == c.Lease && l.slots == c.Count && l.expiry > c.Now {
			at = i
		}
	}
	if at >= 0 {
		if c.Op == OpRenew {
			m.leases[at].expiry = max(m.leases[at].expiry, c.Now+m.Lease)
			m.wrote(c.Now)
		} else {
			m.leases = append(m.leases[:at], m.leases[at+1:]...)
		}
	}
	slots := m.live(c.Now)
	r := Reply{Remaining: max(0, m.Max-int64(len(slots))), ResetAfter: resetAfter(slots, c.Now)}
	if at < 0 {
		r.RetryAfter = -1
		return r
	}
	if c.Op == OpRenew {
		m.setTTL(c.Unit, r.ResetAfter)
	}
	r.Allowed, r.LimitIndex = 1, c.Lease
	return r
}

// latest is the latest expiry of any lease in the state, expired or not.
func (m *Concurrency) latest() int64 {
	var latest int64
	for _, l := range m.leases {
		latest = max(latest, l.expiry)
	}
	return latest
}

// setTTL sets the TTL of a write whose latest expiry is reset after now:
// on a new key that TTL, else the longer of it and the key's TTL.
func (m *Concurrency) setTTL(unit string, reset int64) {
	ttl := ttlMillis(unit, reset)
	if !m.exists {
		m.exists, m.ttl = true, ttl
		return
	}
	m.ttl = max(m.ttl, ttl)
}

// at is the time a call is decided at: its now under v5's rules; under
// v6's, a now earlier than the last write counts as the last write, and a
// now more than Lease from the last write (or on a key without one) is
// compared with the server's TIME, later than which neither it nor the
// last write counts.
func (m *Concurrency) at(c Call) int64 {
	if !m.V6 {
		return c.Now
	}
	now, last := c.Now, m.last
	if !m.hasLast || now-last > m.Lease || last-now > m.Lease {
		server := m.ServerUs
		switch c.Unit {
		case "s":
			server /= 1_000_000
		case "ms":
			server /= 1000
		}
		now, last = min(now, server), min(last, server)
	}
	if m.hasLast && now < last {
		now = last
	}
	return now
}

// wrote records the time of an acquire or a renewal (v6's '@').
func (m *Concurrency) wrote(now int64) {
	m.last, m.hasLast = now, true
}

// Holds reports whether acquire c names (Call.Lease) the id of a lease
// held at the call's time, which v6 refuses.
func (m *Concurrency) Holds(c Call) bool {
	now := m.at(c)
	for _, l := range m.leases {
		if l.id == c.Lease && l.expiry > now {
			return true
		}
	}
	return false
}
