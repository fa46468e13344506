package model

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
)

// swBatch is a reservation a sliding_window hold test took: its units
// are admitted at times in [reserved, settle] (settle past expiry: never
// settled, admitted until expiry, as a process that died).
type swBatch struct {
	id, reserved, expiry, settle, used int64
}

// TestSlidingWindowHoldsUntilSettled is the proof obligation of issue 32
// (doc of SlidingWindow) at model level: over random plain calls, reserves
// and settles on non-decreasing clocks, a reservation's used units
// admitted at random times in [reserve, settle] (or [reserve, expiry] when
// it is never settled) and every allowed plain event at its call's time,
// no limit admits more than its max in any window it checks: at every
// admission time a, the units admitted at times <= a in the buckets b >
// floor((a - duration) / resolution) are at most max. (The rule that
// debits a reservation at its reserve alone, v7 before issue 32, fails
// it: a unit admitted after the reserve's bucket left a window is in a
// window that counts no debit of it.)
func TestSlidingWindowHoldsUntilSettled(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		if msg := holdRun(seed); msg != "" {
			t.Fatalf("seed %d: %s", seed, msg)
		}
	}
}

// holdRun runs one random sequence and returns what went wrong, or "".
func holdRun(seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 32))
	n := 1 + r.IntN(3)
	limits := make([]SlidingWindowLimit, n)
	for i := range limits {
		d := 1 + r.Int64N(40)
		limits[i] = SlidingWindowLimit{Max: 2 + r.Int64N(15), Duration: d, Resolution: 1 + r.Int64N(d)}
	}
	m := &SlidingWindow{Limits: limits, Reserves: true}
	var admitted []int64 // admission times
	var open []swBatch
	var log []string
	now := int64(1000)
	nextID := int64(1)
	for step := 0; step < 300; step++ {
		now += r.Int64N(4)
		// The settles due by now, in order of their times.
		sort.Slice(open, func(i, j int) bool { return open[i].settle < open[j].settle })
		for len(open) > 0 && open[0].settle <= now {
			b := open[0]
			open = open[1:]
			if b.settle < b.expiry {
				got := m.Do(Call{Op: OpSettle, ID: b.id, Count: b.used, Now: b.settle, Unit: "ms"})
				log = append(log, fmt.Sprintf("settle %d used %d at %d: %v", b.id, b.used, b.settle, got.Ints()))
			}
		}
		switch k := r.IntN(10); {
		case k < 4:
			count, mode := 1+r.Int64N(3), r.IntN(2)
			got := m.Do(Call{Count: count, Now: now, Mode: mode, Unit: "ms"})
			log = append(log, fmt.Sprintf("%d mode %d at %d: %v", count, mode, now, got.Ints()))
			if got.Allowed == 1 {
				for range count {
					admitted = append(admitted, now)
				}
			}
		case k < 9:
			estimate, lifetime := 1+r.Int64N(6), 1+r.Int64N(30)
			id := nextID
			nextID++
			got := m.Do(Call{Op: OpReserve, ID: id, Lifetime: lifetime, Count: estimate, Now: now, Unit: "ms"})
			log = append(log, fmt.Sprintf("reserve %d of %d at %d for %d: %v", id, estimate, now, lifetime, got.Ints()))
			if got.Allowed != 1 {
				break
			}
			b := swBatch{id: id, reserved: now, expiry: now + lifetime, settle: now + r.Int64N(lifetime+5)}
			until := b.settle
			if b.settle >= b.expiry {
				until = b.expiry // never settled: used until it expires
				b.used = estimate
			} else {
				b.used = r.Int64N(estimate + 1)
			}
			for range b.used {
				admitted = append(admitted, b.reserved+r.Int64N(until-b.reserved+1))
			}
			open = append(open, b)
		default:
			got := m.Do(Call{Count: 0, Now: now, Unit: "ms"})
			log = append(log, fmt.Sprintf("peek at %d: %v", now, got.Ints()))
		}
	}
	sort.Slice(admitted, func(i, j int) bool { return admitted[i] < admitted[j] })
	for _, l := range limits {
		for _, a := range admitted {
			low := floorDiv(a-l.Duration, l.Resolution)
			var in int64
			for _, u := range admitted {
				if u <= a && floorDiv(u, l.Resolution) > low {
					in++
				}
			}
			if in > l.Max {
				tail := log
				if len(tail) > 40 {
					tail = tail[len(tail)-40:]
				}
				return fmt.Sprintf("limit %+v: %d units admitted in the window at %d (buckets > %d)\n%v",
					l, in, a, low, tail)
			}
		}
	}
	return ""
}
