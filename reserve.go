package ratelua

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/ratelua/ratelua/internal/decide"
	"github.com/ratelua/ratelua/internal/wire"
)

// DefaultReservationLifetime is a reservation's lifetime when
// Options.ReservationLifetime is 0.
const DefaultReservationLifetime = 5 * time.Minute

// Reservation is the estimate a Reserve took for one event key, to be
// settled with the actual cost (Settle) or given back whole (Cancel) once
// the work is done. A reservation never settled stays spent: its units
// come back as any others do (token_bucket v7 holds them out of the
// refill until its lifetime ends, then refills them). It is safe for concurrent use; its steps
// are taken one at a time.
type Reservation struct {
	l        *Limiter
	key      string
	id       int64
	estimate int64
	at       time.Time // the time of the reserve (the fallback's reservations)
	result   Result
	kind     string // the reserve's decide.Kind (a hot key's batch is never the fallback's)
	hold     hold

	mu      sync.Mutex
	done    bool   // settled or cancelled: its later steps send nothing
	last    Result // the answer of the step that ended it
	pending int64  // the actual cost of a settle whose outcome is unknown, -1 if none
}

// hold is where a reservation is held.
type hold uint8

const (
	holdNone   hold = iota // denied, refused, or not admitted: nothing to settle
	holdServer             // the server admitted it
	holdMaybe              // admitted without an answer (FailOpen): the server may hold it
	holdLocal              // the fallback admitted it and holds it
)

// Reserve takes estimate units (1 to 2^52) of eventKey for work whose
// cost is known only once it is done, decided exactly as AllowN(estimate)
// (Result.Allowed). The reservation is never nil; settle it with the
// actual cost (Settle) or give it back (Cancel) within
// Options.ReservationLifetime; one that was not admitted has nothing to
// settle, and its Settle and Cancel do nothing. A script that does not
// take reservations (Script.Reserves: token_bucket, zset_log and sliding_window from v7, and the
// others once their scripts take the modes) is refused with an error
// naming it and wrapping ErrNotSupported, and nothing is sent. A
// reserve whose outcome is unknown (no answer, or the caller's context
// ended while it ran) and that is not admitted is cancelled by its id in
// the background.
//
// Each step goes the limiter's decision path (internal/decide) as a user
// expects of it:
//
//   - The deny cache answers a reserve as it answers AllowN(estimate), and
//     caches its denial the same way; a settle or cancel is never answered
//     or cached by it, and drops the key's cached denial (it changed the
//     state).
//   - The fallback: a reserve that the server does not answer is decided
//     by the fallback as AllowN is, and its reservation is held there: its
//     Settle settles the fallback's state, in the process, even once the
//     server answers again (the difference reaches the server with the
//     events the fallback recorded, if they were not sent yet). A
//     reservation the server holds is settled on the server only: during
//     an outage its Settle returns the error (ErrUnavailable), and the
//     caller may retry it.
//   - DryRun: a reserve is sent and decided as enforcement would, and
//     admitted; Result.DryRunDenied says it would have been denied, and
//     then nothing is held. A settle of a reservation the server holds is
//     sent and answered as the wire says.
//   - FailOpen admits a reserve the server did not answer, with the error;
//     the server may hold it all the same, so its Settle is sent, and one
//     that finds nothing is not an error.
//   - Observe sees each step, as KindReserve, KindSettle or KindCancel.
func (l *Limiter) Reserve(ctx context.Context, eventKey string, estimate int64) (*Reservation, error) {
	return l.reserve(ctx, eventKey, estimate, l.lifetime)
}

