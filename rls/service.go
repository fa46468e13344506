package rls

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
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
	// ReferenceHeaders adds the reference's three headers
	// (LIMIT_RESPONSE_HEADERS_ENABLED) under these names; empty names
	// mean none.
	LimitHeader, RemainingHeader, ResetHeader string
	// IETFHeaders adds the RateLimit-Policy and RateLimit fields of
	// draft-ietf-httpapi-ratelimit-headers to response_headers_to_add.
	IETFHeaders bool
	// DenyCache, Fallback and FailOpen are the limiters' options
	// (ratelua.Options); with any of them set, each descriptor is decided
	// by its limiter in its own call. DenyCache applies to extension rules
	// only (a reference rule counts denied hits).
	DenyCache int
	Fallback  float64
	FailOpen  bool
	// Stats, if set, counts the decisions per rule.
	Stats *Stats
	// MaxDescriptors bounds the descriptors of one request; 0 means 1000.
	MaxDescriptors int
}

// Service answers ShouldRateLimit. It is safe for concurrent use; SetConfig
// swaps the configuration under running requests.
type Service struct {
	pb.UnimplementedRateLimitServiceServer
	opts      Options
	config    atomic.Pointer[Config]
	overrides sync.Map // Limit -> *decider, for descriptors carrying their own limit
	nOverride atomic.Int64
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
	return &Service{opts: opts}
}

func (s *Service) limiterOptions() limiterOptions {
	return limiterOptions{Prefix: s.opts.Prefix, Client: s.opts.Client, DenyCache: s.opts.DenyCache, Fallback: s.opts.Fallback, FailOpen: s.opts.FailOpen}
}

// SetConfig builds the limiters of c's rules and makes c the configuration
// of the following requests. On error the previous configuration stays.
func (s *Service) SetConfig(c *Config) error {
	for _, r := range c.Rules {
		if r.Unlimited {
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

// maxOverrides bounds the limiters kept for descriptors' own limits.
const maxOverrides = 1024

// override returns the decider of a limit a descriptor carries.
func (s *Service) override(l Limit) (*decider, error) {
	if d, ok := s.overrides.Load(l); ok {
		return d.(*decider), nil
	}
	r := &Rule{Key: "override", Limits: []Limit{l}}
	if err := checkRule(r); err != nil {
		return nil, err
	}
	d, err := newDecider(r, s.limiterOptions())
	if err != nil {
		return nil, err
	}
	if s.nOverride.Add(1) <= maxOverrides {
		s.overrides.Store(l, d)
	}
	return d, nil
}

// slot is what the service knows of one descriptor before deciding it.
type slot struct {
	rule      *Rule // nil: no limit (unknown, unmatched, replaced)
	limit     Limit // the reference limit, or the override's
	unlimited bool
	job       *job
}

// ShouldRateLimit decides a request as envoyproxy/ratelimit does.
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	if err := s.check(req); err != nil {
		return nil, err
	}
	now := time.Now()
	c := s.config.Load()
	if c == nil {
		return nil, status.Error(codes.Unavailable, "no rate limit configuration loaded")
	}
	descs := req.GetDescriptors()
	slots := make([]slot, len(descs))
	replaced := map[string]bool{}
	for i, d := range descs {
		m := c.lookup(req.GetDomain(), d.GetEntries())
		if !m.known {
			continue
		}
		if o := d.GetLimit(); o != nil {
			l := Limit{RequestsPerUnit: o.GetRequestsPerUnit(), Unit: pb.RateLimitResponse_RateLimit_Unit(o.GetUnit())}
			if unitDuration(l.Unit) == 0 {
				return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: limit override has unit %v, not one of SECOND..YEAR", i, o.GetUnit())
			}
			dec, err := s.override(l)
			if err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: limit override: %v", i, err)
			}
			slots[i] = slot{rule: &Rule{Key: "override", Limits: []Limit{l}, dec: dec}, limit: l}
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
		slots[i] = slot{rule: m.rule, limit: m.rule.Limits[0]}
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
		if sl.job == nil { // an override
			sl.job = &job{d: sl.rule.dec, key: eventKey(req.GetDomain(), descs[i].GetEntries(), nil)}
		}
		n, err := hits(req, descs[i])
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: %v", i, err)
		}
		sl.job.n = n
		jobs = append(jobs, sl.job)
	}
	if s.opts.DenyCache > 0 || s.opts.Fallback > 0 || s.opts.FailOpen {
		decideEach(ctx, jobs)
	} else {
		decideBatch(ctx, s.opts.Client, jobs, now)
	}
	for _, j := range jobs {
		if j.err != nil {
			return nil, status.Errorf(codes.Unavailable, "rate limit backend: %v", j.err)
		}
	}
	return s.respond(req, slots, now), nil
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
func (s *Service) respond(req *pb.RateLimitRequest, slots []slot, now time.Time) *pb.RateLimitResponse {
	resp := &pb.RateLimitResponse{Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, len(slots))}
	minRemaining := uint32(math.MaxUint32)
	var closest *pb.RateLimitResponse_DescriptorStatus
	var closestSlot *slot
	failed := 0
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
		st, over := s.status(sl, now)
		s.opts.Stats.count(sl.rule, sl.job, over)
		resp.Statuses[i] = st
		if headers && st.LimitRemaining < minRemaining {
			closest, closestSlot, minRemaining = st, sl, st.LimitRemaining
		}
		if st.Code == pb.RateLimitResponse_OVER_LIMIT {
			if sl.rule.QuotaMode {
				// Quota mode: the violation is reported as OK, with the
				// limit and remaining but no reset, and never denies.
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
				&core.HeaderValue{Key: s.opts.ResetHeader, Value: strconv.FormatInt(untilReset(l.Unit, time.Now()), 10)})
		}
		if s.opts.IETFHeaders {
			resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, ietfHeaders(closestSlot, closest)...)
		}
	}
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT && s.opts.ShadowMode {
		resp.OverallCode = pb.RateLimitResponse_OK
	}
	return resp
}

// untilReset is the reference's duration_until_reset in seconds: the time
// to the end of the unit's aligned window.
func untilReset(u pb.RateLimitResponse_RateLimit_Unit, now time.Time) int64 {
	d := int64(unitDuration(u) / time.Second)
	return d - now.Unix()%d
}

// status turns one decision into the descriptor's status; over reports
// whether the limits denied it (shadow mode answers OK all the same).
func (s *Service) status(sl *slot, now time.Time) (*pb.RateLimitResponse_DescriptorStatus, bool) {
	j, r := sl.job, sl.rule
	out := j.out
	var over bool
	var remaining int64
	limit := sl.limit
	var reset int64
	if j.d.reference {
		reset = untilReset(limit.Unit, now)
		switch {
		case j.n == 0 && j.d.zero:
			over = !out.allowed
		case j.n == 0:
			// At count L only the L limit (index 1) denies; above it the
			// L+1 limit (index 0) decides.
			over = !out.allowed && out.index == 0
			if out.allowed {
				remaining = out.remaining
			}
		case j.d.zero:
			over = true
		default:
			over = !out.allowed
			if out.allowed {
				remaining = out.remaining
			}
		}
	} else {
		over = !out.allowed
		if out.index >= 0 && out.index < len(r.Limits) {
			limit = r.Limits[out.index]
		}
		if out.allowed {
			remaining = out.remaining
			reset = ceilSeconds(out.resetAfter)
		} else if out.retryAfter == ratelua.Never {
			reset = int64(limit.Duration() / time.Second)
		} else {
			reset = ceilSeconds(out.retryAfter)
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
	}, over
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}
