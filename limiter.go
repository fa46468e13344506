package ratelua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"slices"

	"github.com/ratelua/ratelua/internal/model"
)

// Never is the RetryAfter of events that can never be admitted: more than a
// limit's maximum at once.
const Never = time.Duration(-1)

// Options configure a limiter. The zero value is a limiter under the key
// prefix "ratelua" that counts only admitted events, reads the server's
// clock and fails closed.
type Options struct {
	// Prefix starts every state key: <Prefix>:{<event key>}:<script>:v<N>:<limits hash>,
	// N the version whose state the script keeps (Script.StateVersion).
	// It may not contain '{' or '}'. Empty means "ratelua".
	Prefix string
	// CountDenied records every attempt, allowed or not (mode 1), so that a
	// client that keeps retrying stays blocked. By default only admitted
	// events are recorded. The mode is not part of the state key: limiters
	// that differ only in CountDenied share their state.
	CountDenied bool
	// Clock, if set, gives the time of each call (the caller's clock). By
	// default the server's clock (TIME) is used, so that app servers with
	// skewed clocks agree.
	Clock func() time.Time
	// FailOpen answers Allowed when the server could not answer: the
	// connection was refused or reset, or the caller's deadline passed
	// while the call waited for the server (a deadline is the caller's
	// bound on how long a decision may take, so a server slower than that
	// is one that did not answer). The error is still returned, wrapping
	// ErrUnavailable. The caller giving up is not an outage and is never
	// admitted: a context cancelled before or during the call (an HTTP
	// client that hung up or half-closed its connection), or whose
	// deadline had passed before the call was sent, is denied with an
	// error wrapping the context's error (context.Canceled or
	// context.DeadlineExceeded) and not ErrUnavailable; the server is not
	// asked when the context is already done. A deadline that a remote
	// client chooses (gRPC's grpc-timeout) lets that client decide how long
	// the server may take; detach it (context.WithoutCancel and a timeout
	// of the service's own) where that matters. Any answer of the server
	// (an error reply such as NOPERM, OOM, BUSY or LOADING, a failed
	// library load, a reply of the wrong shape) is never admitted. A call
	// that timed out in the client may still have been recorded by the
	// server. By default every error is denied.
	FailOpen bool
	// Registry holds the scripts the limiter may call; nil means the
	// embedded ones.
	Registry *Registry
	// Functions calls the scripts as Redis Functions (FCALL) from the
	// release's Library instead of by EVALSHA. The library is loaded on
	// every master the first time a node answers that the function is
	// missing (or beforehand with LoadFunctions). Functions survive
	// failovers and restarts, where EVALSHA meets NOSCRIPT.
	Functions bool
	// Version pins the script version; 0 means the newest. Every version
	// keeps the same contract, so pinning matters only for state. The state
	// key names the version whose state layout the script keeps
	// (Script.StateVersion): v4 keeps v3's, and so does v5's zset_log, so
	// limiters on those versions share their state and a service moves
	// between them without losing it. A move across layouts (v1, v2, v3,
	// and v5's token_bucket, ar1 and sliding_window) starts its limiters
	// fresh under new keys; pinning the old version until every instance
	// runs the new code keeps one state per limiter during a rolling
	// upgrade.
	Version int

	// DryRun decides and records every call exactly as an enforcing limiter
	// would (same script, same state, same mode), but admits it: Allowed is
	// always true, and DryRunDenied says when enforcement would have
	// denied (Observe sees KindDryRun). A call that meets an error is
	// admitted as well, with its error. For rolling out a new limit and
	// watching it before it bites.
	DryRun bool
	// DenyCache, if above 0, answers in the process, without a round trip,
	// a request (event key and number of events; Peek counts as one) that
	// the server denied with a RetryAfter, until that wait is over. It
	// holds at most DenyCache event keys, evicting the least recently
	// used, and is safe for concurrent use.
	//
	// Denied attempts are not recorded (CountDenied false; with
	// CountDenied the server would record each attempt and the option is
	// refused with ErrInvalidLimit), so until the wait is over the server
	// would deny the same request too, with the same RetryAfter,
	// ResetAfter and Limit, unless:
	//   - the state changes behind the process's back: the event key is
	//     reset by another Limiter or process (Reset, ResetMany,
	//     ResetPrefix, a deleted key), or a failover loses the write that
	//     denied it: then the server would admit earlier;
	//   - another Limiter or process records events for the same event
	//     key and limits (a smaller request that fits): then the server's
	//     RetryAfter and ResetAfter are longer;
	//   - AllowN asks for n > 1: Remaining is the server's at the denial,
	//     and the server's grows while capacity frees (for one event it is
	//     0 until the wait is over);
	//   - with the server's clock, the wait is measured on the process's
	//     clock from when the request was sent, one unit shorter, so a
	//     local answer never outlasts the server's (the next request after
	//     it asks the server).
	// Limits are part of the state key, so a process with other limits (a
	// new deployment) or another Version never changes the answers: it
	// uses another key. Reset and ResetMany through this Limiter forget
	// the key. A denial with RetryAfter Never (more events than a limit's
	// maximum) is not cached. An evicted key costs a round trip, no more.
	DenyCache int
	// Fallback, if above 0, is the share (0.001 to 1) of every limit that
	// this process enforces by itself while the server cannot be reached:
	// the same algorithm and limits, each maximum (and a bucket's refill
	// rate) multiplied by Fallback and rounded down, decided in memory per
	// event key. With N instances sharing the limits, 1/N keeps the total
	// within the limits. Only a call with no answer (ErrUnavailable) counts
	// toward it, never an error reply. Unavailability is followed per hash
	// slot: calls on a key whose slot went unanswered are answered from the
	// fallback once calls have gone unanswered for FallbackAfter (until
	// then FailOpen decides), with a nil error; one such call at a time,
	// at most one per FallbackAfter, still asks the server, and its first
	// answer ends the fallback for every key. Unanswered calls that stop
	// for FallbackAfter while other calls are answered (a blip) are
	// forgotten. The fallback's state starts empty (the events the server
	// recorded are not known) and is kept across outages.
	Fallback float64
	// FallbackAfter is how long calls must have gone unanswered before the
	// fallback decides, and how often, while it does, one call asks the
	// server; 0 falls back at the first unanswered call.
	FallbackAfter time.Duration
	// FallbackKeys bounds the event keys the fallback holds, the least
	// recently used evicted; 0 means 10,000. An evicted key starts afresh
	// (its share again), so the bound should exceed the keys active in an
	// outage.
	FallbackKeys int
	// Observe, if set, is called with every decision (Allow, AllowN, Peek,
	// every request of AllowBatch), every script load and every switch of
	// the fallback, on the caller's goroutine after the decision: it must
	// be fast and safe for concurrent use. ctx is the caller's.
	// github.com/ratelua/ratelua/rateotel turns events into OpenTelemetry
	// metrics and spans.
	Observe func(ctx context.Context, e Event)
}