// reserve is Reserve with a reservation lifetime in the unit (a hot
// key's batch has a short one).
func (l *Limiter) reserve(ctx context.Context, eventKey string, estimate, lifetime int64) (*Reservation, error) {
	res := &Reservation{l: l, key: eventKey, estimate: estimate, pending: -1}
	refuse := func(err error) (*Reservation, error) {
		r, err := l.failedWire(err)
		d := l.chain.RefusedOp(ctx, decide.OpReserve, estimate, r, err)
		res.result = Result(d.Result)
		return res, d.Err
	}
	switch {
	case estimate < 1 || estimate > maxScriptInt:
		return refuse(&LimitError{Index: -1, Field: "estimate", Reason: fmt.Sprintf("must be in [1, 2^52], got %d", estimate)})
	case !l.script.Reserves():
		return refuse(fmt.Errorf("ratelua: %s does not take reservations (its contract names no modes reserve and settle of ARGV[4]; Script.Reserves): %w", l.name, ErrNotSupported))
	}
	if err := ctx.Err(); err != nil {
		return refuse(callerGaveUp(l.name, err))
	}
	var at time.Time
	if l.clock != nil {
		at = l.clock()
	}
	d := l.chain.Begin(eventKey, estimate, at, l.clock != nil)
	var now string
	if d.Clocked {
		var err error
		if now, err = l.nowOf(d.At); err != nil {
			return refuse(err)
		}
	}
	res.id = newReservationID()
	d.Res = &decide.Reservation{Op: decide.OpReserve, ID: res.id, Lifetime: lifetime,
		Mode: "reserve:" + strconv.FormatInt(res.id, 10) + ":" + strconv.FormatInt(lifetime, 10)}
	sent := false
	if !l.chain.Local(ctx, &d) {
		r, err, unanswered := l.chain.Wire.Send(ctx, d.Key, d.N, d.Res.Mode, now)
		sent = true
		l.chain.Settle(ctx, &d, r, err, unanswered)
	}
	// Where it is held, before DryRun admits a denial.
	var se *ServerError
	unknown := sent && d.Err != nil && !errors.As(d.Err, &se) && !errors.Is(d.Err, ErrInvalidLimit)
	switch {
	case d.Kind == decide.KindFallback:
		if d.Result.Allowed {
			res.hold, res.at = holdLocal, d.At
		}
		if sent {
			// The server may hold it too.
			unknown = true
		}
	case d.Err == nil && d.Result.Allowed && !d.Local:
		res.hold = holdServer
	case unknown && d.Result.Allowed:
		res.hold, unknown = holdMaybe, false
	}
	if unknown {
		l.cancelUnknown(eventKey, res.id)
	}
	r, err := l.chain.Finish(ctx, &d)
	res.result, res.kind = Result(r), d.Kind
	return res, err
}

// newReservationID draws a reservation id in [1, 2^52] from crypto/rand.
func newReservationID() int64 {
	var b [8]byte
	// crypto/rand.Read never fails (it crashes the program instead).
	_, _ = rand.Read(b[:])
	return 1 + int64(binary.LittleEndian.Uint64(b[:])%uint64(maxScriptInt))
}

// cancelUnknown cancels, in the background and within
// unknownReleaseTimeout, reservation id of eventKey, whose reserve has
// an unknown outcome and was not admitted. A reservation the server does
// not hold is left alone.
func (l *Limiter) cancelUnknown(eventKey string, id int64) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), unknownReleaseTimeout)
		defer cancel()
		now, err := l.now()
		if err != nil {
			return
		}
		// A failure leaves the estimate spent, as an unsettled reservation.
		_, _ = l.ask(ctx, eventKey, 0, "settle:"+strconv.FormatInt(id, 10), now)
		l.chain.Deny.Changed(eventKey)
	}()
}

// Result is the reserve's decision: Allowed when admitted (under DryRun
// or FailOpen too), as AllowN(estimate) would have answered.
func (r *Reservation) Result() Result { return r.result }

// ID is the reservation's id, drawn at random in [1, 2^52]: what a caller
// in another language sends in 'settle:<id>' to settle it.
func (r *Reservation) ID() int64 { return r.id }

// Estimate is the units the reserve asked for.
func (r *Reservation) Estimate() int64 { return r.estimate }

// Held reports whether the reservation has something to settle: the
// server (or the fallback) admitted it, or FailOpen did without an
// answer, and it was not settled or cancelled yet.
func (r *Reservation) Held() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hold != holdNone && !r.done
}

// Settle settles the reservation with the work's actual cost (0 to
// 2^52): estimate - actual is given back (never more room than full
// limits have) or actual - estimate charged (never denied: the limits go
// into debt and later calls wait until it is paid off), for every limit of
// the key at once. Its Result is a peek after it (Allowed when one more
// event would pass). It sends nothing, and returns nil, for a reservation
// that was not admitted, or that was settled or cancelled before.
//
// It returns an error wrapping ErrReservationExpired when the server (or
// the fallback) did not hold it any more: its lifetime had passed, or a
// reset or a failover dropped it. A settle whose outcome is unknown (no
// answer, the context ended while it ran) returns its error and may be
// retried: Settle again with the same actual cost (another is refused
// with a *LimitError) sends the same id, which the script applies at most
// once; a retry that finds the reservation gone returns nil, since the
// earlier attempt may have applied it. Settle with a context that
// outlives the work, such as context.WithoutCancel of a request's.
func (r *Reservation) Settle(ctx context.Context, actual int64) (Result, error) {
	return r.settle(ctx, actual, decide.OpSettle)
}

