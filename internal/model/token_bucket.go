package model

import (
	"cmp"
	"math/big"
	"slices"
)

// TokenBucketLimit is one bucket: capacity tokens, refilled continuously by
// RefillAmount per RefillInterval.
type TokenBucketLimit struct {
	Capacity, RefillAmount, RefillInterval int64
}

// TokenBucket models token_bucket: token levels are exact rationals.
type TokenBucket struct {
	Limits []TokenBucketLimit
	// BehindCounts is v6's rule for one limit: a now earlier than the last
	// write is not taken as that write's time; the bucket is read at now,
	// emptier by the refill of the time behind, down to -capacity, and a
	// call that reads it below -capacity records nothing (mode 1
	// included), so that the time the bucket is full again never moves
	// back. Unset (v5, and v6 with two or more limits), a now behind is
	// taken as the last write's time.
	BehindCounts bool
	// KeepsStale is v5's rule: a state written by a clock far ahead (see
	// stale) is kept and decided at its last write's time; from v6 it is
	// forgotten.
	KeepsStale bool
	// Reserves is v7: the calls may be reserves and settles (Call.Op
	// OpReserve, OpSettle). The model does not model the refusal of a
	// reserve past MaxReservations (a case test does).
	Reserves bool
	exists   bool
	stamp    int64
	tokens   []*big.Rat
	ttl      int64
	// reserved are the reservations the state holds (v7), and hashed
	// whether it is v7's hash (it holds some): its TTL then never
	// shortens while it does.
	reserved reservations
	hashed   bool
}

// Reservable reports whether the calls may reserve and settle (v7).
func (m *TokenBucket) Reservable() bool { return m.Reserves }

// Reservations returns the ids of the reservations the state holds, live
// or expired, for drawing calls that name them.
func (m *TokenBucket) Reservations() []int64 { return m.reserved.ids() }

// Exists reports whether state must exist.
func (m *TokenBucket) Exists() bool { return m.exists }

// TTLMillis is the TTL of the last write.
func (m *TokenBucket) TTLMillis() int64 { return m.ttl }

// waitFor is the time until level reaches target at rate amount/interval,
// rounded up to a whole unit.
func waitFor(level *big.Rat, target int64, l TokenBucketLimit) int64 {
	deficit := new(big.Rat).Sub(big.NewRat(target, 1), level)
	if deficit.Sign() <= 0 {
		return 0
	}
	t := deficit.Mul(deficit, big.NewRat(l.RefillInterval, l.RefillAmount))
	q := new(big.Int).Quo(t.Num(), t.Denom())
	if new(big.Rat).SetInt(q).Cmp(t) < 0 {
		q.Add(q, big.NewInt(1))
	}
	return q.Int64()
}

