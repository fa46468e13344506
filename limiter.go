package ratelua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ratelua/ratelua/internal/denycache"
	"github.com/ratelua/ratelua/internal/fallback"
	"github.com/ratelua/ratelua/internal/model"
)

// Never is the RetryAfter of events that can never be admitted: more than a
// limit's maximum at once.
const Never = time.Duration(-1)

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
	// Limit is the index of the limit that decided, 0-based in the order
	// the constructor was given the limits (the scripts' limit_index is
	// 1-based: Limit is limit_index - 1): when allowed the one with the
	// fewest remaining, when denied the one with the longest wait; -1 after
	// a reset.
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
	deny     *denycache.Cache
	fallback *fallback.Fallback
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
		l.deny = denycache.New(opts.DenyCache)
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
		// A maximum the share rounds down to 0 would deny every request
		// of an outage as never: refused rather than floored at 1, which
		// would let N instances admit N times a small limit.
		for i, q := range s.quotas {
			if fallback.ScaleMax(q.max, opts.Fallback) < 1 {
				least := "1/" + strconv.FormatInt(q.max, 10)
				if q.max == 1 {
					least = "1"
				}
				return nil, &LimitError{Index: i, Field: "Fallback", Reason: fmt.Sprintf("%v of the maximum %d rounds down to 0, so the fallback would deny every request of an outage: the share must be at least %s", opts.Fallback, q.max, least)}
			}
		}
		l.fallback = fallback.New(opts.FallbackAfter, opts.FallbackKeys, s.model(opts.Fallback, u))
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
