package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/statsink"
)

// Options configure a Service.
type Options struct {
	// Client is the Redis or Valkey deployment the limiters run on.
	Client ratelua.Client
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
	// rule's as the limiters' Options.DenyCache does. Fallback and
	// FailOpen are the limiters' options (ratelua.Options); a reference
	// rule's fallback holds its requests_per_unit times Fallback. Every
	// descriptor is decided by its limiter (ratelua.Decide), a request's
	// calls in one round trip per node.
	DenyCache int
	Fallback  float64
	FailOpen  bool
	// Stats, if set, counts the decisions per rule.
	Stats *Stats
	// Export, if set, is where the statistics are exported (statsd,
	// dogstatsd, Prometheus: see package statsink), under the reference's
	// names: the rules' (with Stats) and the service's
	// (ratelimit.service.config_load_success, ..._error,
	// global_shadow_mode, call.should_rate_limit.redis_error and
	// service_error, rate_limit.<domain>.domain_not_found).
	Export *statsink.Store
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
	config atomic.Pointer[Config]
	deny   *denyCache // of the reference rules
	// refs are the reference rules' deciders by unit; refErr the error
	// that made one.
	refs   map[pb.RateLimitResponse_RateLimit_Unit]*decider
	refErr error
	export *serviceStats
}

// NewService returns a Service with no configuration: every domain is
// unknown until SetConfig.
func NewService(opts Options) *Service {
	if opts.Prefix == "" {
		opts.Prefix = "rls"
	}
	if opts.MaxDescriptors == 0 {
		opts.MaxDescriptors = 1000
	}
	s := &Service{opts: opts, refs: map[pb.RateLimitResponse_RateLimit_Unit]*decider{}}
	s.exportTo(opts.Export)
	if opts.DenyCache > 0 {
		s.deny = newDenyCache(opts.DenyCache)
	}
	for u := range pb.RateLimitResponse_RateLimit_Unit_name {
		unit := pb.RateLimitResponse_RateLimit_Unit(u)
		if unitDuration(unit) == 0 {
			continue
		}
		d, err := newReferenceDecider(unit, s.limiterOptions())
		if err != nil {
			s.refErr = err
			continue
		}
		s.refs[unit] = d
	}
	return s
}

// exportTo exports the statistics to store (nil: nowhere), before the
// service answers.
func (s *Service) exportTo(store *statsink.Store) {
	s.opts.Export = store
	s.opts.Stats.Export(store)
	s.export = newServiceStats(store)
}

func (s *Service) limiterOptions() limiterOptions {
	return limiterOptions{Prefix: s.opts.Prefix, Client: s.opts.Client, DenyCache: s.opts.DenyCache, Fallback: s.opts.Fallback, FailOpen: s.opts.FailOpen, Clock: s.opts.Clock}
}