// Do applies one call.
func (m *TokenBucket) Do(c Call) Reply {
	if c.Count < 0 {
		m.forget()
		caps := make([]int64, len(m.Limits))
		for i, l := range m.Limits {
			caps[i] = l.Capacity
		}
		return fresh(caps)
	}
	behind := m.BehindCounts && len(m.Limits) == 1
	if m.exists && !m.KeepsStale && m.stale(c, behind) {
		m.forget()
	}
	stamp := c.Now
	beyond := false // behind, below the floor: record nothing
	levels := make([]*big.Rat, len(m.Limits))
	raw := make([]*big.Rat, len(m.Limits)) // levels not floored (a settle's base)
	for i, l := range m.Limits {
		levels[i] = big.NewRat(l.Capacity, 1)
		raw[i] = big.NewRat(l.Capacity, 1)
		if m.exists {
			if !behind {
				stamp = max(stamp, m.stamp)
			}
			elapsed := stamp - m.stamp // < 0 only when behind counts
			refill := new(big.Rat).SetFrac(
				new(big.Int).Mul(big.NewInt(elapsed), big.NewInt(l.RefillAmount)),
				big.NewInt(l.RefillInterval))
			lv := new(big.Rat).Add(m.tokens[i], refill)
			if lv.Cmp(levels[i]) < 0 {
				levels[i] = lv
				raw[i] = new(big.Rat).Set(lv)
			}
			if floor := big.NewRat(-l.Capacity, 1); levels[i].Cmp(floor) < 0 {
				levels[i], beyond = floor, true
			}
		}
	}
	// v7: the reservations held cap every bucket's refill (see hold).
	if bounds := m.hold(c.Now, stamp); bounds != nil {
		for i := range m.Limits {
			if levels[i].Cmp(bounds[i]) > 0 {
				levels[i] = new(big.Rat).Set(bounds[i])
			}
			if raw[i].Cmp(bounds[i]) > 0 {
				raw[i] = new(big.Rat).Set(bounds[i])
			}
		}
	}
	switch c.Op {
	case OpReserve:
		if _, ok := m.reserved.live(c.ID, c.Now); ok {
			// Held already (a reserve retried): nothing recorded; the reply
			// of an admission, read as a peek.
			return decide(true, m.outcomes(c, stamp, levels, 1))
		}
		wasHashed := m.hashed
		prev := m.ttl
		reply, recorded, resetAfter := m.decide(c, stamp, levels, beyond, c.Count, 0)
		if recorded && m.reserved.room(c.ID, c.Now) {
			if m.reserved == nil {
				m.reserved = reservations{}
			}
			m.reserved[c.ID] = reservation{expiry: c.Now + c.Lifetime, estimate: c.Count}
			m.hashed = true
			// The key outlives the last hold's end and the refill after it:
			// the lifetime and the time the held units take to refill.
			m.ttl = ttlMillis(c.Unit, max(resetAfter, c.Lifetime+m.refillTime(m.held(c.Now))))
			if wasHashed {
				m.ttl = max(m.ttl, prev)
			}
		}
		return reply
	case OpSettle:
		r, ok := m.reserved.live(c.ID, c.Now)
		if !ok {
			reply, _, _ := m.decide(c, stamp, levels, beyond, 0, 0)
			return notApplied(reply)
		}
		for i, l := range m.Limits {
			lv := raw[i]
			if diff := r.estimate - c.Count; diff > 0 {
				// A refund, capped at capacity.
				lv.Add(lv, big.NewRat(diff, 1))
				if full := big.NewRat(l.Capacity, 1); lv.Cmp(full) > 0 {
					lv = full
				}
			} else if floor := big.NewRat(-l.Capacity, 1); diff < 0 && lv.Cmp(floor) >= 0 {
				// A charge, never denied, down to -capacity.
				lv.Sub(lv, big.NewRat(-diff, 1))
				if lv.Cmp(floor) < 0 {
					lv = floor
				}
			}
			raw[i] = lv
		}
		delete(m.reserved, c.ID)
		m.dropExpired(c.Now)
		m.stamp, m.tokens = stamp, raw
		after := make([]*big.Rat, len(m.Limits))
		for i, l := range m.Limits {
			after[i] = new(big.Rat).Set(raw[i])
			if floor := big.NewRat(-l.Capacity, 1); after[i].Cmp(floor) < 0 {
				after[i] = floor
			}
		}
		outcomes := m.outcomes(c, stamp, after, 1)
		var resetAfter int64
		allowed := true
		for i, o := range outcomes {
			resetAfter = max(resetAfter, o.reset)
			if after[i].Cmp(big.NewRat(1, 1)) < 0 {
				allowed = false
			}
		}
		ttl := ttlMillis(c.Unit, resetAfter)
		if len(m.reserved) == 0 {
			// The last reservation: the state is v6's again, or none when
			// every bucket is full (fresh).
			m.hashed, m.ttl = false, ttl
			if resetAfter == 0 {
				m.forget()
			}
		} else {
			m.ttl = max(m.ttl, ttl)
		}
		return decide(allowed, outcomes)
	}
	reply, _, _ := m.decide(c, stamp, levels, beyond, c.Count, c.Mode)
	return reply
}

// forget drops the state and its reservations.
func (m *TokenBucket) forget() {
	m.exists, m.tokens, m.reserved, m.hashed = false, nil, nil, false
}

