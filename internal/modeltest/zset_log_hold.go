package modeltest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/ratelua/ratelua/internal/model"
)

// logAdmission is n units admitted at time t (the admission view).
type logAdmission struct{ t, n int64 }

// logLease is a reservation a holder took at d: it admits its units locally
// at times in [d, s] and settles what it used at s, or dies and never
// settles (its units admitted at times up to its expiry).
type logLease struct {
	id, d, s, estimate, used int64
	dies                     bool
}

// ZSetLogHoldLimits draws the limits of a ZSetLogHoldViolation run: one, or two whose
// second is wider and larger.
func ZSetLogHoldLimits(r *rand.Rand) []model.ZSetLogLimit {
	limits := []model.ZSetLogLimit{{Max: 3 + r.Int64N(20), Window: 5 + r.Int64N(60)}}
	if r.IntN(2) == 0 {
		limits = append(limits, model.ZSetLogLimit{Max: limits[0].Max + 1 + r.Int64N(30), Window: limits[0].Window + 1 + r.Int64N(200)})
	}
	return limits
}

// ZSetLogHoldViolation is the proof obligation of the hold rule (issue 32) as a
// run: steps random plain calls (modes 0 and 1), peeks and reserves,
// through do (a script or its model, limits as given, unit ms, caller
// times that never go back), each admitted reservation's units admitted
// at random times in [reserve, settle] (or up to its expiry for a holder
// that dies without settling), then settled with the units used at its
// settle time. It returns "" when in every window (t - window, t] of every
// limit the admissions are at most its max, else the first window past
// it and the last calls.
func ZSetLogHoldViolation(r *rand.Rand, limits []model.ZSetLogLimit, steps int, do func(model.Call) model.Reply) string {
	var widest int64
	for _, l := range limits {
		widest = max(widest, l.Window)
	}
	var admitted []logAdmission
	var open []logLease
	var calls []string
	call := func(c model.Call) model.Reply {
		c.Unit, c.Server = "ms", 1<<40
		reply := do(c)
		calls = append(calls, fmt.Sprintf("%d %d %s -> %v", c.Count, c.Now, logMode(c), reply.Ints()))
		return reply
	}
	now, nextID := int64(1000), int64(1)
	for range steps {
		now += r.Int64N(widest/4 + 2)
		// The settles due by now, in time order, each at its time.
		slices.SortFunc(open, func(a, b logLease) int { return cmp.Compare(a.s, b.s) })
		for len(open) > 0 && open[0].s <= now {
			b := open[0]
			open = open[1:]
			if !b.dies {
				call(model.Call{Op: model.OpSettle, ID: b.id, Count: b.used, Now: b.s})
			}
		}
		switch p := r.IntN(10); {
		case p < 5:
			n := 1 + r.Int64N(3)
			if call(model.Call{Count: n, Now: now, Mode: r.IntN(2)}).Allowed == 1 {
				admitted = append(admitted, logAdmission{now, n})
			}
		case p < 6:
			call(model.Call{Count: 0, Now: now})
		default:
			lifetime := 1 + r.Int64N(2*widest)
			b := logLease{id: nextID, d: now, estimate: 1 + r.Int64N(limits[0].Max), dies: r.IntN(8) == 0}
			nextID++
			if call(model.Call{Op: model.OpReserve, ID: b.id, Count: b.estimate, Lifetime: lifetime, Now: now}).Allowed != 1 {
				continue
			}
			// A holder settles before its lifetime ends (s < expiry); one
			// that dies admits until its expiry at the latest.
			b.s = now + r.Int64N(lifetime)
			last := b.s
			if b.dies {
				last = now + lifetime
			}
			b.used = r.Int64N(b.estimate + 1)
			for range b.used {
				admitted = append(admitted, logAdmission{b.d + r.Int64N(last-b.d+1), 1})
			}
			open = append(open, b)
		}
	}
	slices.SortFunc(admitted, func(a, b logAdmission) int { return cmp.Compare(a.t, b.t) })
	for _, l := range limits {
		// Every window (x - Window, x] that ends at an logAdmission: the
		// fullest window ends at one.
		for i, end := range admitted {
			var n int64
			for j := i; j >= 0 && admitted[j].t > end.t-l.Window; j-- {
				n += admitted[j].n
			}
			if n > l.Max {
				calls = calls[max(0, len(calls)-60):]
				return fmt.Sprintf("%d admitted in (%d, %d], limit %+v; the last calls (count, now, mode):\n%s",
					n, end.t-l.Window, end.t, l, strings.Join(calls, "\n"))
			}
		}
	}
	return ""
}

// logMode is a call's ARGV[4].
func logMode(c model.Call) string {
	switch c.Op {
	case model.OpReserve:
		return fmt.Sprintf("reserve:%d:%d", c.ID, c.Lifetime)
	case model.OpSettle:
		return fmt.Sprintf("settle:%d", c.ID)
	}
	return fmt.Sprint(c.Mode)
}
