package model

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// admission is n units admitted at time t (the admission view).
type admission struct{ t, n int64 }

// batch is a reservation a holder took at d: it admits its units locally
// at times in [d, s] and settles what it used at s, or dies and never
// settles (its units admitted at times up to its expiry).
type batch struct {
	id, d, s, estimate, used int64
	dies                     bool
}

// TestZSetLogHoldsUntilSettled is the proof obligation of the hold rule
// (issue 32) for zset_log v7 at the model's level: random plain calls
// (modes 0 and 1) and reserves, each admitted reservation's units admitted
// at random times in [reserve, settle] (or up to its expiry for a holder
// that dies without settling), then settled with the units used: in every
// window (t - window, t] of every limit the admissions never exceed its
// max. Under v7's first rule (a reservation debited at its reserve's time,
// its unused units refunded there) this fails: a unit admitted after its
// reserve's time left the window was counted nowhere.
func TestZSetLogHoldsUntilSettled(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 2026))
	for seq := range 300 {
		limits := []ZSetLogLimit{{Max: 3 + r.Int64N(20), Window: 5 + r.Int64N(60)}}
		if r.IntN(2) == 0 {
			limits = append(limits, ZSetLogLimit{Max: limits[0].Max + 1 + r.Int64N(30), Window: limits[0].Window + 1 + r.Int64N(200)})
		}
		var widest int64
		for _, l := range limits {
			widest = max(widest, l.Window)
		}
		m := &ZSetLog{Limits: limits, Reserves: true}
		var admitted []admission
		var open []batch
		var log []string
		do := func(c Call) Reply {
			c.Unit, c.Server = "ms", 1<<40
			reply := m.Do(c)
			log = append(log, fmt.Sprintf("%+v -> %v", c, reply.Ints()))
			return reply
		}
		now, nextID := int64(1000), int64(1)
		for range 600 {
			now += r.Int64N(widest/4 + 2)
			// The settles due by now, in time order, each at its time.
			slices.SortFunc(open, func(a, b batch) int { return int(a.s - b.s) })
			for len(open) > 0 && open[0].s <= now {
				b := open[0]
				open = open[1:]
				if !b.dies {
					do(Call{Op: OpSettle, ID: b.id, Count: b.used, Now: b.s})
				}
			}
			switch p := r.IntN(10); {
			case p < 5:
				n := 1 + r.Int64N(3)
				if reply := do(Call{Count: n, Now: now, Mode: r.IntN(2)}); reply.Allowed == 1 {
					admitted = append(admitted, admission{now, n})
				}
			case p < 6:
				do(Call{Count: 0, Now: now})
			default:
				lifetime := 1 + r.Int64N(2*widest)
				b := batch{id: nextID, d: now, estimate: 1 + r.Int64N(limits[0].Max), dies: r.IntN(8) == 0}
				nextID++
				if do(Call{Op: OpReserve, ID: b.id, Count: b.estimate, Lifetime: lifetime, Now: now}).Allowed != 1 {
					continue
				}
				// A holder settles before its lifetime ends (s < expiry);
				// one that dies admits until its expiry at the latest.
				b.s = now + r.Int64N(lifetime)
				last := b.s
				if b.dies {
					last = now + lifetime
				}
				b.used = r.Int64N(b.estimate + 1)
				for range b.used {
					admitted = append(admitted, admission{b.d + r.Int64N(last-b.d+1), 1})
				}
				open = append(open, b)
			}
		}
		slices.SortFunc(admitted, func(a, b admission) int { return int(a.t - b.t) })
		for _, l := range limits {
			// Every window (x - Window, x] that ends at an admission.
			for i, end := range admitted {
				var n int64
				for j := i; j >= 0 && admitted[j].t > end.t-l.Window; j-- {
					n += admitted[j].n
				}
				if n > l.Max {
					if len(log) > 60 {
						log = log[len(log)-60:]
					}
					t.Fatalf("seq %d: %d admitted in (%d, %d], limit %+v\nlast calls:\n%v", seq, n, end.t-l.Window, end.t, l, joinLines(log))
				}
			}
		}
	}
}

func joinLines(lines []string) string {
	out := ""
	for _, l := range lines {
		out += l + "\n"
	}
	return out
}
