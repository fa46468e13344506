// Package decide is the decision path of a limiter: a fixed chain of
// concrete stages around the round trip, in call order
//
//	deny -> fallback -> wire -> settle -> dry-run -> observe
//
// The deny cache and the fallback may answer a call in the process
// (Chain.Local); else the wire sends it (the root package's client calls,
// given to the chain as Wire); the answer settles the deny cache and the
// fallback (Chain.Settle); then DryRun admits and Observe sees it
// (Chain.Finish). Chain.Decide runs them all for one call; the root's
// batch (Decide, AllowBatch) runs Local for every call, the wire once for
// all, then Settle and Finish for each.
//
// A new option is a stage: a type of its own here with what it needs, a
// field of Chain, and its place in the order; no field of the limiter or
// of a decision in flight that only one option reads. The stages are
// concrete types, not an interface slice, so that a call with no option
// on allocates nothing here.
package decide

import (
	"context"
	"time"

	"github.com/ratelua/ratelua/internal/wire"
)

// The kinds of Event, as the root package's Kind constants spell them.
const (
	KindAllowed       = "allowed"
	KindDenied        = "denied"
	KindDryRun        = "dry_run"
	KindFailOpen      = "fail_open"
	KindError         = "error"
	KindFallback      = "fallback"
	KindLoad          = "load"
	KindFallbackEnter = "fallback_enter"
	KindFallbackLeave = "fallback_leave"
	KindLost          = "lease_lost"
	KindReserve       = "reserve"
	KindSettle        = "settle"
	KindCancel        = "cancel"
	KindBatch         = "batch"
)

// The operations of a decision other than a plain call (Reservation.Op): a
// reservation's reserve, settle and cancel (issue 31). Each is observed
// under the Kind of the same name.
const (
	OpReserve = KindReserve
	OpSettle  = KindSettle
	OpCancel  = KindCancel
)

// Reservation is a reservation's step on its way through the chain.
type Reservation struct {
	// Op is OpReserve (the Decision's N is the estimate), OpSettle or
	// OpCancel (N is the actual cost, 0 for a cancel) of reservation ID.
	Op string
	ID int64
	// Mode is the script's ARGV[4] for it.
	Mode string
	// Lifetime is a reserve's lifetime, in the unit.
	Lifetime int64
	// Estimate is a settle's estimate: the fallback's record of the
	// events it admitted moves by N - Estimate.
	Estimate int64
}

// mode is d's ARGV[4]: "" for a plain call (the limiter's own).
func (d *Decision) mode() string {
	if d.Res == nil {
		return ""
	}
	return d.Res.Mode
}

// Decision is one call on its way through the chain.
type Decision struct {
	Key     string
	N       int64
	Start   time.Time // when the call began, zero when no stage needs it
	At      time.Time // the time of the decision: a caller's time, or Start
	Clocked bool      // At is a caller's time (a Clock's reading or a Check's At), not the server's

	Result wire.Result
	Err    error
	Cause  error  // for Observe when Err is nil: the failure the fallback answered
	Kind   string // "" for KindOf(Result, Err)
	Local  bool   // decided in the process, without a round trip

	// Res is nil for a plain call, else the reservation's step (a field
	// of its own, so that a plain call's Decision stays small).
	Res *Reservation

	deny     denyState
	fallback fallbackState
}

// Chain is the fixed chain of stages of one limiter. The zero value of
// each stage is that stage off.
type Chain struct {
	Deny     Deny
	Fallback Fallback
	Wire     Wire
	DryRun   DryRun
	Observe  Observe
}

// On reports whether any stage works around the round trip: without one,
// a call is the wire and nothing else.
func (c *Chain) On() bool {
	return c.DryRun.On || c.Timed()
}

// Timed reports whether some stage needs the time a call began.
func (c *Chain) Timed() bool {
	return c.Observe.Hook != nil || c.Fallback.F != nil || c.Deny.Cache != nil
}

// Begin starts the decision of n events of key at, a caller's time
// (clocked) or zero: the time the call began is read when a stage needs
// it, and is the decision's time without a caller's.
func (c *Chain) Begin(key string, n int64, at time.Time, clocked bool) Decision {
	d := Decision{Key: key, N: n, At: at, Clocked: clocked}
	if c.Timed() {
		d.Start = time.Now()
	}
	if !clocked {
		d.At = d.Start
	}
	return d
}

