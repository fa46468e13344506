package service

import (
	"context"
	"math"
	"strconv"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/stats"
)

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
		s.opts.Stats.Add(ctx, sl.statGroup, sl.statKey, c)
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
				&core.HeaderValue{Key: s.opts.ResetHeader, Value: strconv.FormatInt(closest.GetDurationUntilReset().GetSeconds(), 10)})
		}
		if s.opts.IETFHeaders {
			resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, ietfHeaders(closestSlot, closest)...)
		}
	}
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT && s.opts.ShadowMode {
		resp.OverallCode = pb.RateLimitResponse_OK
		s.opts.Stats.Count(stats.GlobalShadowMode)
	}
	if s.opts.DynamicMetadata {
		resp.DynamicMetadata = dynamicMetadata(req, slots, violations)
	}
	return resp
}

// untilReset is the reference's duration_until_reset in seconds: the time
// to the end of the unit's aligned window.
func untilReset(u pb.RateLimitResponse_RateLimit_Unit, now time.Time) int64 {
	d := int64(config.UnitDuration(u) / time.Second)
	return d - now.Unix()%d
}

// status turns one decision into the descriptor's status (shadow mode
// answering OK), and what it adds to the rule's statistics.
func (s *Service) status(sl *slot, now time.Time) (*pb.RateLimitResponse_DescriptorStatus, stats.Counts) {
	j, r := sl.job, sl.rule
	out := j.out
	var over bool
	var remaining int64
	var c stats.Counts
	limit := sl.limit
	var reset int64
	if j.d.reference {
		reset = untilReset(limit.Unit, now)
		before, after, held := j.counts(s.opts.Fallback)
		switch {
		case j.open:
			// Admitted without an answer (FailOpen): nothing is known.
			c = stats.Counts{0: j.n, 3: j.n}
		default:
			over = j.local || after > held
			if !over {
				remaining = int64(held - after)
			}
			c = s.opts.Stats.ReferenceCounts(j.n, before, after, held, r.ShadowMode, j.local)
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
			reset = ceilSeconds(limit.Duration())
		} else {
			reset = ceilSeconds(out.RetryAfter)
		}
		switch {
		case j.op == opSettle:
			// A settle decides nothing: its reserve counted the estimate.
		case j.open:
			c = stats.Counts{0: j.n, 3: j.n}
		default:
			// Near the limit is near the tokens of a full bucket
			// (its burst), which Capacity is, else the limit.
			c = s.opts.Stats.ExtensionCounts(j.n, uint64(limit.Capacity()), out, r.ShadowMode)
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
