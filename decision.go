package ratelua

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ratelua/ratelua/internal/denycache"
	"github.com/ratelua/ratelua/internal/keyslot"
	"github.com/ratelua/ratelua/internal/model"
)

// The decision path of a Limiter, top-down in call order: Allow, AllowN,
// Peek and Reset go through call; without options that work around the
// round trip call only asks the server (ask, which recovers from NOSCRIPT
// or a missing function); with them, around consults the deny cache and
// the fallback before the call (answerLocally), hands the answer to them
// after it (settle), then applies DryRun and tells Observe (finish).
// decode and failed turn a reply or an error into the Result.

// decision is one call on its way through what the options add around
// the round trip: the deny cache and the fallback before it, the fallback
// and the deny cache after it, then DryRun and the hook.
type decision struct {
	eventKey string
	n        int64
	start    time.Time // when the call began, zero when nothing needs it
	at       time.Time // the time of the decision: the Clock's reading, a Check's At, or start
	clocked  bool      // at is a caller's time (a Clock's reading or a Check's At), not the server's
	slot     int       // the state key's hash slot, -1 when not followed
	probe    bool      // this call asks the server for the fallback
	flight   bool      // registered in flight in the deny cache
	gen      uint64    // the deny cache's generation of the key then

	r     Result
	err   error
	cause error  // for the hook when err is nil: the failure the fallback answered
	kind  string // "" for kindOf(r, err)
	local bool
}

// Allow records one event for eventKey and decides it.
func (l *Limiter) Allow(ctx context.Context, eventKey string) (Result, error) {
	return l.AllowN(ctx, eventKey, 1)
}