// SetConfig builds the limiters of c's rules and makes c the configuration
// of the following requests. On error the previous configuration stays.
func (s *Service) SetConfig(c *Config) error {
	if s.refErr != nil {
		return s.refErr
	}
	var errs ConfigErrors
	for _, r := range c.Rules {
		if e := checkShare(r, s.opts.Fallback); e != nil {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	for _, r := range c.Rules {
		if r.Unlimited {
			continue
		}
		if r.Reference() {
			r.dec = s.refs[r.Limits[0].Unit]
			continue
		}
		d, err := newDecider(r, s.limiterOptions())
		if err != nil {
			return fmt.Errorf("%s:%d: %w", r.File, r.Line, err)
		}
		r.dec = d
	}
	s.config.Store(c)
	return nil
}

// Config returns the configuration in use, nil before the first.
func (s *Service) Config() *Config { return s.config.Load() }

// slot is what the service knows of one descriptor before deciding it.
type slot struct {
	rule      *Rule // nil: no limit (unknown, unmatched, replaced)
	limit     Limit // the reference limit, or the override's
	unlimited bool
	statKey   string // the rule's statistics name for this descriptor
	statGroup string // the rule, whose names Stats bounds
	job       *job
}

// ShouldRateLimit decides a request as envoyproxy/ratelimit does.
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	resp, err := s.shouldRateLimit(ctx, req)
	if err != nil && status.Code(err) != codes.Unavailable || errors.Is(err, errNoConfig) {
		// A request refused, as the reference counts its service
		// errors (an empty domain, no descriptors, no configuration).
		s.export.serviceError.Inc()
	}
	return resp, err
}

// errNoConfig is the answer before the first configuration.
var errNoConfig = status.Error(codes.Unavailable, "no rate limit configuration loaded")

func (s *Service) shouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if err := s.check(req); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok && s.opts.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.RequestTimeout)
		defer cancel()
	}
	now := time.Now()
	if s.opts.Clock != nil {
		now = s.opts.Clock()
	}
	c := s.config.Load()
	if c == nil {
		return nil, errNoConfig
	}
	descs := req.GetDescriptors()
	slots := make([]slot, len(descs))
	replaced := map[string]bool{}
	for i, d := range descs {
		m := c.lookup(req.GetDomain(), d.GetEntries())
		if !m.known {
			s.export.domainNotFound(req.GetDomain())
			continue
		}
		if o := d.GetLimit(); o != nil {
			// The descriptor's own limit: a reference rule counting under
			// the descriptor's entries, as the reference's does.
			l := Limit{RequestsPerUnit: o.GetRequestsPerUnit(), Unit: pb.RateLimitResponse_RateLimit_Unit(o.GetUnit())}
			if unitDuration(l.Unit) == 0 {
				return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: limit override has unit %v, not one of SECOND..YEAR", i, o.GetUnit())
			}
			r := &Rule{Key: "override", Limits: []Limit{l}}
			if err := checkRule(r); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: limit override: %v", i, err)
			}
			r.dec = s.refs[l.Unit]
			slots[i] = slot{rule: r, limit: l, statKey: overrideStatKey(req.GetDomain(), d.GetEntries()), statGroup: req.GetDomain() + ".(override)"}
			slots[i].job = &job{d: r.dec, key: eventKey(req.GetDomain(), d.GetEntries(), nil)}
			continue
		}
		if m.rule == nil {
			continue
		}
		replaced = appendReplaces(replaced, m.rule)
		if m.rule.Unlimited {
			slots[i].unlimited = true
			continue
		}
		slots[i] = slot{rule: m.rule, limit: m.rule.Limits[0], statKey: m.statKey, statGroup: m.rule.Key}
		slots[i].job = &job{d: m.rule.dec, key: eventKey(req.GetDomain(), d.GetEntries(), m.shared)}
	}
	var jobs []*job
	for i := range slots {
		sl := &slots[i]
		if sl.rule != nil && sl.rule.Name != "" && replaced[sl.rule.Name] {
			sl.rule, sl.job = nil, nil
		}
		if sl.rule == nil {
			continue
		}
		n, err := hits(req, descs[i])
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: %v", i, err)
		}
		sl.job.n = n
		if sl.job.d.reference {
			sl.job.limit = sl.limit.RequestsPerUnit
			if s.deny != nil && s.answerLocally(sl.job, now) {
				continue
			}
		}
		jobs = append(jobs, sl.job)
	}
	decide(ctx, s.opts.Client, jobs, now)
	if s.deny != nil {
		for _, j := range jobs {
			s.remember(j, now)
		}
	}
	for _, j := range jobs {
		if j.err != nil {
			// As the reference, which counts a descriptor's hits before
			// its call: the hits, nothing else, and the backend's error.
			for i := range slots {
				if sl := &slots[i]; sl.rule != nil {
					s.opts.Stats.add(ctx, sl.statGroup, sl.statKey, counts{0: sl.job.n})
				}
			}
			s.export.redisError.Inc()
			return nil, status.Errorf(codes.Unavailable, "rate limit backend: %v", j.err)
		}
	}
	return s.respond(ctx, req, slots, now), nil
}

// window is the index of the window of a reference job at now: the
// process's Unix time divided by the unit, as the script's single bucket.
func window(j *job, now time.Time) int64 {
	return now.Unix() / int64(j.d.span/time.Second)
}

