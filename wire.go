package ratelua

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ratelua/ratelua/internal/decide"
	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/wire"
)

// The wire: every call a limiter or a semaphore sends goes through here,
// one (ask, on rueidis on the stack) or many in one round trip per node
// (execCalls), with the recovery from NOSCRIPT (EVAL, which loads the
// script on that node) and from a missing function (the release's library
// loaded on every master). The format (units, the reply, state keys and
// their slots) is internal/wire's.

// unit is a time unit of the wire contract.
type unit = wire.Unit

// maxScriptInt bounds now, durations and replies in the scripts: 2^52.
const maxScriptInt = wire.MaxScriptInt

// maxDuration is the largest time.Duration.
const maxDuration = wire.MaxDuration

// pickUnit is the unit of a limiter's durations (wire.PickUnit).
func pickUnit(durations []time.Duration) (unit, error) { return wire.PickUnit(durations) }

// appendArgs appends the ARGV of a call of n events at now to dst:
// n, the unit, now, the mode and the limits.
func (l *core) appendArgs(dst []string, n int64, now string) []string {
	dst = append(dst, strconv.FormatInt(n, 10), l.unit.Name, now, l.mode)
	return append(dst, l.limits...)
}

// target is the command and the script of the limiter's calls.
func (l *core) target() (command, script string) {
	if l.functions {
		return "FCALL", l.script.Function()
	}
	return "EVALSHA", l.script.SHA1
}

// newCall is the call of the limiter's script on key with args.
func (l *core) newCall(key string, args []string) Call {
	command, script := l.target()
	return Call{Command: command, Script: script, Key: key, Args: args}
}

// send is the chain's wire (decide.Wire.Send): one call of n events of
// eventKey at now in mode ("" for the limiter's), its answer under
// FailOpen, and whether it got none.
func (l *core) send(ctx context.Context, eventKey string, n int64, mode, now string) (wire.Result, error, bool) {
	r, err := l.ask(ctx, eventKey, n, mode, now)
	return wire.Result(r), err, err != nil && noAnswer(err)
}

// ask makes one call of the script at now, in mode (ARGV[4]; "" for the
// limiter's own: a reservation's reserve or settle names its own). On
// rueidis the arguments and the reply stay on the stack: nothing here
// passes them to an interface.
func (l *core) ask(ctx context.Context, eventKey string, n int64, mode, now string) (Result, error) {
	key := l.key(eventKey)
	rc, native := l.client.(rueidisClient)
	if !native {
		reply := make([]int64, 5)
		args := l.appendArgs(make([]string, 0, 4+len(l.limits)), n, now)
		if mode != "" {
			args[3] = mode
		}
		return l.decode(reply, l.run(ctx, l.newCall(key, args), reply))
	}
	// Up to maxLimits limits of three integers, on the stack.
	var buf [4 + 3*maxLimits]string
	var reply [5]int64
	command, script := l.target()
	args := l.appendArgs(buf[:0], n, now)
	if mode != "" {
		args[3] = mode
	}
	err := rc.run(ctx, command, script, key, args, reply[:])
	if err == nil || !l.recoverable(command, err) {
		return l.decode(reply[:], err)
	}
	// NOSCRIPT or a missing function: the rare path, on the heap.
	retried := make([]int64, 5)
	return l.decode(retried, l.recover(ctx, l.newCall(key, slices.Clone(args)), retried, err))
}

// decode turns a script reply into a Result, applying the fail-open or
// fail-closed choice to errors.
func (l *core) decode(reply []int64, err error) (Result, error) {
	if err != nil {
		return l.failed(classify(l.name, err))
	}
	return Result(wire.Decode(reply, l.unit)), nil
}

// run sends one call and recovers from NOSCRIPT or a missing function.
func (l *core) run(ctx context.Context, call Call, reply []int64) error {
	err := l.client.Run(ctx, call, reply)
	if err != nil && l.recoverable(call.Command, err) {
		return l.recover(ctx, call, reply, err)
	}
	return err
}

// recoverable reports an error that recover answers: NOSCRIPT to an
// EVALSHA, or an FCALL of a function no library on the node registers.
func (l *core) recoverable(command string, err error) bool {
	switch command {
	case "EVALSHA":
		return isNoScript(err)
	case "FCALL":
		var se *ServerError
		return errors.As(err, &se) && strings.Contains(strings.ToLower(se.Message), "function not found")
	}
	return false
}

