package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ratelua/ratelua"
)

// decider decides the descriptors of one rule with one ratelua limiter.
//
// A reference rule of L requests per unit D is a sliding window with one
// bucket of D (so a window starts on the unit, as the reference's do) that
// counts every attempt (mode 1), as the reference's INCRBY does. It holds
// two limits on the same bucket, L+1 first and L second: a request of n >= 1
// is over the limit when the L limit denies it, and a request of 0 hits
// (the reference's "check only", over the limit when the count is above L)
// is told apart from one at exactly L by which limit decides a denial: at
// count L only the L limit denies, above it both do and the first (L+1)
// decides, ties going to the lower index. A rule of 0 requests per unit
// holds the one limit 1.
type decider struct {
	limiter   *ratelua.Limiter
	reference bool
	zero      bool  // a reference rule of 0 requests per unit
	maxN      int64 // hits above it decide as it does
	limits    []Limit
}

// limiterOptions are the settings every limiter shares.
type limiterOptions struct {
	Prefix    string
	Client    ratelua.Client
	DenyCache int
	Fallback  float64
	FailOpen  bool
	Observe   func(context.Context, ratelua.Event)
}

// newDecider builds the limiter of a rule.
func newDecider(r *Rule, o limiterOptions) (*decider, error) {
	d := &decider{limits: r.Limits, reference: r.Reference()}
	opts := ratelua.Options{Prefix: o.Prefix, Fallback: o.Fallback, FailOpen: o.FailOpen, Observe: o.Observe}
	var err error
	if d.reference {
		l := r.Limits[0]
		dur := l.Duration()
		opts.CountDenied = true
		opts.Clock = time.Now
		max := int64(l.RequestsPerUnit)
		if max == 0 {
			d.zero, d.maxN = true, 2
			d.limiter, err = ratelua.NewSlidingWindow(o.Client, opts, ratelua.Window{Max: 1, Duration: dur, Resolution: dur})
		} else {
			d.maxN = max + 2
			d.limiter, err = ratelua.NewSlidingWindow(o.Client, opts,
				ratelua.Window{Max: max + 1, Duration: dur, Resolution: dur},
				ratelua.Window{Max: max, Duration: dur, Resolution: dur})
		}
		if err != nil {
			return nil, fmt.Errorf("rls: rule %s: %w", r.Key, err)
		}
		return d, nil
	}
	opts.DenyCache = o.DenyCache
	for _, l := range r.Limits {
		d.maxN = max(d.maxN, int64(l.RequestsPerUnit)+1)
	}
	switch r.Algorithm {
	case "fixed_window", "sliding_window":
		ws := make([]ratelua.Window, len(r.Limits))
		for i, l := range r.Limits {
			dur := l.Duration()
			res := dur
			if r.Algorithm == "sliding_window" {
				res = dur / 10
				if r.Resolution > 0 {
					res = min(r.Resolution, dur)
				}
			}
			ws[i] = ratelua.Window{Max: int64(l.RequestsPerUnit), Duration: dur, Resolution: res}
		}
		d.limiter, err = ratelua.NewSlidingWindow(o.Client, opts, ws...)
	case "token_bucket":
		bs := make([]ratelua.Bucket, len(r.Limits))
		for i, l := range r.Limits {
			bs[i] = ratelua.Bucket{Capacity: int64(l.RequestsPerUnit), RefillAmount: int64(l.RequestsPerUnit), RefillInterval: l.Duration()}
		}
		d.limiter, err = ratelua.NewTokenBucket(o.Client, opts, bs...)
	case "zset_log":
		ls := make([]ratelua.Log, len(r.Limits))
		for i, l := range r.Limits {
			ls[i] = ratelua.Log{Max: int64(l.RequestsPerUnit), Window: l.Duration()}
		}
		d.limiter, err = ratelua.NewZSetLog(o.Client, opts, ls...)
	case "ar1":
		ds := make([]ratelua.Decay, len(r.Limits))
		for i, l := range r.Limits {
			ds[i] = ratelua.Decay{Max: int64(l.RequestsPerUnit), Factor: 2, Resolution: l.Duration() / 2}
		}
		d.limiter, err = ratelua.NewAR1(o.Client, opts, ds...)
	default:
		err = fmt.Errorf("unknown algorithm %q", r.Algorithm)
	}
	if err != nil {
		return nil, fmt.Errorf("rls: rule %s: %w", r.Key, err)
	}
	return d, nil
}