// decide decides count tokens at stamp from levels in mode, records them
// when it should and returns the reply, whether it recorded and the
// reset_after it wrote.
func (m *TokenBucket) decide(c Call, stamp int64, levels []*big.Rat, beyond bool, count int64, mode int) (Reply, bool, int64) {
	asked := max(count, 1)
	allowed := true
	for i, l := range m.Limits {
		if asked > l.Capacity || levels[i].Cmp(big.NewRat(asked, 1)) < 0 {
			allowed = false
		}
	}
	record := count > 0 && (allowed || mode == 1) && !beyond
	if record {
		for i, l := range m.Limits {
			levels[i].Sub(levels[i], big.NewRat(count, 1))
			if floor := big.NewRat(-l.Capacity, 1); levels[i].Cmp(floor) < 0 {
				levels[i] = floor
			}
		}
	}
	outcomes := m.outcomes(c, stamp, levels, asked)
	var resetAfter int64
	for _, o := range outcomes {
		resetAfter = max(resetAfter, o.reset)
	}
	if record {
		ttl := ttlMillis(c.Unit, resetAfter)
		// A write drops the reservations expired at now; a key left
		// holding none is v6's string again.
		m.dropExpired(c.Now)
		if m.hashed && len(m.reserved) > 0 {
			// A state with reservations: its TTL never shortens.
			ttl = max(ttl, m.ttl)
		} else {
			m.hashed = false
		}
		m.exists, m.stamp, m.tokens = true, stamp, levels
		m.ttl = ttl
	}
	return decide(allowed, outcomes), record, resetAfter
}

// outcomes are the limits' outcomes for asked tokens at levels.
func (m *TokenBucket) outcomes(c Call, stamp int64, levels []*big.Rat, asked int64) []outcome {
	outcomes := make([]outcome, len(m.Limits))
	for i, l := range m.Limits {
		o := &outcomes[i]
		if levels[i].Sign() > 0 {
			o.remaining = new(big.Int).Quo(levels[i].Num(), levels[i].Denom()).Int64()
		}
		if asked > l.Capacity {
			o.retry = -1
		} else if w := waitFor(levels[i], asked, l); w > 0 {
			o.retry = clampDuration(stamp + w - c.Now)
		}
		if w := waitFor(levels[i], l.Capacity, l); w > 0 {
			o.reset = clampDuration(stamp + w - c.Now)
		}
	}
	return outcomes
}

// Horizon is a bucket's refill horizon, the time an empty bucket takes to
// fill: ceil(Capacity * RefillInterval / RefillAmount).
func (l TokenBucketLimit) Horizon() int64 {
	return ceilDiv(l.Capacity*l.RefillInterval, l.RefillAmount)
}

// stale reports whether the state is stale for call c (v6). With two or
// more limits (or behind unset): by Stale, the widest window being the
// widest Horizon. With one limit whose now behind counts: when the deficit
// read at max(now, the server's clock), (last - t) * RefillAmount +
// (Capacity - tokens) * RefillInterval, exceeds 3 * Capacity *
// RefillInterval: the bucket is full again more than three horizons
// ahead, so its last write lies more than one horizon ahead (the script
// keeps no time of the last write but this deficit).
func (m *TokenBucket) stale(c Call, behind bool) bool {
	if !behind {
		var widest int64
		for _, l := range m.Limits {
			widest = max(widest, l.Horizon())
		}
		return Stale(c, m.stamp, widest)
	}
	l := m.Limits[0]
	t := max(c.Now, c.Server)
	deficit := new(big.Rat).Sub(big.NewRat(l.Capacity, 1), m.tokens[0])
	deficit.Mul(deficit, big.NewRat(l.RefillInterval, 1))
	ahead := new(big.Int).Mul(big.NewInt(m.stamp-t), big.NewInt(l.RefillAmount))
	deficit.Add(deficit, new(big.Rat).SetInt(ahead))
	bound := new(big.Int).Mul(big.NewInt(3*l.Capacity), big.NewInt(l.RefillInterval))
	return deficit.Cmp(new(big.Rat).SetInt(bound)) > 0
}