// isNoScript reports a NOSCRIPT error reply.
func isNoScript(err error) bool {
	var se *ServerError
	return errors.As(err, &se) && strings.HasPrefix(se.Message, "NOSCRIPT")
}

// recover sends call again once what err asked for is done: EVAL, which
// loads the script on that node, after NOSCRIPT; the release's library
// loaded on every master after a missing function.
func (l *core) recover(ctx context.Context, call Call, reply []int64, err error) error {
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
func (l *core) loadLibrary(ctx context.Context) error {
	lib, err := ReleaseLibrary(l.script.Version)
	if err != nil {
		return err
	}
	_, err = LoadFunctions(ctx, l.client, lib)
	return err
}

// loaded tells the hook of a script load that began at start.
func (l *core) loaded(ctx context.Context, start time.Time, err error) {
	if l.chain.Observe.Hook != nil {
		l.emit(ctx, decide.Event{Kind: KindLoad, Err: classify(l.name, err), Latency: time.Since(start), Result: wire.Result{Limit: -1}})
	}
}

// record is the chain's wire for the fallback (decide.Wire.Record): it
// records on the server, now that it answers again, the events the
// fallback recorded while it decided: one call per event key, counted
// even over the limits (mode 1), at the limiter's clock, in one round trip
// per node where the client batches, on the goroutine and context of the
// call that ended the fallback. Best effort: a call that fails is not sent
// again.
func (l *core) record(ctx context.Context, events []fallback.Recorded) {
	now, err := l.now()
	if err != nil {
		return
	}
	calls := make([]Call, len(events))
	for i, e := range events {
		args := l.appendArgs(make([]string, 0, 4+len(l.limits)), e.N, now)
		args[3] = "1" // the mode: recorded even over the limits
		calls[i] = l.newCall(l.key(e.Key), args)
	}
	l.exec(ctx, calls)
}

// exec sends many calls of the limiter's script (one round trip per node
// where the client batches) and recovers the entries that met NOSCRIPT or
// a missing function, together.
func (l *core) exec(ctx context.Context, calls []Call) ([][]int64, []error) {
	return execCalls(ctx, l.client, slices.Repeat([]*core{l}, len(calls)), calls)
}

// execCalls sends calls, calls[i] of limiters[i], through client in one
// round trip per node where it batches, and sends again, together, those
// that met NOSCRIPT (by EVAL, which loads the script on that node) or a
// missing function (once each limiter's release library is loaded on
// every master).
func execCalls(ctx context.Context, client Client, limiters []*core, calls []Call) ([][]int64, []error) {
	replies := make([][]int64, len(calls))
	flat := make([]int64, 5*len(calls))
	for i := range replies {
		replies[i] = flat[5*i : 5*i+5 : 5*i+5]
	}
	errs := runBatch(ctx, client, calls, replies)
	var retry []int
	for i, err := range errs {
		if err != nil && limiters[i].recoverable(calls[i].Command, err) {
			retry = append(retry, i)
		}
	}
	if len(retry) == 0 {
		return replies, errs
	}
	start := time.Now()
	libraries := map[int]error{} // by script version: the load of its release's library
	again := make([]Call, 0, len(retry))
	againReplies := make([][]int64, 0, len(retry))
	sent := make([]int, 0, len(retry))
	for _, i := range retry {
		l := limiters[i]
		call := calls[i]
		if call.Command == "FCALL" {
			err, done := libraries[l.script.Version]
			if !done {
				err = l.loadLibrary(ctx)
				l.loaded(ctx, start, err)
				libraries[l.script.Version] = err
			}
			if err != nil {
				errs[i] = err
				continue
			}
		} else {
			call.Command, call.Script = "EVAL", l.script.Source
		}
		again = append(again, call)
		againReplies = append(againReplies, replies[i])
		sent = append(sent, i)
	}
	for j, err := range runBatch(ctx, client, again, againReplies) {
		i := sent[j]
		errs[i] = err
		if again[j].Command == "EVAL" {
			// Each EVAL loaded the script on its node.
			limiters[i].loaded(ctx, start, err)
		}
	}
	return replies, errs
}

// runBatch sends calls through client: in one round trip per node when it
// can batch (a Batcher), else one at a time.
func runBatch(ctx context.Context, client Client, calls []Call, replies [][]int64) []error {
	if b, ok := client.(Batcher); ok {
		return b.RunBatch(ctx, calls, replies)
	}
	errs := make([]error, len(calls))
	for i, c := range calls {
		errs[i] = client.Run(ctx, c, replies[i])
	}
	return errs
}
