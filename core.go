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

	"github.com/ratelua/ratelua/internal/decide"
	"github.com/ratelua/ratelua/internal/denycache"
	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/model"
)

// core is what a Limiter and a Semaphore share: the script and its limit
// arguments, the state keys, the clock, the failure policy, and the chain
// of stages around the round trip (internal/decide) that every call of
// either goes through.
type core struct {
	client    Client
	script    Script
	unit      unit
	limits    []string // the limit arguments, in the unit
	prefix    string
	hash      string // of script, unit and limits (concurrency: unit only): part of every key
	mode      string // ARGV[4] of a decision: "1" records denied events too
	clock     func() time.Time
	failOpen  bool
	functions bool
	name      string // the script's "name@vN"
	lifetime  int64  // a reservation's lifetime, in the unit
	exact     bool   // Options.ExactKeys: the event key is the state key
	chain     decide.Chain
}

// spec is what a typed constructor hands to newCore.
type spec struct {
	script    string
	durations []time.Duration
	quotas    []quota // one per limit
	// args renders the limit arguments once the unit is known.
	args func(u unit) ([]string, error)
	// model returns a new reference model of the limits, each scaled to
	// share, in the unit: the state of one event key in the fallback.
	model func(share float64, u unit) func() model.Model
	// unitKeys makes the state key's hash name the script's state version
	// and the unit only, not the limits (concurrency: the leases of one
	// key read the same under any Max and Lease).
	unitKeys bool
}

// newCore checks the options and the limits of s and builds the core of
// a limiter with its chain.
func newCore(client Client, opts Options, s spec) (core, error) {
	count := len(s.quotas)
	if client == nil {
		return core{}, &LimitError{Index: -1, Field: "client", Reason: "is nil"}
	}
	if count < 1 || count > maxLimits {
		return core{}, &LimitError{Index: -1, Field: "limits", Reason: fmt.Sprintf("must be 1 to %d, got %d", maxLimits, count)}
	}
	prefix := opts.Prefix
	if prefix == "" {
		prefix = "ratelua"
	}
	if err := checkPrefix(prefix); err != nil {
		return core{}, err
	}
	u, err := pickUnit(s.durations)
	if err != nil {
		return core{}, &LimitError{Index: -1, Field: "durations", Reason: err.Error()}
	}
	args, err := s.args(u)
	if err != nil {
		return core{}, err
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
		return core{}, err
	}
	// The hash names the state version, not the script's: versions that
	// share a state layout share keys.
	keyed := script.Name + "@v" + strconv.Itoa(stateVersion(script)) + " " + u.Name
	if !s.unitKeys {
		keyed += " " + strings.Join(args, " ")
	}
	sum := sha1.Sum([]byte(keyed))
	mode := "0"
	if opts.CountDenied {
		mode = "1"
	}
	c := core{
		client: client, script: script, unit: u, limits: args,
		prefix: prefix, hash: hex.EncodeToString(sum[:4]), mode: mode,
		clock: opts.Clock, failOpen: opts.FailOpen, functions: opts.Functions,
		name: script.String(), exact: opts.ExactKeys,
	}
	if opts.HotKeys != nil && (script.Version < 7 || !script.Reserves()) {
		// The Limiter checks the rest; a Semaphore's script never reserves.
		_, err := checkHotKeys(*opts.HotKeys, script, nil)
		return core{}, err
	}
	switch {
	case opts.DenyCache < 0:
		return core{}, &LimitError{Index: -1, Field: "DenyCache", Reason: fmt.Sprintf("must be at least 0, got %d", opts.DenyCache)}
	case opts.DenyCache > 0 && opts.CountDenied:
		return core{}, &LimitError{Index: -1, Field: "DenyCache", Reason: "cannot answer for the server when CountDenied records every attempt"}
	case opts.DenyCache > 0:
		c.chain.Deny = decide.Deny{Cache: denycache.New(opts.DenyCache), Unit: u}
	}
	switch {
	case opts.Fallback == 0:
	case !(opts.Fallback >= 0.001 && opts.Fallback <= 1):
		return core{}, &LimitError{Index: -1, Field: "Fallback", Reason: fmt.Sprintf("must be 0 or a share in [0.001, 1], got %v", opts.Fallback)}
	case opts.FallbackAfter < 0:
		return core{}, &LimitError{Index: -1, Field: "FallbackAfter", Reason: fmt.Sprintf("must be at least 0, got %v", opts.FallbackAfter)}
	case opts.FallbackKeys < 0:
		return core{}, &LimitError{Index: -1, Field: "FallbackKeys", Reason: fmt.Sprintf("must be at least 0, got %d", opts.FallbackKeys)}
	default:
		// A maximum the share rounds down to 0 would deny every request
		// of an outage as never: refused rather than floored at 1, which
		// would let N instances admit N times a small limit.
		for i, q := range s.quotas {
			if fallback.ScaleMax(q.max, opts.Fallback) < 1 {
				least := "1/" + strconv.FormatInt(q.max, 10)
				if q.max == 1 {
					least = "1"
				}
				return core{}, &LimitError{Index: i, Field: "Fallback", Reason: fmt.Sprintf("%v of the maximum %d rounds down to 0, so the fallback would deny every request of an outage: the share must be at least %s", opts.Fallback, q.max, least)}
			}
		}
		mode := 0
		if opts.CountDenied {
			mode = 1
		}
		c.chain.Fallback = decide.Fallback{F: fallback.New(opts.FallbackAfter, opts.FallbackKeys, s.model(opts.Fallback, u)), Unit: u, Mode: mode, Exact: opts.ExactKeys}
	}
	switch lifetime := opts.ReservationLifetime; {
	case lifetime < 0:
		return core{}, &LimitError{Index: -1, Field: "ReservationLifetime", Reason: fmt.Sprintf("must be at least 0, got %v", lifetime)}
	case lifetime == 0:
		lifetime = DefaultReservationLifetime
		fallthrough
	default:
		// Rounded up to the unit; at most 2^52 units (292 years in us).
		n := int64(lifetime / u.Size)
		if lifetime%u.Size != 0 {
			n++
		}
		c.lifetime = min(n, maxScriptInt)
	}
	c.chain.DryRun.On = opts.DryRun
	if hook := opts.Observe; hook != nil {
		name, prefix := c.name, c.prefix
		c.chain.Observe.Hook = func(ctx context.Context, e decide.Event) {
			hook(ctx, Event{Kind: e.Kind, Script: name, Prefix: prefix, N: e.N, Result: Result(e.Result), Err: e.Err, Latency: e.Latency, Local: e.Local})
		}
	}
	return c, nil
}

