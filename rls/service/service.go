package service

import (
	"fmt"
	"sync/atomic"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/stats"
)

// Options configure a Service.
type Options struct {
	// Client is the Redis or Valkey deployment the limiters run on.
	Client ratelua.Client
	// PerSecondClient, if set, is the deployment of the limits whose unit
	// is a second (the reference's REDIS_PERSECOND): reference rules and
	// descriptors' own limits of unit SECOND, and extension rules whose
	// every limit is of unit SECOND. Every other runs on Client.
	PerSecondClient ratelua.Client
	// Prefix starts every state key; empty means "rls".
	Prefix string
	// ShadowMode answers OK for every request (the reference's
	// SHADOW_MODE), after deciding and counting as usual.
	ShadowMode bool
	// QuotaMode puts every rule in quota mode (the reference's
	// QUOTA_MODE): over its limit, a descriptor is OK with its limit and
	// remaining, and the request is not denied for it.
	QuotaMode bool
	// DynamicMetadata adds the reference's dynamic_metadata to every
	// response (RESPONSE_DYNAMIC_METADATA): the domain, the descriptors,
	// the request's hits_addend, the quota-mode violations and whether a
	// descriptor's rule is in quota mode.
	DynamicMetadata bool
	// ReferenceHeaders adds the reference's three headers
	// (LIMIT_RESPONSE_HEADERS_ENABLED) under these names; empty names
	// mean none.
	LimitHeader, RemainingHeader, ResetHeader string
	// IETFHeaders adds the RateLimit-Policy and RateLimit fields of
	// draft-ietf-httpapi-ratelimit-headers to response_headers_to_add.
	IETFHeaders bool
	// DenyCache, above 0, answers descriptors over their limit without a
	// round trip, for at most DenyCache state keys each: a reference
	// rule's exactly as the server would (see denyCache), an extension
	// rule's as the limiters' ratelua.Options.DenyCache does. Fallback and
	// FailOpen are the limiters' options (ratelua.Options); a reference
	// rule's fallback holds its requests_per_unit times Fallback. Every
	// descriptor is decided by its limiter (ratelua.Decide), a request's
	// calls in one round trip per node.
	DenyCache int
	// LocalCache, above 0, is the reference's local cache
	// (LOCAL_CACHE_SIZE_IN_BYTES) for the reference rules, of at most
	// LocalCache state keys, in place of their deny cache: a descriptor the
	// server answered over its limit is answered over the limit, under any
	// limit, until its window ends, its hits counted as
	// over_limit_with_local_cache and never sent to the server, as the
	// reference does. Extension rules keep DenyCache.
	LocalCache int
	Fallback   float64
	FailOpen   bool
	// ShareReferenceCounters decides every reference rule, and every
	// descriptor's own limit, on envoyproxy/ratelimit's own counters: the
	// key <ReferencePrefix><domain>_<key>_<value>_..._<window start> (a
	// share_threshold's wildcard in place of the value, the window start
	// in Unix seconds), INCRBY by every hit and EXPIRE by the unit's
	// seconds, through the root's fixed_window script
	// (ratelua.NewFixedWindow with ratelua.Options.ExactKeys). A fleet
	// running the reference and ratelua-rls on one Redis then enforces
	// each limit once. Without it, ratelua-rls keeps its own keys under
	// Prefix. Extension rules keep theirs either way.
	ShareReferenceCounters bool
	// StopIncrementWhenOverLimit is the reference's
	// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT, for the reference rules
	// (and descriptors' own limits) of a request: when one of them would
	// go over its limit (its count before the request, read first, plus
	// its hits above requests_per_unit), only those that would go over
	// count the request's hits; the others count nothing and answer from
	// the count read. Extension rules take no part (they count admitted
	// hits only). See stopIncrements.
	StopIncrementWhenOverLimit bool
	// ReferencePrefix starts the reference's keys: CACHE_KEY_PREFIX, as
	// the reference uses it (no separator added).
	ReferencePrefix string
	// Stats, if set, is told what each decided descriptor adds to its
	// rule's statistics, and the service's events: a request refused, a
	// backend error (the request's descriptors counting their hits, as
	// the reference's), a request SHADOW_MODE let through, a descriptor
	// of an unknown domain (a *stats.Stats in the server).
	Stats stats.Recorder
	// MaxDescriptors bounds the descriptors of one request; 0 means 1000.
	MaxDescriptors int
	// RequestTimeout bounds a request whose context has no deadline (a
	// request to /json, a gRPC call without one): past it, the backend's
	// silence is Unavailable. 0 means no bound.
	RequestTimeout time.Duration
	// Clock is the time of every decision; nil means time.Now for the
	// reference rules' windows and the server's clock for extension
	// rules. Two services given one clock see one time for a request (a
	// comparison of the two).
	Clock func() time.Time
}