// answerLocally answers a reference job from the deny cache, if it knows
// the descriptor over the job's limit in this window; otherwise the job
// takes the hits the cache kept for the descriptor, to send them.
func (s *Service) answerLocally(j *job, now time.Time) bool {
	key, w := j.d.limiter.Key(j.key), window(j, now)
	before, ok := s.deny.answer(key, w, uint64(j.limit), j.n)
	if !ok {
		j.kept = s.deny.take(key, w)
		return false
	}
	j.local = true
	after := min(before+j.n, refMax)
	j.out = ratelua.Result{Remaining: refMax - int64(after)}
	return true
}

// remember tells the deny cache what the server answered a reference job:
// the count after it, when over the job's limit; hits kept and not sent
// go back.
func (s *Service) remember(j *job, now time.Time) {
	if !j.d.reference || j.local {
		return
	}
	key, w := j.d.limiter.Key(j.key), window(j, now)
	if j.err != nil || j.open || j.fallback {
		if j.kept > 0 {
			s.deny.giveBack(key, w, j.kept)
		}
		return
	}
	if _, after, limit := j.counts(s.opts.Fallback); after > limit {
		s.deny.put(key, w, after)
	}
}

// appendReplaces marks the names r replaces.
func appendReplaces(m map[string]bool, r *Rule) map[string]bool {
	for _, name := range r.Replaces {
		m[name] = true
	}
	return m
}

// hits is a descriptor's hits_addend: its own when set (0 checks only),
// else the request's, 0 meaning 1.
func hits(req *pb.RateLimitRequest, d *rlpb.RateLimitDescriptor) (uint64, error) {
	if h := d.GetHitsAddend(); h != nil {
		if h.GetValue() > math.MaxInt64 {
			return 0, fmt.Errorf("hits_addend %d is out of range (at most %d)", h.GetValue(), int64(math.MaxInt64))
		}
		return h.GetValue(), nil
	}
	return uint64(max(1, req.GetHitsAddend())), nil
}

// check refuses a request the service cannot decide, with the reference's
// messages where it has one.
func (s *Service) check(req *pb.RateLimitRequest) error {
	if req.GetDomain() == "" {
		return status.Error(codes.InvalidArgument, "rate limit domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return status.Error(codes.InvalidArgument, "rate limit descriptor list must not be empty")
	}
	if n := len(req.GetDescriptors()); n > s.opts.MaxDescriptors {
		return status.Errorf(codes.InvalidArgument, "rate limit request has %d descriptors, more than the %d allowed", n, s.opts.MaxDescriptors)
	}
	if !utf8.ValidString(req.GetDomain()) {
		return status.Error(codes.InvalidArgument, "rate limit domain is not valid UTF-8")
	}
	for i, d := range req.GetDescriptors() {
		for j, e := range d.GetEntries() {
			if !utf8.ValidString(e.GetKey()) || !utf8.ValidString(e.GetValue()) {
				return status.Errorf(codes.InvalidArgument, "descriptor %d entry %d is not valid UTF-8", i, j)
			}
		}
	}
	return nil
}

// respond builds the response from the decisions, as the reference does.
func (s *Service) respond(ctx context.Context, req *pb.RateLimitRequest, slots []slot, now time.Time) *pb.RateLimitResponse {
	resp := &pb.RateLimitResponse{Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(slots))}
	minRemaining := uint32(math.MaxUint32)
	var closest *pb.RateLimitResponse_DescriptorStatus
	var closestSlot *slot
	failed := 0
	var violations []int
	headers := s.opts.LimitHeader != "" || s.opts.IETFHeaders
	for i := range slots {
		sl := &slots[i]
		if sl.unlimited {
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}
			continue
		}
		if sl.rule == nil {
			resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
			continue
		}
		st, c := s.status(sl, now)
		s.opts.Stats.add(ctx, sl.statGroup, sl.statKey, c)
		resp.Statuses[i] = st
		if headers && st.LimitRemaining < minRemaining {
			closest, closestSlot, minRemaining = st, sl, st.LimitRemaining
		}
		if st.Code == pb.RateLimitResponse_OVER_LIMIT {
			if sl.rule.QuotaMode || s.opts.QuotaMode {
				// Quota mode: the violation is reported as OK, with the
				// limit and remaining but no reset, and never denies.
				violations = append(violations, i)
				resp.Statuses[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, CurrentLimit: st.CurrentLimit, LimitRemaining: st.LimitRemaining}
			} else {
				failed++
				closest, closestSlot, minRemaining = st, sl, 0
			}
		}
	}
	resp.OverallCode = pb.RateLimitResponse_OK
	if failed > 0 {
		resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
	}
	if closest != nil {
		if s.opts.LimitHeader != "" {
			l := closest.CurrentLimit
			resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd,
				&core.HeaderValue{Key: s.opts.LimitHeader, Value: strconv.FormatUint(uint64(l.RequestsPerUnit), 10)},
				&core.HeaderValue{Key: s.opts.RemainingHeader, Value: strconv.FormatUint(uint64(closest.LimitRemaining), 10)},
				&core.HeaderValue{Key: s.opts.ResetHeader, Value: strconv.FormatInt(untilReset(l.Unit, now), 10)})
		}
		if s.opts.IETFHeaders {
			resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, ietfHeaders(closestSlot, closest)...)
		}
	}
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT && s.opts.ShadowMode {
		resp.OverallCode = pb.RateLimitResponse_OK
		s.export.globalShadowMode.Inc()
	}
	if s.opts.DynamicMetadata {
		resp.DynamicMetadata = dynamicMetadata(req, slots, violations)
	}
	return resp
}

