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
// after the hits is above L. It runs on the root's fixed_window script
// (INCRBY by every hit, EXPIRE by the unit's seconds) with the one limit
// refMax, 2^52: the script's remaining is refMax minus the count after the
// call, so the service knows the count before and after each request
// exactly, and decides L itself, for any L the reference takes (a uint32).
// The limiter, and so the state, depends on the unit only: every reference
// rule and limit override of a unit shares one decider, and a descriptor
// keeps its count when a reload changes its requests_per_unit or when it
// carries its own limit, as in the reference.
//
// The counter is of one window, so its key names the window. Under
// Options.ShareReferenceCounters it is envoyproxy/ratelimit's own key
// (ratelua.Options.ExactKeys, the key built by referenceKey); otherwise
// ratelua-rls's own, under Prefix: the descriptor's event key and the
// window's start (ownWindowKey), in a state key that names the script and
// the unit (the limits' hash).
type decider struct {
	limiter *ratelua.Limiter
	// charge decides an extension rule's charges (ChargeKey): the
	// limiter with CountDenied. nil for reference rules, which count
	// every hit.
	charge    *ratelua.Limiter
	client    ratelua.Client // the deployment the limiter runs on
	perSecond bool           // client is the per-second deployment
	reference bool
	shared    bool          // the reference's own counters (ShareReferenceCounters)
	top       int64         // a reference rule's one limit: refMax
	maxN      int64         // hits above it decide as it does
	span      time.Duration // a reference rule's unit
	limits    []config.Limit
}

// refMax is the one limit of a reference rule's fixed window: 2^52, the
// most the scripts take, far above any requests_per_unit (a uint32). A
// count above it (only hits of 2^52 and more, or the reference sharing
// the counter, could add so many) reads as refMax: every answer stays the
// same.
const refMax = 1 << 52

// limiterOptions are the settings every limiter shares.
type limiterOptions struct {
	Prefix    string
	Client    ratelua.Client
	DenyCache int
	Fallback  float64
	FailOpen  bool
	Observe   func(context.Context, ratelua.Event)
	Clock     func() time.Time // nil: time.Now, and the server's for extension rules
	// PerSecond: Client is the per-second deployment.
	PerSecond bool
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
	// The reference's EXPIRE is the unit's seconds (plus a jitter, which
	// only spreads the expiries: a counter serves one window, which ends
	// before the unit's seconds from any call in it).
	opts.ExactKeys = o.Shared
	l, err := ratelua.NewFixedWindow(o.Client, opts, ratelua.Fixed{Max: refMax, Window: dur, Expire: dur})
	if err != nil {
		return nil, fmt.Errorf("rls: the %v window: %w", u, err)
	}
	return &decider{limiter: l, client: o.Client, perSecond: o.PerSecond, reference: true, shared: o.Shared, top: refMax, maxN: refMax, span: dur}, nil
}

// newDecider builds the limiters of an extension rule: the one that
// decides, and the one that charges (CountDenied: a hit is counted even
// when denied), on the same state keys.
func newDecider(r *config.Rule, o limiterOptions) (*decider, error) {
	d := &decider{limits: r.Limits, client: o.Client, perSecond: o.PerSecond}
	for _, l := range r.Limits {
		d.maxN = max(d.maxN, int64(l.RequestsPerUnit)+1, int64(l.Burst)+1)
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
			bs[i] = ratelua.Bucket{Capacity: int64(l.Capacity()), RefillAmount: int64(l.RequestsPerUnit), RefillInterval: l.Duration()}
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