// Service answers ShouldRateLimit. It is safe for concurrent use; SetConfig
// swaps the configuration under running requests.
type Service struct {
	pb.UnimplementedRateLimitServiceServer
	opts   Options
	active atomic.Pointer[active]
	deny   *denyCache // of the reference rules
	// refs are the reference rules' deciders by unit.
	refs map[pb.RateLimitResponse_RateLimit_Unit]*decider
}

// active is the configuration in use and the decider of each of its
// rules (none for an unlimited rule).
type active struct {
	config   *config.Config
	deciders map[*config.Rule]*decider
}

// New returns a Service with no configuration: every domain is unknown
// until SetConfig. It fails when the limiters of the reference rules cannot
// be made of opts (a Fallback share out of range).
func New(opts Options) (*Service, error) {
	if opts.Prefix == "" {
		opts.Prefix = "rls"
	}
	if opts.MaxDescriptors == 0 {
		opts.MaxDescriptors = 1000
	}
	if opts.Stats == nil {
		opts.Stats = (*stats.Stats)(nil) // counts nothing
	}
	s := &Service{opts: opts, refs: map[pb.RateLimitResponse_RateLimit_Unit]*decider{}}
	switch {
	case opts.LocalCache > 0:
		s.deny = newLocalCache(opts.LocalCache)
	case opts.DenyCache > 0:
		s.deny = newDenyCache(opts.DenyCache)
	}
	for u := range pb.RateLimitResponse_RateLimit_Unit_name {
		unit := pb.RateLimitResponse_RateLimit_Unit(u)
		if config.UnitDuration(unit) == 0 {
			continue
		}
		d, err := newReferenceDecider(unit, s.limiterOptions(unit == pb.RateLimitResponse_RateLimit_SECOND))
		if err != nil {
			return nil, err
		}
		s.refs[unit] = d
	}
	return s, nil
}

// limiterOptions are the options of a limiter, on the per-second
// deployment if perSecond and there is one.
func (s *Service) limiterOptions(perSecond bool) limiterOptions {
	client := s.opts.Client
	perSecond = perSecond && s.opts.PerSecondClient != nil
	if perSecond {
		client = s.opts.PerSecondClient
	}
	return limiterOptions{Prefix: s.opts.Prefix, Client: client, PerSecond: perSecond, DenyCache: s.opts.DenyCache, Fallback: s.opts.Fallback, FailOpen: s.opts.FailOpen, Clock: s.opts.Clock, Shared: s.opts.ShareReferenceCounters}
}

// SetConfig builds the limiters of c's rules and makes c the configuration
// of the following requests. On error the previous configuration stays.
func (s *Service) SetConfig(c *config.Config) error {
	var errs config.Errors
	for _, r := range c.Rules {
		if e := config.CheckShare(r, s.opts.Fallback); e != nil {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	a := &active{config: c, deciders: make(map[*config.Rule]*decider, len(c.Rules))}
	for _, r := range c.Rules {
		if r.Unlimited {
			continue
		}
		if r.Reference() {
			a.deciders[r] = s.refs[r.Limits[0].Unit]
			continue
		}
		d, err := newDecider(r, s.limiterOptions(perSecondRule(r)))
		if err != nil {
			return fmt.Errorf("%s:%d: %w", r.File, r.Line, err)
		}
		a.deciders[r] = d
	}
	s.active.Store(a)
	return nil
}

// Config returns the configuration in use, nil before the first.
func (s *Service) Config() *config.Config {
	if a := s.active.Load(); a != nil {
		return a.config
	}
	return nil
}

// perSecondRule reports whether every limit of an extension rule is of
// unit SECOND, so that it runs on the per-second deployment.
func perSecondRule(r *config.Rule) bool {
	for _, l := range r.Limits {
		if l.Unit != pb.RateLimitResponse_RateLimit_SECOND {
			return false
		}
	}
	return len(r.Limits) > 0
}