// maxLimits is the most limits one call of a script takes.
const maxLimits = 16

// Result is one decision.
type Result struct {
	// Allowed is true when every limit admits the events.
	Allowed bool
	// Remaining is how many more events would be admitted right now.
	Remaining int64
	// RetryAfter is 0 when allowed; otherwise the wait after which the same
	// number of events would be admitted if nothing else happens, rounded
	// up, or Never.
	RetryAfter time.Duration
	// ResetAfter is the time until the limiter's state is fresh again.
	ResetAfter time.Duration
	// Limit is the index of the limit that decided: when allowed the one with
	// the fewest remaining, when denied the one with the longest wait; -1
	// after a reset.
	Limit int
	// DryRunDenied is true under Options.DryRun when enforcement would have
	// denied: Allowed is true, and Remaining, RetryAfter, ResetAfter and
	// Limit are the denial's.
	DryRunDenied bool
}

// Limiter decides events against a set of limits with one script. It is
// safe for concurrent use.
type Limiter struct {
	client    Client
	script    Script
	unit      unit
	limits    []string // the limit arguments, in the unit
	quotas    []quota
	prefix    string
	hash      string // of script, unit and limits: part of every key
	mode      string
	clock     func() time.Time
	failOpen  bool
	functions bool
	name      string // the script's "name@vN"

	// Around the call, each nil or false when unused.
	extras   bool // any of the below
	dryRun   bool
	deny     *denyCache
	fallback *fallback
	observe  func(ctx context.Context, e Event)
}

