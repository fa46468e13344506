package ratelua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// Never is the RetryAfter of events that can never be admitted: more than a
// limit's maximum at once.
const Never = time.Duration(-1)

// Options configure a limiter. The zero value is a limiter under the key
// prefix "ratelua" that counts only admitted events, reads the server's
// clock and fails closed.
type Options struct {
	// Prefix starts every state key: <Prefix>:{<event key>}:<script>:v<N>:<limits hash>.
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
	// FailOpen answers Allowed when the server cannot be reached (the error
	// is still returned, wrapping ErrUnavailable). By default such a call is
	// denied.
	FailOpen bool
	// Registry runs the scripts; nil means a new registry of the embedded
	// scripts.
	Registry *Registry
	// Functions calls the scripts as Redis Functions (FCALL) from the
	// release's Library instead of by EVALSHA. The library is loaded on
	// every master the first time a node answers that the function is
	// missing (or beforehand with LoadFunctions). Functions survive
	// failovers and restarts, where EVALSHA meets NOSCRIPT.
	Functions bool
	// Version pins the script version (and so the state key, which names
	// it); 0 means the newest. Every version keeps the same contract, so
	// pinning matters only for state: a service that moves to a new version
	// starts its limiters fresh under new keys, and pinning the old version
	// until every instance runs the new code keeps one state per limiter
	// during a rolling upgrade.
	Version int
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
}

// Limiter decides events against a set of limits with one script. It is
// safe for concurrent use.
type Limiter struct {
	client    rueidis.Client
	registry  *Registry
	script    Script
	unit      unit
	limits    []string // the limit arguments, in the unit
	prefix    string
	hash      string // of script, unit and limits: part of every key
	mode      string
	clock     func() time.Time
	failOpen  bool
	functions bool
}

// spec is what a typed constructor hands to newLimiter.
type spec struct {
	script    string
	durations []time.Duration
	// args renders the limit arguments once the unit is known.
	args func(u unit) ([]string, error)
}

func newLimiter(client rueidis.Client, opts Options, s spec, count int) (*Limiter, error) {
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
	if strings.ContainsAny(prefix, "{}") {
		return nil, &LimitError{Index: -1, Field: "Prefix", Reason: fmt.Sprintf("may not contain '{' or '}', got %q", prefix)}
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
	sum := sha1.Sum([]byte(script.String() + " " + u.name + " " + strings.Join(args, " ")))
	mode := "0"
	if opts.CountDenied {
		mode = "1"
	}
	return &Limiter{
		client: client, registry: registry, script: script, unit: u, limits: args,
		prefix: prefix, hash: hex.EncodeToString(sum[:4]), mode: mode,
		clock: opts.Clock, failOpen: opts.FailOpen, functions: opts.Functions,
	}, nil
}

// Script returns the script version the limiter calls.
func (l *Limiter) Script() Script { return l.script }

// Key returns the state key of an event key.
func (l *Limiter) Key(eventKey string) string {
	return StateKey(l.prefix, eventKey, l.script, l.hash)
}

// Args returns the ARGV of a call with eventCount n at the limiter's clock,
// exactly as the limiter sends it: any language can replay it by EVALSHA.
func (l *Limiter) Args(n int64) []string {
	return l.appendArgs(make([]string, 0, 4+len(l.limits)), n)
}

// appendArgs appends the ARGV of Args(n) to dst.
func (l *Limiter) appendArgs(dst []string, n int64) []string {
	now := ""
	if l.clock != nil {
		now = strconv.FormatInt(l.unit.now(l.clock()), 10)
	}
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
		return l.failed(&LimitError{Index: -1, Field: "n", Reason: fmt.Sprintf("must be in [1, 2^52], got %d", n)})
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

func (l *Limiter) call(ctx context.Context, eventKey string, n int64) (Result, error) {
	key := l.Key(eventKey)
	if l.functions {
		return l.decode(fcall(ctx, l.client, l.script, []Call{{Keys: []string{key}, Args: l.Args(n)}})[0])
	}
	// The arguments of Args, in a buffer that stays on the stack for up to
	// maxLimits limits of three integers.
	var buf [4 + 3*maxLimits]string
	return l.decode(evalsha(ctx, l.client, l.script, []string{key}, l.appendArgs(buf[:0], n)))
}

// exec runs calls of the limiter's script by EVALSHA (through the
// registry) or, with Options.Functions, by FCALL.
func (l *Limiter) exec(ctx context.Context, calls []Call) []rueidis.RedisResult {
	switch {
	case l.functions:
		return fcall(ctx, l.client, l.script, calls)
	case len(calls) == 1:
		return []rueidis.RedisResult{l.registry.Exec(ctx, l.client, l.script, calls[0].Keys, calls[0].Args)}
	}
	return l.registry.ExecBatch(ctx, l.client, l.script, calls)
}

// decode turns a script reply into a Result, applying the fail-open or
// fail-closed choice to errors.
func (l *Limiter) decode(resp rueidis.RedisResult) (Result, error) {
	// ToArray and AsInt64 read the reply in place: no slice is allocated.
	values, err := resp.ToArray()
	if err != nil {
		return l.failed(classify(l.script, err))
	}
	var ints [5]int64
	if len(values) != len(ints) {
		return l.failed(fmt.Errorf("ratelua: %s: reply has %d integers, want 5", l.script, len(values)))
	}
	for i := range values {
		if ints[i], err = values[i].AsInt64(); err != nil {
			// A reply of another shape is the script's, not the network's.
			return l.failed(fmt.Errorf("ratelua: %s: reply element %d: %w", l.script, i+1, err))
		}
	}
	r, err := resultOf(ints[:], l.unit)
	if err != nil {
		return l.failed(fmt.Errorf("ratelua: %s: %w", l.script, err))
	}
	return r, nil
}

func resultOf(ints []int64, u unit) (Result, error) {
	if len(ints) != 5 {
		return Result{}, fmt.Errorf("reply has %d integers, want 5", len(ints))
	}
	return Result{
		Allowed:    ints[0] == 1,
		Remaining:  ints[1],
		RetryAfter: u.duration(ints[2]),
		ResetAfter: u.duration(ints[3]),
		Limit:      int(ints[4]) - 1,
	}, nil
}

// failed is the Result that goes with err: Allowed only for an unavailable
// server under FailOpen.
func (l *Limiter) failed(err error) (Result, error) {
	if l.failOpen && errors.Is(err, ErrUnavailable) {
		return Result{Allowed: true, Limit: -1}, err
	}
	return Result{Limit: -1}, err
}

// classify wraps an error of a script call: an error reply is a
// ScriptError (or unavailability: LOADING, CLUSTERDOWN, TRYAGAIN,
// MASTERDOWN, BUSY); ratelua's own errors pass through; anything else kept
// the call from the server and is an UnavailableError.
func classify(s Script, err error) error {
	if errors.Is(err, ErrUnknownScript) || errors.Is(err, ErrInvalidLimit) || errors.Is(err, ErrCrossSlot) {
		return err
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		msg := strings.TrimPrefix(re.Error(), "ERR ")
		switch {
		case strings.HasPrefix(msg, "ratelua:"):
			return &ScriptError{Script: s.String(), Message: msg}
		case re.IsLoading(), re.IsClusterDown(), re.IsTryAgain(),
			strings.HasPrefix(msg, "MASTERDOWN"), strings.HasPrefix(msg, "BUSY"):
			return &UnavailableError{Err: err}
		default:
			return &ScriptError{Script: s.String(), Message: msg}
		}
	}
	return &UnavailableError{Err: err}
}
