package ratelua

import (
	"context"
	"errors"
	"time"

	"github.com/ratelua/ratelua/internal/keyslot"
	"github.com/ratelua/ratelua/internal/model"
)

// decision is one call on its way through what the options add around
// the round trip: the deny cache and the fallback before it, the fallback
// and the deny cache after it, then DryRun and the hook.
type decision struct {
	eventKey string
	n        int64
	start    time.Time // when the call began, zero when nothing needs it
	at       time.Time // the time of the decision: the Clock's reading, or start
	slot     int       // the state key's hash slot, -1 when not followed
	probe    bool      // this call asks the server for the fallback

	r     Result
	err   error
	cause error  // for the hook when err is nil: the failure the fallback answered
	kind  string // "" for kindOf(r, err)
	local bool
}

// begin starts a decision of n events of eventKey, reading the clocks
// once; now is the script's now argument.
func (l *Limiter) begin(eventKey string, n int64) (d decision, now string, err error) {
	d = decision{eventKey: eventKey, n: n, slot: -1}
	if l.observe != nil || l.fallback != nil || l.deny != nil {
		d.start = time.Now()
	}
	d.at = d.start
	if l.clock != nil {
		d.at = l.clock()
		now, err = l.nowOf(d.at)
	}
	return d, now, err
}

// around is call with the options that work around the round trip.
func (l *Limiter) around(ctx context.Context, eventKey string, n int64) (Result, error) {
	d, now, err := l.begin(eventKey, n)
	if n < 0 {
		// A reset: forget the key here too; not a decision.
		if l.deny != nil {
			l.deny.forget(eventKey)
		}
		if l.fallback != nil {
			l.fallback.forget(eventKey)
		}
		if err != nil {
			return l.failed(err)
		}
		return l.ask(ctx, eventKey, n, now)
	}
	if err != nil {
		d.r, d.err = l.failed(err)
		d.local = true
		return l.finish(ctx, &d)
	}
	if !l.answerLocally(ctx, &d) {
		r, err := l.ask(ctx, eventKey, n, now)
		l.settle(ctx, &d, r, err)
	}
	return l.finish(ctx, &d)
}

// refuse is the failed decision of n events for an argument refused in Go.
func (l *Limiter) refuse(ctx context.Context, n int64, err error) (Result, error) {
	if !l.extras {
		return l.failed(err)
	}
	d := decision{n: n, slot: -1, local: true}
	if l.observe != nil {
		d.start = time.Now()
	}
	d.r, d.err = l.failed(err)
	return l.finish(ctx, &d)
}

// answerLocally decides d in the process when the deny cache knows the
// server's answer, or the fallback answers without asking; else it says
// whether the call is the fallback's probe.
func (l *Limiter) answerLocally(ctx context.Context, d *decision) bool {
	if ctx.Err() != nil {
		// Never sent: the caller's doing, not the server's.
		return false
	}
	if l.deny != nil {
		if r, ok := l.deny.answer(d.eventKey, max(d.n, 1), l.denyTime(d.at), l.unit); ok {
			d.r, d.local = r, true
			return true
		}
	}
	if l.fallback != nil {
		d.slot = int(keyslot.CRC16(escapeTag(d.eventKey)) % keyslot.NumSlots)
		local, probe := l.fallback.route(d.slot, d.start)
		if local {
			l.fallbackDecide(d, nil)
			d.local = true
			return true
		}
		d.probe = probe
	}
	return false
}

// settle takes the server's answer r, err to d: on no answer, the
// fallback may decide; a denial with a wait goes to the deny cache.
func (l *Limiter) settle(ctx context.Context, d *decision, r Result, err error) {
	d.r, d.err = r, err
	if l.fallback != nil && d.slot >= 0 {
		end := time.Now()
		if noAnswer(err) {
			use, entered, unanswered := l.fallback.fail(d.slot, d.probe, d.start, end)
			if entered && l.observe != nil {
				l.emit(ctx, Event{Kind: KindFallbackEnter, Err: err, Latency: unanswered, Result: Result{Limit: -1}})
			}
			if use {
				l.fallbackDecide(d, err)
				return
			}
		} else if left, used := l.fallback.answer(d.slot, d.probe, end); left && l.observe != nil {
			l.emit(ctx, Event{Kind: KindFallbackLeave, Latency: used, Result: Result{Limit: -1}})
		}
	}
	if l.deny != nil && err == nil && !r.Allowed && r.RetryAfter > 0 {
		var slack time.Duration
		if l.clock == nil {
			// The server read its clock after d.start and rounded it down.
			slack = l.unit.size
		}
		l.deny.put(d.eventKey, max(d.n, 1), l.denyTime(d.at), slack, r)
	}
}

// fallbackDecide has the fallback decide d; cause is the failure it
// answers for, nil when the server was not asked.
func (l *Limiter) fallbackDecide(d *decision, cause error) {
	mode := 0
	if l.mode == "1" {
		mode = 1
	}
	ints := l.fallback.decide(d.eventKey, model.Call{Count: d.n, Now: l.unit.now(d.at), Mode: mode, Unit: l.unit.name})
	d.r, d.err, d.cause, d.kind = resultOf(ints[:], l.unit), nil, cause, KindFallback
}

// finish applies DryRun to d, tells the hook, and returns d's answer.
func (l *Limiter) finish(ctx context.Context, d *decision) (Result, error) {
	kind := d.kind
	if kind == "" {
		kind = kindOf(d.r, d.err)
	}
	if l.dryRun && !d.r.Allowed {
		d.r.Allowed = true
		if d.err == nil {
			d.r.DryRunDenied = true
			if kind == KindDenied {
				kind = KindDryRun
			}
		}
	}
	if l.observe != nil {
		cause := d.err
		if cause == nil {
			cause = d.cause
		}
		l.emit(ctx, Event{Kind: kind, N: d.n, Result: d.r, Err: cause, Latency: time.Since(d.start), Local: d.local})
	}
	return d.r, d.err
}

// denyTime is the deny cache's time of a decision at t: with a Clock, its
// reading rounded down to the unit, as the script reads it; else t, the
// process's clock when the call began.
func (l *Limiter) denyTime(t time.Time) time.Time {
	if l.clock == nil {
		return t
	}
	return t.Truncate(l.unit.size)
}

// noAnswer reports an error of a call that got no answer, the only one
// FailOpen admits and the fallback answers for.
func noAnswer(err error) bool {
	var se *ServerError
	return errors.Is(err, ErrUnavailable) && !errors.As(err, &se)
}