// bindWire gives the chain the core's round trip. It is called once the
// core is at its final address (in the Limiter or Semaphore that holds
// it), since the wire's functions keep a pointer to it.
func (l *core) bindWire() {
	l.chain.Wire = decide.Wire{Send: l.send, Record: l.record}
}

// key returns the state key of an event key: the event key itself under
// Options.ExactKeys.
func (l *core) key(eventKey string) string {
	if l.exact {
		return eventKey
	}
	return stateKey(l.prefix, eventKey, l.script, l.hash)
}

// now returns the clock's reading in the unit, "" for the server's clock.
func (l *core) now() (string, error) {
	if l.clock == nil {
		return "", nil
	}
	return l.nowOf(l.clock())
}

// nowOf returns the reading t of the limiter's Clock in the unit.
func (l *core) nowOf(t time.Time) (string, error) {
	now := l.unit.Now(t)
	s := strconv.FormatInt(now, 10)
	if now < 0 || now > maxScriptInt {
		return s, &LimitError{Index: -1, Field: "Clock", Reason: fmt.Sprintf("must read between 1970 and 2^52 %s after it, got %s", l.unit.Name, t.UTC().Format(time.RFC3339Nano))}
	}
	return s, nil
}

// emit tells the hook of e, if there is one (a load, a lost lease).
func (l *core) emit(ctx context.Context, e decide.Event) {
	l.chain.Observe.Emit(ctx, e)
}

// failed is the Result that goes with err: Allowed only when the server
// could not be asked or did not answer, under FailOpen.
func (l *core) failed(err error) (Result, error) {
	if l.failOpen && errors.Is(err, ErrUnavailable) {
		var se *ServerError
		if !errors.As(err, &se) {
			return Result{Allowed: true, Limit: -1}, err
		}
	}
	return Result{Limit: -1}, err
}

// noAnswer reports an error of a call that got no answer, the only one
// FailOpen admits and the fallback answers for.
func noAnswer(err error) bool {
	var se *ServerError
	return errors.Is(err, ErrUnavailable) && !errors.As(err, &se)
}