// spec is what a typed constructor hands to newLimiter.
type spec struct {
	script    string
	durations []time.Duration
	quotas    []quota // one per limit
	// args renders the limit arguments once the unit is known.
	args func(u unit) ([]string, error)
	// model returns a new reference model of the limits, each scaled to
	// share, in the unit: the state of one event key in the fallback.
	model func(share float64, u unit) func() model.Model
}

// quota is a limit as a policy: at most max events in window.
type quota struct {
	max    int64
	window time.Duration
}

// scaleDuration returns d * f, bounded to [0, the largest Duration].
func scaleDuration(d time.Duration, f float64) time.Duration {
	v := float64(d) * f
	if math.IsNaN(v) || v <= 0 {
		return 0
	}
	if v >= float64(maxDuration) {
		return maxDuration
	}
	return time.Duration(math.Ceil(v))
}

func newLimiter(client Client, opts Options, s spec) (*Limiter, error) {
	count := len(s.quotas)
	if client == nil {
		return nil, &LimitError{Index: -1, Field: "client", Reason: "is nil"}
	}
	if count < 1 || count > maxLimits {
		return nil, &LimitError{Index: -1, Field: "limits", Reason: fmt.Sprintf("must be 1 to %d, got %d", maxLimits, count)}
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "ratelua"
	}
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	u, err := pickUnit(s.durations)
	if err != nil {
		return nil, &LimitError{Index: -1, Field: "durations", Reason: err.Error()}
	}
	args, err := s.args(u)
	if err != nil {
		return nil, err
	}
	registry := opts.Registry
	if registry == nil {
		registry = NewRegistry()
	}
	script, err := registry.Latest(s.script)
	if opts.Version != 0 {
		script, err = registry.Lookup(s.script, opts.Version)
	}
	if err != nil {
		return nil, err
	}
	// The hash names the state version, not the script's: versions that
	// share a state layout share keys.
	sum := sha1.Sum([]byte(script.Name + "@v" + strconv.Itoa(stateVersion(script)) + " " + u.name + " " + strings.Join(args, " ")))
	mode := "0"
	if opts.CountDenied {
		mode = "1"
	}
	l := &Limiter{
		client: client, script: script, unit: u, limits: args, quotas: s.quotas,
		prefix: prefix, hash: hex.EncodeToString(sum[:4]), mode: mode,
		clock: opts.Clock, failOpen: opts.FailOpen, functions: opts.Functions,
		name: script.String(), dryRun: opts.DryRun, observe: opts.Observe,
	}
	switch {
	case opts.DenyCache < 0:
		return nil, &LimitError{Index: -1, Field: "DenyCache", Reason: fmt.Sprintf("must be at least 0, got %d", opts.DenyCache)}
	case opts.DenyCache > 0 && opts.CountDenied:
		return nil, &LimitError{Index: -1, Field: "DenyCache", Reason: "cannot answer for the server when CountDenied records every attempt"}
	case opts.DenyCache > 0:
		l.deny = newDenyCache(opts.DenyCache)
	}
	switch {
	case opts.Fallback == 0:
	case !(opts.Fallback >= 0.001 && opts.Fallback <= 1):
		return nil, &LimitError{Index: -1, Field: "Fallback", Reason: fmt.Sprintf("must be 0 or a share in [0.001, 1], got %v", opts.Fallback)}
	case opts.FallbackAfter < 0:
		return nil, &LimitError{Index: -1, Field: "FallbackAfter", Reason: fmt.Sprintf("must be at least 0, got %v", opts.FallbackAfter)}
	case opts.FallbackKeys < 0:
		return nil, &LimitError{Index: -1, Field: "FallbackKeys", Reason: fmt.Sprintf("must be at least 0, got %d", opts.FallbackKeys)}
	default:
		l.fallback = newFallback(opts.FallbackAfter, opts.FallbackKeys, s.model(opts.Fallback, u))
	}
	l.extras = l.dryRun || l.deny != nil || l.fallback != nil || l.observe != nil
	return l, nil
}

// Limits returns how many limits the limiter checks.
func (l *Limiter) Limits() int { return len(l.quotas) }

// DryRun reports whether the limiter was made with Options.DryRun: it
// admits every call and only says what enforcement would have done. Fronts
// such as ratehttp use it to keep a dry-run limit out of what a client
// sees.
func (l *Limiter) DryRun() bool { return l.dryRun }

