package ratelua

import (
	"math"
	"time"
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
	core
	quotas []quota
	hot    *hotKeys // Options.HotKeys; nil: off
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

// newLimiter is the Limiter of spec s: its core (the options, the
// limits, the chain of stages) and its quotas.
func newLimiter(client Client, opts Options, s spec) (*Limiter, error) {
	c, err := newCore(client, opts, s)
	if err != nil {
		return nil, err
	}
	l := &Limiter{core: c, quotas: s.quotas}
	l.bindWire()
	if opts.HotKeys != nil {
		h, err := checkHotKeys(*opts.HotKeys, c.script, s.quotas)
		if err != nil {
			return nil, err
		}
		l.hot = newHotKeys(l, h)
	}
	return l, nil
}

// Limits returns how many limits the limiter checks.
func (l *Limiter) Limits() int { return len(l.quotas) }

// DryRun reports whether the limiter was made with Options.DryRun: it
// admits every call and only says what enforcement would have done. Fronts
// such as ratehttp use it to keep a dry-run limit out of what a client
// sees.
func (l *Limiter) DryRun() bool { return l.chain.DryRun.On }

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
	return l.key(eventKey)
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