// Local runs the stages before the wire: the deny cache, then the
// fallback. It reports whether d was decided in the process; else d goes
// to the wire, then to Settle.
func (c *Chain) Local(ctx context.Context, d *Decision) bool {
	if ctx.Err() != nil {
		// Never sent: the caller's doing, not the server's.
		return false
	}
	if c.Deny.before(d) {
		return true
	}
	if c.Fallback.before(d) {
		// Not sent after all.
		c.Deny.cancel(d)
		return true
	}
	return false
}

// Settle runs the stages after the wire on its answer r, err (r under
// FailOpen already; unanswered when the call got no answer): the deny
// cache ends the call in flight, then the fallback hears whether the
// server answered, and may decide d itself; when an answer ends the
// fallback, the events it recorded meanwhile are recorded on the server
// through the wire.
func (c *Chain) Settle(ctx context.Context, d *Decision, r wire.Result, err error, unanswered bool) {
	d.Result, d.Err = r, err
	c.Deny.after(d)
	if recorded := c.Fallback.after(ctx, d, unanswered, &c.Observe); len(recorded) > 0 {
		c.Wire.record(ctx, recorded)
		for _, e := range recorded {
			c.Deny.Changed(e.Key)
		}
	}
}

// Finish runs the stages after the decision: DryRun admits what the
// limits denied, then Observe sees the decision. It returns the caller's
// answer; d.Kind is its kind.
func (c *Chain) Finish(ctx context.Context, d *Decision) (wire.Result, error) {
	kind := d.Kind
	if kind == "" {
		kind = KindOf(d.Result, d.Err)
	}
	kind = c.DryRun.apply(d, kind)
	if c.Observe.Hook != nil {
		cause := d.Err
		if cause == nil {
			cause = d.Cause
		}
		observed := kind
		if d.Res != nil {
			// A reservation's step is observed as such; its Result, Err
			// and Local say how it went.
			observed = d.Res.Op
		}
		c.Observe.Hook(ctx, Event{Kind: observed, N: d.N, Result: d.Result, Err: cause, Latency: time.Since(d.Start), Local: d.Local})
	}
	d.Kind = kind
	return d.Result, d.Err
}

// Decide runs the whole chain for one call whose script argument now is
// already read (the wire sends it as is).
func (c *Chain) Decide(ctx context.Context, d *Decision, now string) (wire.Result, error) {
	if !c.Local(ctx, d) {
		r, err, unanswered := c.Wire.Send(ctx, d.Key, d.N, d.mode(), now)
		c.Settle(ctx, d, r, err, unanswered)
	}
	return c.Finish(ctx, d)
}

// Refused is the decision of n events refused before the wire (an
// argument refused in Go, a caller that gave up) with the answer r, err,
// through DryRun and Observe.
func (c *Chain) Refused(ctx context.Context, n int64, r wire.Result, err error) Decision {
	return c.RefusedOp(ctx, "", n, r, err)
}

// RefusedOp is Refused for a reservation's step op ("" for a plain
// call).
func (c *Chain) RefusedOp(ctx context.Context, op string, n int64, r wire.Result, err error) Decision {
	d := Decision{N: n, Result: r, Err: err, Local: true}
	if op != "" {
		d.Res = &Reservation{Op: op}
	}
	if c.Observe.Hook != nil {
		d.Start = time.Now()
	}
	c.Finish(ctx, &d)
	return d
}

// Forget tells the stages, before a reset of key is sent and once it is
// answered, that key's state goes: no denial given before it is stored or
// answered after it, and the fallback's state of key starts afresh.
func (c *Chain) Forget(key string) {
	c.Deny.Changed(key)
	if c.Fallback.F != nil {
		c.Fallback.F.Forget(key)
	}
}

// KindOf is the Kind of a decision with result r and error err, before
// DryRun admits it.
func KindOf(r wire.Result, err error) string {
	switch {
	case err != nil && r.Allowed:
		return KindFailOpen
	case err != nil:
		return KindError
	case r.Allowed:
		return KindAllowed
	}
	return KindDenied
}
