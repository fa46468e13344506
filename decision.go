package ratelua

import (
	"context"
	"fmt"
	"time"

	"github.com/ratelua/ratelua/internal/decide"
	"github.com/ratelua/ratelua/internal/wire"
)

// The decision path of a Limiter (and of a Semaphore's Peek and Reset),
// top-down in call order: Allow, AllowN, Peek and Reset go through call,
// which refuses what Go can refuse and reads the clock; without options
// that work around the round trip it only asks the server (ask, in
// wire.go, which recovers from NOSCRIPT or a missing function); with
// them, the limiter's chain of stages (internal/decide: deny cache,
// fallback, wire, settle, dry run, observe) decides.

// Allow records one event for eventKey and decides it.
func (l *Limiter) Allow(ctx context.Context, eventKey string) (Result, error) {
	return l.AllowN(ctx, eventKey, 1)
}

// AllowN records n events (n >= 1) for eventKey and decides them together.
func (l *Limiter) AllowN(ctx context.Context, eventKey string, n int64) (Result, error) {
	if n < 1 || n > maxScriptInt {
		return l.refuse(ctx, n, &LimitError{Index: -1, Field: "n", Reason: fmt.Sprintf("must be in [1, 2^52], got %d", n)})
	}
	if l.hot != nil {
		return l.hot.allowN(ctx, eventKey, n)
	}
	return l.call(ctx, eventKey, n)
}

// Peek decides whether one more event for eventKey would be admitted,
// recording nothing.
func (l *Limiter) Peek(ctx context.Context, eventKey string) (Result, error) {
	return l.call(ctx, eventKey, 0)
}

// Reset deletes the state of eventKey: its next event starts fresh.
func (l *Limiter) Reset(ctx context.Context, eventKey string) error {
	if l.hot != nil {
		// The reset drops the key's reservations: its batch goes with
		// them, before and after (a refill may have run meanwhile).
		l.hot.forget(eventKey)
		defer l.hot.forget(eventKey)
	}
	_, err := l.call(ctx, eventKey, -1)
	return err
}

// call makes one decision (n >= 0) or reset (n = -1). Without the
// options that work around the round trip, it is ask and nothing else.
func (l *core) call(ctx context.Context, eventKey string, n int64) (Result, error) {
	if err := ctx.Err(); err != nil {
		// The caller gave up before asking: not the server's failure, so
		// not ErrUnavailable, and nothing is sent.
		err = callerGaveUp(l.name, err)
		if n < 0 {
			return Result{Limit: -1}, err
		}
		return l.refuse(ctx, n, err)
	}
	if !l.chain.On() {
		now, err := l.now()
		if err != nil {
			return l.failed(err)
		}
		return l.ask(ctx, eventKey, n, "", now)
	}
	var at time.Time
	if l.clock != nil {
		at = l.clock()
	}
	d := l.chain.Begin(eventKey, n, at, l.clock != nil)
	var now string
	var err error
	if d.Clocked {
		now, err = l.nowOf(d.At)
	}
	if n < 0 {
		return l.reset(ctx, eventKey, now, err)
	}
	if err != nil {
		d.Result, d.Err = l.failedWire(err)
		d.Local = true
		return l.finish(ctx, &d)
	}
	r, err := l.chain.Decide(ctx, &d, now)
	return Result(r), err
}

// reset is a reset through the chain: not a decision. The stages forget
// the key before it is sent and once it is answered, so that no denial
// given before it is stored or answered after it.
func (l *core) reset(ctx context.Context, eventKey, now string, clockErr error) (Result, error) {
	l.chain.Forget(eventKey)
	if clockErr != nil {
		return l.failed(clockErr)
	}
	r, err := l.ask(ctx, eventKey, -1, "", now)
	l.chain.Deny.Changed(eventKey)
	return r, err
}

// finish runs the chain's last stages (DryRun, Observe) on d.
func (l *core) finish(ctx context.Context, d *decide.Decision) (Result, error) {
	r, err := l.chain.Finish(ctx, d)
	return Result(r), err
}

// failedWire is failed in the chain's terms.
func (l *core) failedWire(err error) (wire.Result, error) {
	r, err := l.failed(err)
	return wire.Result(r), err
}

// refuse is the failed decision of n events for an argument refused in Go.
func (l *core) refuse(ctx context.Context, n int64, err error) (Result, error) {
	if !l.chain.On() {
		return l.failed(err)
	}
	r, err := l.failedWire(err)
	d := l.chain.Refused(ctx, n, r, err)
	return Result(d.Result), d.Err
}