// decision is one descriptor's answer from its limiter.
type decision struct {
	allowed    bool
	remaining  int64
	retryAfter time.Duration // ratelua.Never when it can never be admitted
	resetAfter time.Duration
	index      int // 0-based
}

// job is one descriptor to decide.
type job struct {
	d   *decider
	key string // the event key
	n   uint64 // hits
	out decision
	err error
}

// scriptN is the eventCount sent for n hits.
func (j *job) scriptN() int64 {
	if j.n > uint64(j.d.maxN) {
		return j.d.maxN
	}
	return int64(j.n)
}

// decideBatch decides every job in one round trip per node (when the
// client batches), now being the request's time for reference rules.
func decideBatch(ctx context.Context, client ratelua.Client, jobs []*job, now time.Time) {
	if len(jobs) == 0 {
		return
	}
	calls := make([]ratelua.Call, len(jobs))
	replies := make([][]int64, len(jobs))
	flat := make([]int64, 5*len(jobs))
	for i, j := range jobs {
		args := j.d.limiter.Args(j.scriptN())
		if j.d.reference {
			args[2] = nowIn(args[1], now)
		}
		calls[i] = ratelua.Call{Command: "EVALSHA", Script: j.d.limiter.Script().SHA1, Key: j.d.limiter.Key(j.key), Args: args}
		replies[i] = flat[5*i : 5*i+5]
	}
	var errs []error
	if b, ok := client.(interface {
		RunBatch(context.Context, []ratelua.Call, [][]int64) []error
	}); ok {
		errs = b.RunBatch(ctx, calls, replies)
	} else {
		errs = make([]error, len(calls))
		for i := range calls {
			errs[i] = client.Run(ctx, calls[i], replies[i])
		}
	}
	for i, j := range jobs {
		err := errs[i]
		if isNoScript(err) {
			// Script.Run loads the script on that node (EVAL).
			err = j.d.limiter.Script().Run(ctx, client, calls[i].Key, calls[i].Args, replies[i])
		}
		if err != nil {
			j.err = err
			continue
		}
		j.out = decode(replies[i], calls[i].Args[1])
	}
}

// decideEach decides every job through its Limiter, one call each: the
// path that keeps the limiters' deny cache, fallback and fail-open.
func decideEach(ctx context.Context, jobs []*job) {
	for _, j := range jobs {
		var res ratelua.Result
		var err error
		if n := j.scriptN(); n == 0 {
			res, err = j.d.limiter.Peek(ctx, j.key)
		} else {
			res, err = j.d.limiter.AllowN(ctx, j.key, n)
		}
		if err != nil && !res.Allowed {
			j.err = err
			continue
		}
		j.out = decision{allowed: res.Allowed, remaining: res.Remaining, retryAfter: res.RetryAfter, resetAfter: res.ResetAfter, index: res.Limit}
	}
}

// isNoScript reports whether err is the server's NOSCRIPT.
func isNoScript(err error) bool {
	var se *ratelua.ServerError
	return errors.As(err, &se) && strings.HasPrefix(se.Message, "NOSCRIPT")
}

// nowIn is t in a script's time unit.
func nowIn(unit string, t time.Time) string {
	switch unit {
	case "s":
		return strconv.FormatInt(t.Unix(), 10)
	case "us":
		return strconv.FormatInt(t.UnixMicro(), 10)
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// decode reads a script's reply {allowed, remaining, retry_after,
// reset_after, limit_index} in the call's unit.
func decode(reply []int64, unit string) decision {
	scale := time.Millisecond
	switch unit {
	case "s":
		scale = time.Second
	case "us":
		scale = time.Microsecond
	}
	dur := func(v int64) time.Duration {
		if v < 0 {
			return ratelua.Never
		}
		if v > int64(math.MaxInt64/scale) {
			return math.MaxInt64
		}
		return time.Duration(v) * scale
	}
	return decision{allowed: reply[0] == 1, remaining: reply[1], retryAfter: dur(reply[2]), resetAfter: dur(reply[3]), index: int(reply[4]) - 1}
}