// AllowN records n events (n >= 1) for eventKey and decides them together.
func (l *Limiter) AllowN(ctx context.Context, eventKey string, n int64) (Result, error) {
	if n < 1 || n > maxScriptInt {
		return l.refuse(ctx, n, &LimitError{Index: -1, Field: "n", Reason: fmt.Sprintf("must be in [1, 2^52], got %d", n)})
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
	_, err := l.call(ctx, eventKey, -1)
	return err
}

// call makes one decision (n >= 0) or reset (n = -1). Without the
// options that work around the round trip, it is ask and nothing else.
func (l *Limiter) call(ctx context.Context, eventKey string, n int64) (Result, error) {
	if err := ctx.Err(); err != nil {
		// The caller gave up before asking: not the server's failure, so
		// not ErrUnavailable, and nothing is sent.
		err = callerGaveUp(l.name, err)
		if n < 0 {
			return Result{Limit: -1}, err
		}
		return l.refuse(ctx, n, err)
	}
	if l.extras {
		return l.around(ctx, eventKey, n)
	}
	now, err := l.now()
	if err != nil {
		return l.failed(err)
	}
	return l.ask(ctx, eventKey, n, now)
}

// around is call with the options that work around the round trip.
func (l *Limiter) around(ctx context.Context, eventKey string, n int64) (Result, error) {
	d, now, err := l.begin(eventKey, n)
	if n < 0 {
		// A reset: forget the key here too; not a decision. The deny
		// cache hears of it before it is sent and once it is answered, so
		// that no denial given before it is stored or answered after it.
		if l.deny != nil {
			l.deny.Changed(eventKey)
		}
		if l.fallback != nil {
			l.fallback.Forget(eventKey)
		}
		if err != nil {
			return l.failed(err)
		}
		r, err := l.ask(ctx, eventKey, n, now)
		if l.deny != nil {
			l.deny.Changed(eventKey)
		}
		return r, err
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

// begin starts a decision of n events of eventKey, reading the clocks
// once; now is the script's now argument.
func (l *Limiter) begin(eventKey string, n int64) (d decision, now string, err error) {
	d = decision{eventKey: eventKey, n: n, slot: -1}
	if l.observe != nil || l.fallback != nil || l.deny != nil {
		d.start = time.Now()
	}
	d.at = d.start
	if l.clock != nil {
		d.at, d.clocked = l.clock(), true
		now, err = l.nowOf(d.at)
	}
	return d, now, err
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
		a, gen, ok := l.deny.Answer(d.eventKey, max(d.n, 1), denyTime(d, l.unit), l.unit.size)
		if ok {
			d.r, d.local = Result{Remaining: a.Remaining, RetryAfter: a.RetryAfter, ResetAfter: a.ResetAfter, Limit: a.Limit}, true
			return true
		}
		d.flight, d.gen = true, gen
	}
	if l.fallback != nil {
		d.slot = int(keyslot.CRC16(escapeTag(d.eventKey)) % keyslot.NumSlots)
		local, probe := l.fallback.Route(d.slot, d.start)
		if local {
			if d.flight {
				// Not sent after all.
				l.deny.Settle(d.eventKey, d.gen, false, denycache.Denial{}, false)
				d.flight = false
			}
			l.fallbackDecide(d, nil)
			d.local = true
			return true
		}
		d.probe = probe
	}
	return false
}

// ask makes one call of the script at now. On rueidis the arguments and
// the reply stay on the stack: nothing here passes them to an interface.
func (l *Limiter) ask(ctx context.Context, eventKey string, n int64, now string) (Result, error) {
	key := l.Key(eventKey)
	rc, native := l.client.(rueidisClient)
	if !native {
		reply := make([]int64, 5)
		return l.decode(reply, l.run(ctx, l.newCall(key, l.appendArgs(make([]string, 0, 4+len(l.limits)), n, now)), reply))
	}
	// Up to maxLimits limits of three integers, on the stack.
	var buf [4 + 3*maxLimits]string
	var reply [5]int64
	command, script := l.target()
	args := l.appendArgs(buf[:0], n, now)
	err := rc.run(ctx, command, script, key, args, reply[:])
	if err == nil || !l.recoverable(command, err) {
		return l.decode(reply[:], err)
	}
	// NOSCRIPT or a missing function: the rare path, on the heap.
	retried := make([]int64, 5)
	return l.decode(retried, l.recover(ctx, l.newCall(key, slices.Clone(args)), retried, err))
}

// target is the command and the script of the limiter's calls.
func (l *Limiter) target() (command, script string) {
	if l.functions {
		return "FCALL", l.script.Function()
	}
	return "EVALSHA", l.script.SHA1
}

// newCall is the call of the limiter's script on key with args.
func (l *Limiter) newCall(key string, args []string) Call {
	command, script := l.target()
	return Call{Command: command, Script: script, Key: key, Args: args}
}

// run sends one call and recovers from NOSCRIPT or a missing function.
func (l *Limiter) run(ctx context.Context, call Call, reply []int64) error {
	err := l.client.Run(ctx, call, reply)
	if err != nil && l.recoverable(call.Command, err) {
		return l.recover(ctx, call, reply, err)
	}
	return err
}

// recoverable reports an error that recover answers: NOSCRIPT to an
// EVALSHA, or an FCALL of a function no library on the node registers.
func (l *Limiter) recoverable(command string, err error) bool {
	switch command {
	case "EVALSHA":
		return isNoScript(err)
	case "FCALL":
		var se *ServerError
		return errors.As(err, &se) && strings.Contains(strings.ToLower(se.Message), "function not found")
	}
	return false
}

// recover sends call again once what err asked for is done: EVAL, which
// loads the script on that node, after NOSCRIPT; the release's library
// loaded on every master after a missing function.
func (l *Limiter) recover(ctx context.Context, call Call, reply []int64, err error) error {
	start := time.Now()
	if call.Command == "FCALL" {
		err := l.loadLibrary(ctx)
		l.loaded(ctx, start, err)
		if err != nil {
			return err
		}
		return l.client.Run(ctx, call, reply)
	}
	call.Command, call.Script = "EVAL", l.script.Source
	err = l.client.Run(ctx, call, reply)
	l.loaded(ctx, start, err)
	return err
}

// loadLibrary loads the library of the limiter's release on every master.
func (l *Limiter) loadLibrary(ctx context.Context) error {
	lib, err := ReleaseLibrary(l.script.Version)
	if err != nil {
		return err
	}
	_, err = LoadFunctions(ctx, l.client, lib)
	return err
}

// loaded tells the hook of a script load that began at start.
func (l *Limiter) loaded(ctx context.Context, start time.Time, err error) {
	if l.observe != nil {
		l.emit(ctx, Event{Kind: KindLoad, Err: classify(l.name, err), Latency: time.Since(start), Result: Result{Limit: -1}})
	}
}

// settle takes the server's answer r, err to d: the deny cache ends the
// call in flight (a denial with a wait is stored, recorded events drop
// the key's); on no answer the fallback may decide, and an answer that
// ends the fallback has its events recorded on the server.
func (l *Limiter) settle(ctx context.Context, d *decision, r Result, err error) {
	d.r, d.err = r, err
	if d.flight {
		// Events recorded (or, without an answer, perhaps recorded) make
		// any denial given before no longer the server's answer.
		recorded := d.n > 0 && (err != nil || r.Allowed)
		var denied denycache.Denial
		var ok bool
		if err == nil && !r.Allowed && r.RetryAfter > 0 {
			var slack time.Duration
			if !d.clocked {
				// The server read its clock after d.start and rounded it down.
				slack = l.unit.size
			}
			denied, ok = denycache.DenialOf(max(d.n, 1), denyTime(d, l.unit), slack, r.RetryAfter, r.ResetAfter, r.Remaining, r.Limit)
		}
		l.deny.Settle(d.eventKey, d.gen, recorded, denied, ok)
		d.flight = false
	}
	if l.fallback != nil && d.slot >= 0 {
		end := time.Now()
		if noAnswer(err) {
			use, entered, unanswered := l.fallback.Fail(d.slot, d.probe, d.start, end)
			if entered && l.observe != nil {
				l.emit(ctx, Event{Kind: KindFallbackEnter, Err: err, Latency: unanswered, Result: Result{Limit: -1}})
			}
			if use {
				l.fallbackDecide(d, err)
				return
			}
		} else if left, used := l.fallback.Answer(d.slot, d.probe, end); left {
			if l.observe != nil {
				l.emit(ctx, Event{Kind: KindFallbackLeave, Latency: used, Result: Result{Limit: -1}})
			}
			l.tellServer(ctx)
		}
	}
}

// fallbackDecide has the fallback decide d; cause is the failure it
// answers for, nil when the server was not asked.
func (l *Limiter) fallbackDecide(d *decision, cause error) {
	mode := 0
	if l.mode == "1" {
		mode = 1
	}
	ints := l.fallback.Decide(d.eventKey, model.Call{Count: d.n, Now: l.unit.now(d.at), Mode: mode, Unit: l.unit.name})
	d.r, d.err, d.cause, d.kind = resultOf(ints[:], l.unit), nil, cause, KindFallback
}

// tellServer records on the server, now that it answers again, the
// events the fallback recorded while it decided: one call per event key,
// counted even over the limits (mode 1), at the limiter's clock, in one
// round trip per node where the client batches, on the goroutine and
// context of the call that ended the fallback. Best effort: a call that
// fails is not sent again.
func (l *Limiter) tellServer(ctx context.Context) {
	events := l.fallback.TakeRecorded()
	if len(events) == 0 {
		return
	}
	now, err := l.now()
	if err != nil {
		return
	}
	calls := make([]Call, len(events))
	for i, e := range events {
		args := l.appendArgs(make([]string, 0, 4+len(l.limits)), e.N, now)
		args[3] = "1" // the mode: recorded even over the limits
		calls[i] = l.newCall(l.Key(e.Key), args)
	}
	l.exec(ctx, calls)
	if l.deny != nil {
		for _, e := range events {
			l.deny.Changed(e.Key)
		}
	}
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
	d.kind = kind
	return d.r, d.err
}

// decode turns a script reply into a Result, applying the fail-open or
// fail-closed choice to errors.
func (l *Limiter) decode(reply []int64, err error) (Result, error) {
	if err != nil {
		return l.failed(classify(l.script.String(), err))
	}
	return resultOf(reply, l.unit), nil
}

func resultOf(ints []int64, u unit) Result {
	return Result{
		Allowed:    ints[0] == 1,
		Remaining:  ints[1],
		RetryAfter: u.duration(ints[2]),
		ResetAfter: u.duration(ints[3]),
		Limit:      int(ints[4]) - 1,
	}
}

// failed is the Result that goes with err: Allowed only when the server
// could not be asked or did not answer, under FailOpen.
func (l *Limiter) failed(err error) (Result, error) {
	if l.failOpen && errors.Is(err, ErrUnavailable) {
		var se *ServerError
		if !errors.As(err, &se) {
			return Result{Allowed: true, Limit: -1}, err
		}
	}
	return Result{Limit: -1}, err
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

// denyTime is the deny cache's time of decision d: a caller's time (a
// Clock's reading or a Check's At) rounded down to the unit u, as the
// script reads it; else d.at, the process's clock when the call began.
func denyTime(d *decision, u unit) time.Time {
	if !d.clocked {
		return d.at
	}
	return d.at.Truncate(u.size)
}

// noAnswer reports an error of a call that got no answer, the only one
// FailOpen admits and the fallback answers for.
func noAnswer(err error) bool {
	var se *ServerError
	return errors.Is(err, ErrUnavailable) && !errors.As(err, &se)
}
