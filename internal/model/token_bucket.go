package model

import "math/big"

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
	exists     bool
	stamp      int64
	tokens     []*big.Rat
	ttl        int64
}

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
		m.exists, m.tokens = false, nil
		caps := make([]int64, len(m.Limits))
		for i, l := range m.Limits {
			caps[i] = l.Capacity
		}
		return fresh(caps)
	}
	behind := m.BehindCounts && len(m.Limits) == 1
	if m.exists && !m.KeepsStale && m.stale(c, behind) {
		m.exists, m.tokens = false, nil
	}
	stamp := c.Now
	beyond := false // behind, below the floor: record nothing
	levels := make([]*big.Rat, len(m.Limits))
	for i, l := range m.Limits {
		levels[i] = big.NewRat(l.Capacity, 1)
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
			}
			if floor := big.NewRat(-l.Capacity, 1); levels[i].Cmp(floor) < 0 {
				levels[i], beyond = floor, true
			}
		}
	}
	asked := max(c.Count, 1)
	allowed := true
	for i, l := range m.Limits {
		if asked > l.Capacity || levels[i].Cmp(big.NewRat(asked, 1)) < 0 {
			allowed = false
		}
	}
	record := c.Count > 0 && (allowed || c.Mode == 1) && !beyond
	if record {
		for i, l := range m.Limits {
			levels[i].Sub(levels[i], big.NewRat(c.Count, 1))
			if floor := big.NewRat(-l.Capacity, 1); levels[i].Cmp(floor) < 0 {
				levels[i] = floor
			}
		}
	}
	outcomes := make([]outcome, len(m.Limits))
	var resetAfter int64
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
		resetAfter = max(resetAfter, o.reset)
	}
	if record {
		m.exists, m.stamp, m.tokens = true, stamp, levels
		m.ttl = ttlMillis(c.Unit, resetAfter)
	}
	return decide(allowed, outcomes)
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
