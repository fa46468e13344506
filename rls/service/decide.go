package service

import (
	"context"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/config"
)

// job is one descriptor to decide.
type job struct {
	d     *decider
	key   string // the event key
	n     uint64 // hits
	limit uint32 // a reference rule's requests_per_unit
	kept  uint64 // hits the deny cache answered before, sent with these
	// op is what the descriptor asks: a charge counts the hits even
	// when denied (an extension rule's job is decided by its decider's
	// charge limiter); a reserve or a settle goes by reserveOrSettle.
	op   op
	name string // a reserve's metadata field
	id   int64  // a settle's reservation, or a reserve's once held
	out  ratelua.Result
	err  error

	// How a reference rule's job was answered, besides by the server:
	// local by the deny cache, open by FailOpen, fallback by the
	// limiter's in-memory fallback.
	local, open, fallback bool
	// uncounted: a reference job that counts none of its hits, decided
	// on the count after the jobs before it
	// (StopIncrementWhenOverLimit, see stopIncrements).
	uncounted bool
}

// scriptN is the eventCount sent for the job's hits and those kept: at
// most maxN, above which every answer is the same, except for an
// extension rule's charge, which counts them all (up to the scripts'
// 2^52).
func (j *job) scriptN() int64 {
	if j.uncounted {
		// None of its hits; those the deny cache kept are hits of
		// earlier requests, owed to the server.
		return int64(min(j.kept, uint64(j.d.maxN)))
	}
	top := j.d.maxN
	if j.op == opCharge && j.d.charge != nil {
		top = chargeMax
	}
	if n := j.n + j.kept; n < j.n || n > uint64(top) {
		return top
	}
	return int64(j.n + j.kept)
}

// chargeMax is the most a charge sends: the scripts' largest eventCount.
const chargeMax = 1 << 52

// counts are a reference job's count of its window before and after the
// request's hits (after its answer, whoever gave it) and the limit they
// are held to: requests_per_unit, or under the fallback its share.
func (j *job) counts(share float64) (before, after, limit uint64) {
	limit = uint64(j.limit)
	top := j.d.top
	if j.fallback {
		top = int64(config.ShareOf(uint64(j.d.top), share))
		limit = config.ShareOf(uint64(j.limit), share)
	}
	after = uint64(top - min(max(j.out.Remaining, 0), top))
	if j.uncounted {
		// As the reference's, which reads the count after an INCRBY of 0
		// and takes the hits off it for the count before: in uint64, so
		// that a count below the hits wraps (all the hits then near the
		// limit, if the count is).
		return after - j.n, after, limit
	}
	if sent := uint64(j.scriptN()); after >= sent {
		before = after - sent + min(j.kept, sent)
	}
	return before, after, limit
}

// decide decides every job through ratelua.Decide, in one round trip per
// node of each deployment (the main one, the per-second one) when the
// client batches, each with its limiter's options (the deny
// cache of extension rules, the fallback, FailOpen): a reference rule's
// at now, the request's time; an extension rule's at its limiter's clock.
func decide(ctx context.Context, jobs []*job, now time.Time) {
	if len(jobs) == 0 {
		return
	}
	checks := make([]ratelua.Check, len(jobs))
	for i, j := range jobs {
		checks[i] = ratelua.Check{Limiter: j.d.limiter, Key: j.key, N: j.scriptN()}
		if j.op == opCharge && j.d.charge != nil {
			checks[i].Limiter = j.d.charge
		}
		if j.d.reference {
			checks[i].At = now
		}
	}
	for i, o := range decideOn(ctx, jobs, checks) {
		j := jobs[i]
		switch {
		case o.Err != nil && !o.Result.Allowed:
			j.err = o.Err
			continue
		case o.Err != nil:
			j.open = true
		case o.Kind == ratelua.KindFallback:
			j.fallback = true
		}
		j.out = o.Result
	}
}

// newJob is the job of a descriptor decided by d at now: a reference
// rule's on the reference's own key when d shares the reference's
// counters, else under the descriptor's event key and the window of now
// (ownWindowKey); an extension rule's under the descriptor's event key.
func (s *Service) newJob(d *decider, domain string, entries []*rlpb.RateLimitDescriptor_Entry, shared []string, now time.Time) *job {
	switch {
	case d != nil && d.shared:
		return &job{d: d, key: referenceKey(s.opts.ReferencePrefix, domain, entries, shared, int64(d.span/time.Second), now.Unix())}
	case d != nil && d.reference:
		return &job{d: d, key: ownWindowKey(eventKey(domain, entries, shared), int64(d.span/time.Second), now.Unix())}
	}
	return &job{d: d, key: eventKey(domain, entries, shared)}
}

// decideOn decides checks (one per job) through ratelua.Decide on the
// deployment of each job's limiter: one call for the main deployment's,
// then one for the per-second deployment's, as the reference sends its
// pipeline then the per-second one's. The outcomes are in the order of
// checks.
func decideOn(ctx context.Context, jobs []*job, checks []ratelua.Check) []ratelua.Outcome {
	var main, perSecond []int
	for i, j := range jobs {
		if j.d.perSecond {
			perSecond = append(perSecond, i)
		} else {
			main = append(main, i)
		}
	}
	if len(perSecond) == 0 {
		return ratelua.Decide(ctx, jobs[0].d.client, checks)
	}
	out := make([]ratelua.Outcome, len(checks))
	for _, idx := range [][]int{main, perSecond} {
		if len(idx) == 0 {
			continue
		}
		part := make([]ratelua.Check, len(idx))
		for k, i := range idx {
			part[k] = checks[i]
		}
		for k, o := range ratelua.Decide(ctx, jobs[idx[0]].d.client, part) {
			out[idx[k]] = o
		}
	}
	return out
}
