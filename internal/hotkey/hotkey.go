// Package hotkey holds the rules of a limiter's local leases of quota
// for hot keys (Options.HotKeys, issue 32), in plain Go and apart from
// the round trips: how a key's rate in the process is estimated (Meter),
// how many units a batch reserves (Size), and how a batch admits
// locally and what it gives back (Batch). The root package follows them;
// the property tests here hold them to what the package documentation
// promises ("Hot keys").
package hotkey

import (
	"math"
	"time"
)

// Meter estimates a key's decisions per second in this process from the
// decisions of the last two slices of time, each Lifetime long: the
// current slice's count plus the previous one's, weighted by the part of
// it still within one Lifetime of now (a sliding-window estimate). Its
// zero value has seen nothing.
type Meter struct {
	slice      int64 // the current slice: now / Lifetime
	cur, prev  int64 // decisions in the current and the previous slice
	configured bool  // slice is set
}

// Add counts n decisions at now.
func (m *Meter) Add(now time.Time, life time.Duration, n int64) {
	m.roll(now, life)
	m.cur += n
}

// roll moves the slices to now's.
func (m *Meter) roll(now time.Time, life time.Duration) {
	s := now.UnixNano() / int64(life)
	switch {
	case !m.configured:
		m.slice, m.configured = s, true
	case s == m.slice+1:
		m.slice, m.prev, m.cur = s, m.cur, 0
	case s > m.slice+1:
		m.slice, m.prev, m.cur = s, 0, 0
		// A clock that went back keeps the slices it has.
	}
}

// Rate is the estimated decisions per second at now: the decisions
// counted within the last Lifetime, over Lifetime.
func (m *Meter) Rate(now time.Time, life time.Duration) float64 {
	m.roll(now, life)
	into := float64(now.UnixNano()%int64(life)) / float64(life)
	if into < 0 {
		into = 0
	}
	return (float64(m.prev)*(1-into) + float64(m.cur)) / life.Seconds()
}

// Size is the batch a key reserves: K = clamp(ceil(rate x life), 1,
// maxBatch) once the key's rate reaches hot (else 1, a cold key: one call
// per decision), and at most remaining/2 + 1 when the last reply said
// that remaining units were left (remaining < 0: no reply yet), so that K
// shrinks to 1 as the limit nears exhaustion. K is at least n, the
// events of the decision that asks, when the rest allows a batch at all;
// a K of n or less reserves nothing (the ordinary path decides).
func Size(rate, hot float64, life time.Duration, maxBatch, remaining int64) int64 {
	if !(rate >= hot) || maxBatch < 1 {
		return 1
	}
	want := math.Ceil(rate * life.Seconds())
	k := int64(1)
	switch {
	case want >= float64(maxBatch):
		k = maxBatch
	case want > 1:
		k = int64(want)
	}
	if remaining >= 0 {
		k = min(k, remaining/2+1)
	}
	return max(k, 1)
}

// Batch is a batch of K units a key reserved at one time: it admits
// locally until its units are used or its lifetime ends (Expires), and
// gives back what it did not use (Unused).
type Batch struct {
	K       int64
	Used    int64
	Expires time.Time // the batch admits nothing at or after it
}

// Take admits n of the batch's units at now, if it holds them and has not
// expired.
func (b *Batch) Take(n int64, now time.Time) bool {
	if n < 1 || !now.Before(b.Expires) || b.Used+n > b.K {
		return false
	}
	b.Used += n
	return true
}

// Unused is what giving the batch back returns to the server: its units
// not taken.
func (b *Batch) Unused() int64 { return b.K - b.Used }
