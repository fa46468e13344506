package service

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/stats"
)

// slot is what the service knows of one descriptor before deciding it.
type slot struct {
	rule      *config.Rule // nil: no limit (unknown, unmatched, replaced)
	limit     config.Limit // the reference limit, or the override's
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
		s.opts.Stats.Count(stats.ServiceError)
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
	a := s.active.Load()
	if a == nil {
		return nil, errNoConfig
	}
	descs := req.GetDescriptors()
	slots := make([]slot, len(descs))
	replaced := map[string]bool{}
	for i, d := range descs {
		mk, err := markedEntries(d)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: %v", i, err)
		}
		entries := mk.entries
		m := a.config.Lookup(req.GetDomain(), entries)
		if !m.Known {
			s.opts.Stats.DomainNotFound(req.GetDomain())
			continue
		}
		if o := d.GetLimit(); o != nil {
			// The descriptor's own limit: a reference rule counting under
			// the descriptor's entries, as the reference's does.
			l := config.Limit{RequestsPerUnit: o.GetRequestsPerUnit(), Unit: pb.RateLimitResponse_RateLimit_Unit(o.GetUnit())}
			if config.UnitDuration(l.Unit) == 0 {
				return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: limit override has unit %v, not one of SECOND..YEAR", i, o.GetUnit())
			}
			r := &config.Rule{Key: "override", Limits: []config.Limit{l}}
			if err := config.CheckRule(r); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: limit override: %v", i, err)
			}
			slots[i] = slot{rule: r, limit: l, statKey: config.OverrideStatKey(req.GetDomain(), entries), statGroup: req.GetDomain() + ".(override)"}
			slots[i].job = s.newJob(s.refs[l.Unit], req.GetDomain(), entries, nil, now)
			continue
		}
		if m.Rule == nil {
			continue
		}
		replaced = appendReplaces(replaced, m.Rule)
		if m.Rule.Unlimited {
			slots[i].unlimited = true
			continue
		}
		slots[i] = slot{rule: m.Rule, limit: m.Rule.Limits[0], statKey: m.StatKey, statGroup: m.Rule.Key}
		j := s.newJob(a.deciders[m.Rule], req.GetDomain(), entries, m.Shared, now)
		j.op, j.name, j.id = mk.op, mk.name, mk.id
		if (j.op == opReserve || j.op == opSettle) && (j.d.reference || !j.d.limiter.Script().Reserves()) {
			return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: rule %s takes no reservations (%s and %s need an extension rule whose algorithm takes them: token_bucket)", i, m.Rule.Key, ReserveKey, SettleKey)
		}
		slots[i].job = j
	}
	var jobs, reservations []*job
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
		if sl.job.op == opReserve && n == 0 {
			return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: %s needs an estimate: hits_addend 0", i, ReserveKey)
		}
		if sl.job.op == opReserve || sl.job.op == opSettle {
			reservations = append(reservations, sl.job)
			continue
		}
		if sl.job.d.reference {
			sl.job.limit = sl.limit.RequestsPerUnit
			if s.deny != nil && s.answerLocally(sl.job, now) {
				continue
			}
		}
		jobs = append(jobs, sl.job)
	}
	sent := jobs
	if s.opts.StopIncrementWhenOverLimit {
		if err := s.stopIncrements(ctx, slots, now); err != nil {
			for _, j := range jobs {
				j.err = err
			}
			sent = nil
		}
	}
	decide(ctx, sent, now)
	for _, j := range reservations {
		j.reserveOrSettle(ctx)
	}
	jobs = append(jobs, reservations...)
	if s.deny != nil {
		for _, j := range jobs {
			s.remember(j, now)
		}
	}
	for _, j := range jobs {
		if j.err != nil {
			return nil, s.backendError(ctx, slots, j.err)
		}
	}
	return withReservations(s.respond(ctx, req, slots, now), reservations), nil
}

// backendError is the answer of a request the server failed, counted as
// the reference counts it, which counts a descriptor's hits before its
// call: the hits, nothing else, and the backend's error.
func (s *Service) backendError(ctx context.Context, slots []slot, err error) error {
	for i := range slots {
		if sl := &slots[i]; sl.rule != nil {
			s.opts.Stats.Add(ctx, sl.statGroup, sl.statKey, stats.Counts{0: sl.job.n})
		}
	}
	s.opts.Stats.Count(stats.RedisError)
	return status.Errorf(codes.Unavailable, "rate limit backend: %v", err)
}

// appendReplaces marks the names r replaces.
func appendReplaces(m map[string]bool, r *config.Rule) map[string]bool {
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