// Quota describes limit i (0 <= i < Limits()) as a policy for clients: at
// most max events in window. It is a Window's Max and Duration, a Log's
// Max and Window, a Bucket's Capacity and the time it takes to fill from
// empty, and a Decay's Max and the mean time an event stays in the count
// (Resolution * Factor / (Factor - 1)). Out of range, it returns 0, 0.
func (l *Limiter) Quota(i int) (max int64, window time.Duration) {
	if i < 0 || i >= len(l.quotas) {
		return 0, 0
	}
	return l.quotas[i].max, l.quotas[i].window
}

// Script returns the script version the limiter calls.
func (l *Limiter) Script() Script { return l.script }

// Key returns the state key of an event key:
// <prefix>:{<event key>}:<script>:v<N>:<8 hex digits of the limits>, with
// '%', '{' and '}' of the event key percent-encoded, and an event key
// longer than MaxEventKey bytes replaced by a digest of it.
func (l *Limiter) Key(eventKey string) string {
	return stateKey(l.prefix, eventKey, l.script, l.hash)
}

// Args returns the ARGV of a call with eventCount n at the limiter's clock,
// exactly as the limiter sends it: any language can replay it by EVALSHA.
// With a Clock whose time the scripts cannot take (before 1970, or past
// 2^52 units), now is the clock's reading all the same; the limiter's own
// calls refuse it.
func (l *Limiter) Args(n int64) []string {
	now, _ := l.now()
	return l.appendArgs(make([]string, 0, 4+len(l.limits)), n, now)
}

// now returns the clock's reading in the unit, "" for the server's clock.
func (l *Limiter) now() (string, error) {
	if l.clock == nil {
		return "", nil
	}
	return l.nowOf(l.clock())
}

// nowOf returns the reading t of the limiter's Clock in the unit.
func (l *Limiter) nowOf(t time.Time) (string, error) {
	now := l.unit.now(t)
	s := strconv.FormatInt(now, 10)
	if now < 0 || now > maxScriptInt {
		return s, &LimitError{Index: -1, Field: "Clock", Reason: fmt.Sprintf("must read between 1970 and 2^52 %s after it, got %s", l.unit.name, t.UTC().Format(time.RFC3339Nano))}
	}
	return s, nil
}

// appendArgs appends the ARGV of a call to dst.
func (l *Limiter) appendArgs(dst []string, n int64, now string) []string {
	dst = append(dst, strconv.FormatInt(n, 10), l.unit.name, now, l.mode)
	return append(dst, l.limits...)
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

// loaded tells the hook of a script load that began at start.
func (l *Limiter) loaded(ctx context.Context, start time.Time, err error) {
	if l.observe != nil {
		l.emit(ctx, Event{Kind: KindLoad, Err: classify(l.name, err), Latency: time.Since(start), Result: Result{Limit: -1}})
	}
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

// exec sends many calls of the limiter's script (one round trip per node
// where the client batches) and recovers the entries that met NOSCRIPT or
// a missing function, together.
func (l *Limiter) exec(ctx context.Context, calls []Call) ([][]int64, []error) {
	replies := make([][]int64, len(calls))
	flat := make([]int64, 5*len(calls))
	for i := range replies {
		replies[i] = flat[5*i : 5*i+5 : 5*i+5]
	}
	errs := runBatch(ctx, l.client, calls, replies)
	var retry []int
	for i, err := range errs {
		if err != nil && l.recoverable(calls[i].Command, err) {
			retry = append(retry, i)
		}
	}
	if len(retry) == 0 {
		return replies, errs
	}
	start := time.Now()
	if l.functions {
		err := l.loadLibrary(ctx)
		l.loaded(ctx, start, err)
		if err != nil {
			for _, i := range retry {
				errs[i] = err
			}
			return replies, errs
		}
	}
	again := make([]Call, len(retry))
	againReplies := make([][]int64, len(retry))
	for j, i := range retry {
		again[j], againReplies[j] = calls[i], replies[i]
		if !l.functions {
			again[j].Command, again[j].Script = "EVAL", l.script.Source
		}
	}
	for j, err := range runBatch(ctx, l.client, again, againReplies) {
		errs[retry[j]] = err
		if !l.functions {
			// Each EVAL loaded the script on its node.
			l.loaded(ctx, start, err)
		}
	}
	return replies, errs
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
