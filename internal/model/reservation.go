package model

import "slices"

// The operations of v7's reserve, then settle (issue 31): Call.Op, with
// the reservation's id in Call.ID.
const (
	// OpReserve records Call.Count units as AllowN(Count) in mode 0 would,
	// when admitted, under reservation Call.ID, which a settle may name
	// until Call.Now + Call.Lifetime.
	OpReserve = "reserve"
	// OpSettle settles reservation Call.ID with the actual cost
	// Call.Count: the difference with its estimate is refunded or
	// charged, once.
	OpSettle = "settle"
)

// MaxReservations is the most reservations one state key holds (open, or
// expired and not yet dropped): a reserve of a new id on a key holding
// that many live ones is refused, after the expired ones are dropped.
const MaxReservations = 1000

// reservation is one reservation a state holds: when its id is forgotten
// (a settle at now >= expiry finds nothing) and the units it recorded.
type reservation struct {
	expiry, estimate int64
	at               int64 // the time it was recorded at (zset_log)
	settled          bool  // settled, remembered as such (zset_log)
}

// reservations are the reservations a state holds, by id.
type reservations map[int64]reservation

// live returns the reservation id if it is held at now (its expiry after
// now).
func (rs reservations) live(id, now int64) (reservation, bool) {
	r, ok := rs[id]
	return r, ok && !r.settled && r.expiry > now
}

// ids returns the ids held, in increasing order.
func (rs reservations) ids() []int64 {
	out := make([]int64, 0, len(rs))
	for id := range rs {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// room reports whether a new reservation at now fits (dropping the
// expired and settled ones when the state is full), as the scripts decide:
// a reserve of an id the state holds (expired or settled) replaces it and
// always fits.
func (rs reservations) room(id, now int64) bool {
	if _, ok := rs[id]; ok || len(rs) < MaxReservations {
		return true
	}
	for k, r := range rs {
		if r.expiry <= now || r.settled {
			delete(rs, k)
		}
	}
	return len(rs) < MaxReservations
}

// notApplied is the reply of a settle that applies nothing (an unknown,
// expired or already settled id): the reply of peek with allowed 0,
// retry_after -1 and limit_index 0.
func notApplied(peek Reply) Reply {
	return Reply{Allowed: 0, Remaining: peek.Remaining, RetryAfter: -1, ResetAfter: peek.ResetAfter}
}
