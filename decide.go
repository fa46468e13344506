package ratelua

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratelua/ratelua/internal/decide"
	"github.com/ratelua/ratelua/internal/wire"
)

// Check is one decision of Decide: N events of Key by Limiter (N 0 peeks)
// at the time At.
type Check struct {
	// Limiter decides the events, with all of its options.
	Limiter *Limiter
	// Key is the event key.
	Key string
	// N is the number of events, 0 to 2^52: 0 decides as Peek, N >= 1
	// as AllowN.
	N int64
	// At is the time of the decision, sent to the script as its now and
	// used by the deny cache and the fallback as a Clock's reading would
	// be. Zero means the limiter's clock: Options.Clock, or the server's.
	At time.Time
}

// Decide decides many checks, of one limiter or many, in one round trip
// per node where client batches (Rueidis, goredis and valkeygo do), the
// NOSCRIPT or missing-function recovery in one more. client sends the
// calls: the client the limiters were made with, or one to the same
// deployment; each limiter's own client does the rest (the fallback's
// events recorded on the server when it answers again, the library loaded
// on every master).
//
// Each check is decided as a call of AllowN (Peek for N 0) of its limiter
// would decide it, with every option of that limiter: the deny cache and
// the fallback may answer it without a round trip, FailOpen, DryRun and
// Observe apply to it, and an invalid check (a nil Limiter, N out of
// range, At outside what the scripts take) is answered with a
// *LimitError naming what was wrong and sends nothing; once ctx is done,
// nothing is sent and each error wraps the context's. The
// outcomes are in the order of checks; each carries its own error, its
// Kind and whether it was decided in the process.
func Decide(ctx context.Context, client Client, checks []Check) []Outcome {
	return decideChecks(ctx, client, checks, false)
}

// decideChecks is Decide; fromClock says that each At is a reading of
// its limiter's Clock (AllowBatch), which names the Clock in an error.
// Each check goes through its limiter's chain (internal/decide): the
// stages before the wire for each, the wire once for all, then the stages
// after it for each.
func decideChecks(ctx context.Context, client Client, checks []Check, fromClock bool) []Outcome {
	out := make([]Outcome, len(checks))
	start := time.Now()
	// Room for every check at once (appends that grew the slices copied
	// them over and over). A check keeps its Decision only when its
	// limiter has stages to run after the reply, in decisions, made for
	// the first such check with room for every check.
	calls := make([]Call, 0, len(checks))
	pending := make([]pendingCheck, 0, len(checks))
	var decisions []decide.Decision
	for i, c := range checks {
		l := c.Limiter
		switch {
		case l == nil:
			out[i] = Outcome{Result: Result{Limit: -1}, Err: &LimitError{Index: -1, Field: "Limiter", Reason: fmt.Sprintf("of check %d is nil", i)}, Kind: KindError, Local: true}
			continue
		case client == nil:
			out[i] = l.refusal(ctx, c.N, &LimitError{Index: -1, Field: "client", Reason: "is nil"})
			continue
		case c.N < 0 || c.N > maxScriptInt:
			out[i] = l.refusal(ctx, c.N, &LimitError{Index: -1, Field: "N", Reason: fmt.Sprintf("must be in [0, 2^52], got %d (use Reset to reset)", c.N)})
			continue
		}
		if err := ctx.Err(); err != nil {
			// The caller gave up before asking: nothing is sent.
			out[i] = l.refusal(ctx, c.N, callerGaveUp(l.name, err))
			continue
		}
		d := decide.Decision{Key: c.Key, N: c.N, Start: start, At: start}
		var now string
		var err error
		switch {
		case !c.At.IsZero():
			d.At, d.Clocked = c.At, true
			now, err = l.nowOf(c.At)
			var le *LimitError
			if !fromClock && errors.As(err, &le) {
				err = &LimitError{Index: -1, Field: "At", Reason: le.Reason}
			}
		case l.clock != nil:
			d.At, d.Clocked = l.clock(), true
			now, err = l.nowOf(d.At)
		}
		if err != nil {
			out[i] = l.refusal(ctx, c.N, err)
			continue
		}
		if l.chain.On() && l.chain.Local(ctx, &d) {
			l.chain.Finish(ctx, &d)
			out[i] = Outcome{Result: Result(d.Result), Err: d.Err, Kind: d.Kind, Local: true}
			continue
		}
		calls = append(calls, l.newCall(l.Key(c.Key), l.appendArgs(make([]string, 0, 4+len(l.limits)), c.N, now)))
		p := pendingCheck{index: i, l: l}
		if l.chain.On() {
			if decisions == nil {
				decisions = make([]decide.Decision, 0, len(checks))
			}
			decisions = append(decisions, d)
			p.d = &decisions[len(decisions)-1]
		}
		pending = append(pending, p)
	}
	if len(calls) == 0 {
		return out
	}
	limiters := make([]*core, len(pending))
	for j, p := range pending {
		limiters[j] = &p.l.core
	}
	replies, errs := execCalls(ctx, client, limiters, calls)
	for j := range pending {
		p := &pending[j]
		l := p.l
		r, err := l.decode(replies[j], errs[j])
		if p.d == nil {
			out[p.index] = Outcome{Result: r, Err: err, Kind: decide.KindOf(wire.Result(r), err)}
			continue
		}
		l.chain.Settle(ctx, p.d, wire.Result(r), err, err != nil && noAnswer(err))
		l.chain.Finish(ctx, p.d)
		out[p.index] = Outcome{Result: Result(p.d.Result), Err: p.d.Err, Kind: p.d.Kind, Local: p.d.Local}
	}
	return out
}

// pendingCheck is a check of Decide on its way to the server.
type pendingCheck struct {
	index int // in the checks
	l     *Limiter
	d     *decide.Decision // nil when l has no stage to run after the reply
}

// refusal is the outcome of n events refused before any round trip for
// err, through the limiter's options (DryRun, Observe).
func (l *Limiter) refusal(ctx context.Context, n int64, err error) Outcome {
	r, err := l.failedWire(err)
	if !l.chain.On() {
		return Outcome{Result: Result(r), Err: err, Kind: decide.KindOf(r, err), Local: true}
	}
	d := l.chain.Refused(ctx, n, r, err)
	return Outcome{Result: Result(d.Result), Err: d.Err, Kind: d.Kind, Local: true}
}