// untilReset is the reference's duration_until_reset in seconds: the time
// to the end of the unit's aligned window.
func untilReset(u pb.RateLimitResponse_RateLimit_Unit, now time.Time) int64 {
	d := int64(unitDuration(u) / time.Second)
	return d - now.Unix()%d
}

// status turns one decision into the descriptor's status (shadow mode
// answering OK), and what it adds to the rule's statistics.
func (s *Service) status(sl *slot, now time.Time) (*pb.RateLimitResponse_DescriptorStatus, counts) {
	j, r := sl.job, sl.rule
	out := j.out
	var over bool
	var remaining int64
	var c counts
	limit := sl.limit
	var reset int64
	if j.d.reference {
		reset = untilReset(limit.Unit, now)
		before, after, held := j.counts(s.opts.Fallback)
		switch {
		case j.open:
			// Admitted without an answer (FailOpen): nothing is known.
			c = counts{0: j.n, 3: j.n}
		default:
			over = j.local || after > held
			if !over {
				remaining = int64(held - after)
			}
			c = s.opts.Stats.referenceCounts(j.n, before, after, held, r.ShadowMode, j.local)
		}
	} else {
		over = !out.Allowed
		if out.Limit >= 0 && out.Limit < len(r.Limits) {
			limit = r.Limits[out.Limit]
		}
		if out.Allowed {
			remaining = out.Remaining
			reset = ceilSeconds(out.ResetAfter)
		} else if out.RetryAfter == ratelua.Never {
			reset = int64(limit.Duration() / time.Second)
		} else {
			reset = ceilSeconds(out.RetryAfter)
		}
		if j.open {
			c = counts{0: j.n, 3: j.n}
		} else {
			c = s.opts.Stats.extensionCounts(j.n, uint64(limit.RequestsPerUnit), out, r.ShadowMode)
		}
	}
	code := pb.RateLimitResponse_OK
	if over && !r.ShadowMode {
		code = pb.RateLimitResponse_OVER_LIMIT
	}
	return &pb.RateLimitResponse_DescriptorStatus{
		Code:               code,
		CurrentLimit:       &pb.RateLimitResponse_RateLimit{RequestsPerUnit: limit.RequestsPerUnit, Unit: limit.Unit, Name: r.Name},
		LimitRemaining:     uint32(min(max(remaining, 0), math.MaxUint32)),
		DurationUntilReset: &durationpb.Duration{Seconds: reset},
	}, c
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}