// dropExpired forgets the reservations expired at now (their expiry at or
// before now), as every write of the script drops them: their holds ended
// and are in the tokens written.
func (m *TokenBucket) dropExpired(now int64) {
	for id, r := range m.reserved {
		if r.expiry <= now {
			delete(m.reserved, id)
		}
	}
}

// held is O, the units the live reservations hold at now: the sum of the
// estimates of those whose expiry is after now.
func (m *TokenBucket) held(now int64) int64 {
	var o int64
	for _, r := range m.reserved {
		if r.expiry > now {
			o += r.estimate
		}
	}
	return o
}

// refillTime is the longest time any bucket takes to refill o tokens,
// rounded up to a whole unit.
func (m *TokenBucket) refillTime(o int64) int64 {
	var t int64
	for _, l := range m.Limits {
		t = max(t, ceilDiv(o*l.RefillInterval, l.RefillAmount))
	}
	return t
}

// hold returns, for each bucket, the most tokens it may hold at stamp
// under v7's rule (issue 32), or nil when the state holds no reservation:
// a reservation holds its units in the bucket from its reserve until it
// is settled or expires, so the refill stops at capacity - O, O the sum
// of the estimates held (tokens + O <= capacity). O is the held units at
// now; a reservation expired at e (e <= now, not yet dropped by a write)
// held its units until e, so the bucket is at most capacity - O(e-) at
// e, O(e-) the estimates of the reservations whose expiry is at or after
// e, and refills from there: capacity - O(e-) + (stamp - e) * rate. The
// bound is the least of these, never below -capacity (the floor of a
// bucket). The drop at each write keeps it exact: every reservation held
// was recorded before each expiry e still held (a write at or after e
// would have dropped it), so O(e-) counts only reservations held at e.
//
// Why no span admits more than capacity + rate * (b - a) when the units
// of a reservation are admitted anywhere between its reserve and its
// settle (the admission view A: a bucket B of the same capacity and rate
// from which each unit is taken at its admission): let T be the tokens
// here and U the units held but not yet admitted (U <= O). T <= B - U
// holds at every moment: a plain admission or a reserve takes as much
// from both sides, a held unit admitted moves one unit from U to B's
// takings, a settle whose actual cost is the units admitted gives back to
// T what leaves U, an expiry only lowers U, and T refills only while T <
// capacity - O <= capacity - U, that is while B < capacity when the
// two sides are equal, so B refills then too. B - U never falls below 0
// (a plain admission or a reserve needs T >= n, so B - U >= n), hence
// B >= U >= 0 at every admission of a held unit and B >= 0 always:
// admissions in [a, b] are at most B(a) + rate * (b - a) <= capacity +
// rate * (b - a). (A settle's overrun is charged, never denied: units
// admitted past the estimate are debt, outside this bound.)
func (m *TokenBucket) hold(now, stamp int64) []*big.Rat {
	if len(m.reserved) == 0 {
		return nil
	}
	o := m.held(now)
	var expired []reservation
	for _, r := range m.reserved {
		if r.expiry <= now {
			expired = append(expired, r)
		}
	}
	// Latest expiry first: O(e-) adds up as the expiries go back.
	slices.SortFunc(expired, func(a, b reservation) int { return cmp.Compare(b.expiry, a.expiry) })
	bounds := make([]*big.Rat, len(m.Limits))
	for i, l := range m.Limits {
		capacity := big.NewRat(l.Capacity, 1)
		bound := new(big.Rat).Sub(capacity, big.NewRat(o, 1))
		acc := o
		for _, r := range expired {
			acc += r.estimate
			at := new(big.Rat).Sub(capacity, big.NewRat(acc, 1))
			at.Add(at, new(big.Rat).SetFrac(
				new(big.Int).Mul(big.NewInt(stamp-r.expiry), big.NewInt(l.RefillAmount)),
				big.NewInt(l.RefillInterval)))
			if at.Cmp(bound) < 0 {
				bound = at
			}
		}
		if floor := big.NewRat(-l.Capacity, 1); bound.Cmp(floor) < 0 {
			bound = floor
		}
		bounds[i] = bound
	}
	return bounds
}
