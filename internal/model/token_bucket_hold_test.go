package model

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// batch is one hot-key batch of the hold property test: reserved at d,
// its used units admitted at times in [d, s], settled at s with the units
// used (or never, when its holder dies: it expires).
type batch struct {
	id, s, used int64
	dies        bool
}

// batches is a min-heap of batches by settle time.
type batches []batch

func (b batches) Len() int           { return len(b) }
func (b batches) Less(i, j int) bool { return b[i].s < b[j].s }
func (b batches) Swap(i, j int)      { b[i], b[j] = b[j], b[i] }
func (b *batches) Push(x any)        { *b = append(*b, x.(batch)) }
func (b *batches) Pop() any {
	old := *b
	x := old[len(old)-1]
	*b = old[:len(old)-1]
	return x
}

// overSpan returns a description of the first span [a, b] of admission
// times (sorted) in which more units were admitted than capacity + the
// refill of b - a for some limit, or "" when there is none.
func overSpan(times []int64, limits []TokenBucketLimit) string {
	for _, l := range limits {
		for i := range times {
			for j := i; j < len(times); j++ {
				// (j - i + 1) units in [times[i], times[j]] against
				// capacity + (b - a) * amount / interval, in units of 1/interval.
				n := int64(j - i + 1)
				if n*l.RefillInterval > l.Capacity*l.RefillInterval+(times[j]-times[i])*l.RefillAmount {
					return fmt.Sprintf("%d admissions in [%d, %d] under %+v: more than capacity + refill %d/%d",
						n, times[i], times[j], l, (times[j]-times[i])*l.RefillAmount, l.RefillInterval)
				}
			}
		}
	}
	return ""
}

// holdSequence runs one random sequence on m: plain calls of 1 to 3
// units, and hot-key batches reserved at d whose used units are admitted
// at random times in [d, s] and settled at s with the units used (some
// never settled: their holders die and the reservations expire). It
// returns the admission times, sorted.
func holdSequence(r *rand.Rand, m *TokenBucket, capacity int64) []int64 {
	var admitted []int64
	var open batches
	now, next := int64(1000), int64(1)
	const lifetime = 120 // the server's lifetime of a reservation (ms)
	for step := 0; step < 300; step++ {
		now += r.Int64N(8)
		// The settles due first, in time order.
		for open.Len() > 0 && open[0].s <= now {
			b := heap.Pop(&open).(batch)
			if !b.dies {
				m.Do(Call{Op: OpSettle, ID: b.id, Count: b.used, Now: b.s, Unit: "ms"})
			}
		}
		switch p := r.IntN(10); {
		case p < 5:
			n := 1 + r.Int64N(3)
			if m.Do(Call{Count: n, Now: now, Unit: "ms"}).Allowed == 1 {
				for range n {
					admitted = append(admitted, now)
				}
			}
		case p < 9:
			k := 1 + r.Int64N(capacity)
			id := next
			next++
			if m.Do(Call{Op: OpReserve, ID: id, Lifetime: lifetime, Count: k, Now: now, Unit: "ms"}).Allowed != 1 {
				continue
			}
			// The client's lifetime is shorter than the server's.
			b := batch{id: id, s: now + r.Int64N(lifetime-20), used: r.Int64N(k + 1), dies: r.IntN(8) == 0}
			for range b.used {
				admitted = append(admitted, now+r.Int64N(b.s-now+1))
			}
			heap.Push(&open, b)
		default:
			m.Do(Call{Count: 0, Now: now, Unit: "ms"})
		}
	}
	slices.Sort(admitted)
	return admitted
}

// TestTokenBucketHoldKeepsEverySpan is issue 32's property for
// token_bucket v7: with reservations holding their units until settled
// (or expired), the units of hot-key batches admitted anywhere in [d, s],
// with the plain calls, never exceed capacity + the refill of any span of
// admission times, for every limit. (Under the rule before, a settled or
// refilled bucket admitted again while a batch's units were still to be
// admitted.)
func TestTokenBucketHoldKeepsEverySpan(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 7))
	for seq := 0; seq < 300; seq++ {
		capacity := 2 + r.Int64N(20)
		limits := []TokenBucketLimit{{Capacity: capacity, RefillAmount: 1 + r.Int64N(3), RefillInterval: 1 + r.Int64N(20)}}
		if seq%3 == 0 {
			limits = append(limits, TokenBucketLimit{Capacity: 2 * capacity, RefillAmount: 1, RefillInterval: 1 + r.Int64N(40)})
		}
		m := &TokenBucket{Limits: limits, BehindCounts: true, Reserves: true}
		times := holdSequence(r, m, capacity)
		if msg := overSpan(times, limits); msg != "" {
			t.Fatalf("sequence %d: %s", seq, msg)
		}
	}
}
