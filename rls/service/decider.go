package service

import (
	"context"
	"fmt"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/config"
)

// decider decides the descriptors of one rule with one ratelua limiter.
//
// A reference rule of L requests per unit D is the reference's fixed
// window: a count per descriptor and window aligned to D, to which every
// hit is added (the reference's INCRBY), over the limit when the count
// after the hits is above L. It is a sliding window with one bucket of D
// (so a window starts on the unit, as the reference's do) that counts
// every attempt (mode 1), with the one limit refMax: the script's remaining
// is then refMax minus the count after the call, so the service knows the
// count before and after each request exactly, and decides L itself. The
// limiter, and so the state, depends on the unit only: every reference
// rule and limit override of a unit shares one decider, and a descriptor
// keeps its count when a reload changes its requests_per_unit or when it
// carries its own limit, as in the reference.
//
// Under Options.ShareReferenceCounters a reference rule is instead
// envoyproxy/ratelimit's own counter: the root's fixed_window script on
// the reference's key (ratelua.Options.ExactKeys, the key built by
// referenceKey), INCRBY by every hit and EXPIRE by the unit's seconds, with
// the one limit sharedMax, read the same way (the count after the call is
// sharedMax minus remaining).
type decider struct {
	limiter *ratelua.Limiter
	// charge decides an extension rule's charges (ChargeKey): the
	// limiter with CountDenied. nil for reference rules, which count
	// every hit.
	charge    *ratelua.Limiter
	reference bool
	shared    bool          // the reference's own counters (ShareReferenceCounters)
	top       int64         // a reference rule's one limit: refMax, or sharedMax when shared
	maxN      int64         // hits above it decide as it does
	span      time.Duration // a reference rule's unit
	limits    []config.Limit
}

// refMax is the one limit of a reference rule's sliding window: the most
// the scripts take. Counts above it saturate (every answer stays the
// same: requests_per_unit is below it).
const refMax = config.MaxRequests + 1

// sharedMax is the one limit of a reference rule on the reference's own
// counters: 2^52, the most the scripts take, far above any
// requests_per_unit (a uint32). A count above it (only the reference
// could add so many) reads as sharedMax: every answer stays the same.
const sharedMax = 1 << 52

// limiterOptions are the settings every limiter shares.
type limiterOptions struct {
	Prefix    string
	Client    ratelua.Client
	DenyCache int
	Fallback  float64
	FailOpen  bool
	Observe   func(context.Context, ratelua.Event)
	Clock     func() time.Time // nil: time.Now, and the server's for extension rules
	// Shared decides reference rules on envoyproxy/ratelimit's own
	// counters (ShareReferenceCounters).
	Shared bool
}

// newReferenceDecider builds the decider of every reference rule of unit
// u.
func newReferenceDecider(u pb.RateLimitResponse_RateLimit_Unit, o limiterOptions) (*decider, error) {
	dur := config.UnitDuration(u)
	clock := o.Clock
	if clock == nil {
		clock = time.Now
	}
	opts := ratelua.Options{Prefix: o.Prefix, Fallback: o.Fallback, FailOpen: o.FailOpen, Observe: o.Observe,
		CountDenied: true, Clock: clock}
	if o.Shared {
		// The reference's EXPIRE is the unit's seconds (plus a jitter,
		// which only spreads the expiries: a counter serves one window,
		// which ends before the unit's seconds from any call in it).
		opts.ExactKeys = true
		l, err := ratelua.NewFixedWindow(o.Client, opts, ratelua.Fixed{Max: sharedMax, Window: dur, Expire: dur})
		if err != nil {
			return nil, fmt.Errorf("rls: the %v window: %w", u, err)
		}
		return &decider{limiter: l, reference: true, shared: true, top: sharedMax, maxN: sharedMax, span: dur}, nil
	}
	l, err := ratelua.NewSlidingWindow(o.Client, opts, ratelua.Window{Max: refMax, Duration: dur, Resolution: dur})
	if err != nil {
		return nil, fmt.Errorf("rls: the %v window: %w", u, err)
	}
	return &decider{limiter: l, reference: true, top: refMax, maxN: refMax + 1, span: dur}, nil
}

// newDecider builds the limiters of an extension rule: the one that
// decides, and the one that charges (CountDenied: a hit is counted even
// when denied), on the same state keys.
func newDecider(r *config.Rule, o limiterOptions) (*decider, error) {
	d := &decider{limits: r.Limits}
	for _, l := range r.Limits {
		d.maxN = max(d.maxN, int64(l.RequestsPerUnit)+1)
	}
	opts := ratelua.Options{Prefix: o.Prefix, Fallback: o.Fallback, FailOpen: o.FailOpen, Observe: o.Observe, Clock: o.Clock}
	opts.DenyCache = o.DenyCache
	var err error
	if d.limiter, err = newExtensionLimiter(r, o.Client, opts); err != nil {
		return nil, fmt.Errorf("rls: rule %s: %w", r.Key, err)
	}
	// A charge is never answered by a deny cache (it would not be
	// counted), and has no fallback: its answer is not used, and a
	// fallback's count would be another process's.
	opts.DenyCache, opts.Fallback, opts.CountDenied = 0, 0, true
	if d.charge, err = newExtensionLimiter(r, o.Client, opts); err != nil {
		return nil, fmt.Errorf("rls: rule %s: %w", r.Key, err)
	}
	return d, nil
}

// newExtensionLimiter builds the limiter of an extension rule with opts.
func newExtensionLimiter(r *config.Rule, client ratelua.Client, opts ratelua.Options) (*ratelua.Limiter, error) {
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
		return ratelua.NewSlidingWindow(client, opts, ws...)
	case "token_bucket":
		bs := make([]ratelua.Bucket, len(r.Limits))
		for i, l := range r.Limits {
			bs[i] = ratelua.Bucket{Capacity: int64(l.RequestsPerUnit), RefillAmount: int64(l.RequestsPerUnit), RefillInterval: l.Duration()}
		}
		return ratelua.NewTokenBucket(client, opts, bs...)
	case "zset_log":
		ls := make([]ratelua.Log, len(r.Limits))
		for i, l := range r.Limits {
			ls[i] = ratelua.Log{Max: int64(l.RequestsPerUnit), Window: l.Duration()}
		}
		return ratelua.NewZSetLog(client, opts, ls...)
	case "ar1":
		ds := make([]ratelua.Decay, len(r.Limits))
		for i, l := range r.Limits {
			ds[i] = ratelua.Decay{Max: int64(l.RequestsPerUnit), Factor: 2, Resolution: l.Duration() / 2}
		}
		return ratelua.NewAR1(client, opts, ds...)
	}
	return nil, fmt.Errorf("unknown algorithm %q", r.Algorithm)
}
