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
	exists       bool
	stamp        int64
	tokens       []*big.Rat
	ttl          int64
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
	stamp := c.Now
	behind := m.BehindCounts && len(m.Limits) == 1
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