// Cancel gives the whole estimate back: a Settle with actual cost 0,
// observed as KindCancel.
func (r *Reservation) Cancel(ctx context.Context) (Result, error) {
	return r.settle(ctx, 0, decide.OpCancel)
}

// settle is Settle (op OpSettle) and Cancel (OpCancel).
func (r *Reservation) settle(ctx context.Context, actual int64, op string) (Result, error) {
	l := r.l
	if actual < 0 || actual > maxScriptInt {
		d := l.chain.RefusedOp(ctx, op, actual, wire.Result{Limit: -1}, &LimitError{Index: -1, Field: "actual", Reason: fmt.Sprintf("must be in [0, 2^52], got %d", actual)})
		return Result(d.Result), d.Err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hold == holdNone || r.done {
		return r.last, nil
	}
	if r.pending >= 0 && actual != r.pending {
		err := &LimitError{Index: -1, Field: "actual", Reason: fmt.Sprintf("a settle of %d of reservation %d has an unknown outcome: retry it with the same actual cost, got %d", r.pending, r.id, actual)}
		d := l.chain.RefusedOp(ctx, op, actual, wire.Result{Limit: -1}, err)
		return Result(d.Result), d.Err
	}
	d := decide.Decision{Key: r.key, N: actual, Res: &decide.Reservation{Op: op, ID: r.id, Estimate: r.estimate, Mode: "settle:" + strconv.FormatInt(r.id, 10)}}
	if l.chain.Observe.Hook != nil {
		d.Start = time.Now()
	}
	if r.hold == holdLocal {
		d.At = r.l.localTime(r.at)
		d.Result = l.chain.Fallback.SettleLocal(&d)
		r.done, r.last = true, Result(d.Result)
		if d.Result.Limit < 0 {
			d.Err = fmt.Errorf("%w: reservation %d: the fallback did not hold it any more (its lifetime had passed, or it let the key go)", ErrReservationExpired, r.id)
		}
		return r.observe(ctx, &d)
	}
	now := ""
	var err error
	switch {
	case ctx.Err() != nil:
		err = callerGaveUp(l.name, ctx.Err())
	case l.clock != nil:
		now, err = l.nowOf(l.clock())
	}
	if err != nil {
		d.Result, d.Err, d.Local = wire.Result{Limit: -1}, err, true
		return r.observe(ctx, &d)
	}
	res, err := l.ask(ctx, r.key, actual, d.Res.Mode, now)
	l.chain.Deny.Changed(r.key)
	var se *ServerError
	switch {
	case err == nil:
		d.Result = wire.Result(res)
		retried := r.pending >= 0 || r.hold == holdMaybe
		r.done, r.last, r.pending = true, res, -1
		if res.Limit < 0 && !retried {
			d.Err = fmt.Errorf("%w: %s: reservation %d: the server did not hold it any more (its lifetime had passed, or a reset or a failover dropped it)", ErrReservationExpired, l.name, r.id)
		}
	case errors.As(err, &se) || errors.Is(err, ErrInvalidLimit):
		// Refused: nothing was written.
		d.Result, d.Err = wire.Result{Limit: -1}, err
	default:
		// Perhaps applied: a retry must send the same.
		r.pending = actual
		d.Result, d.Err = wire.Result{Limit: -1}, err
	}
	return r.observe(ctx, &d)
}

// observe tells Observe of a settle or cancel d (never through DryRun: a
// settle is never denied) and returns its answer.
func (r *Reservation) observe(ctx context.Context, d *decide.Decision) (Result, error) {
	if o := &r.l.chain.Observe; o.Hook != nil {
		o.Emit(ctx, decide.Event{Kind: d.Res.Op, N: d.N, Result: d.Result, Err: d.Err, Latency: time.Since(d.Start), Local: d.Local})
	}
	return Result(d.Result), d.Err
}

// localTime is the time of a step of a reservation the fallback holds:
// the limiter's Clock, or the process's, never before the reserve's.
func (l *Limiter) localTime(reserved time.Time) time.Time {
	t := time.Now()
	if l.clock != nil {
		t = l.clock()
	}
	if t.Before(reserved) {
		return reserved
	}
	return t
}
