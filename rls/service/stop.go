package service

import (
	"context"
	"time"

	"github.com/ratelua/ratelua"
)

// stopIncrements is envoyproxy/ratelimit's
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT for the reference jobs of one
// request (slots): it marks uncounted the jobs that are to count none of
// their hits.
//
// The reference first reads (GET) the count of every descriptor of the
// request, and marks each whose count plus its hits is above its
// requests_per_unit. If none is marked, every descriptor counts its hits
// as usual. If one is, only the marked ones count their hits; every other
// sends INCRBY 0 in its place in the pipeline and is decided on the count
// that returns (with the hits of the descriptors before it on the same
// key: a request may name one descriptor twice), its own hits not added.
// A shadow-mode or quota-mode rule is marked as any other. The read and
// the count are two round trips, not one atomic step (the reference's are
// two pipelines too).
//
// Here the read is a peek of each reference job (N 0, writing nothing),
// whose remaining is the one limit less the count; a job the deny cache
// answered is over its limit already, so marked; one the reference's local
// cache answered (LOCAL_CACHE_SIZE_IN_BYTES) marks every other job
// uncounted without a read, as the reference reads no count then. An uncounted job is sent
// in its place as a peek (see job.scriptN). With fewer than two reference
// jobs nothing changes (a lone job counts whether marked or not), and no
// peek is sent. When a peek is not the server's answer (the fallback,
// FailOpen), every job counts as without the setting. A peek that fails
// fails the request (err), nothing counted.
func (s *Service) stopIncrements(ctx context.Context, slots []slot, now time.Time) error {
	var peeks []*job
	marked := false
	refs := 0
	for i := range slots {
		sl := &slots[i]
		if sl.rule == nil || !sl.job.d.reference {
			continue
		}
		refs++
		if sl.job.local {
			marked = true
		} else {
			peeks = append(peeks, sl.job)
		}
	}
	if refs < 2 || len(peeks) == 0 {
		return nil
	}
	if marked && s.deny != nil && s.deny.reference {
		// The reference's local cache answered one: the reference then
		// reads no count, and every other descriptor counts none of its
		// hits.
		for _, j := range peeks {
			j.uncounted = true
		}
		return nil
	}
	checks := make([]ratelua.Check, len(peeks))
	for i, j := range peeks {
		checks[i] = ratelua.Check{Limiter: j.d.limiter, Key: j.key, N: 0, At: now}
	}
	counts := make([]uint64, len(peeks))
	over := make([]bool, len(peeks))
	for i, o := range decideOn(ctx, peeks, checks) {
		j := peeks[i]
		if o.Err != nil && !o.Result.Allowed {
			return o.Err
		}
		if o.Err != nil || o.Kind == ratelua.KindFallback {
			// No count known: every job counts, as without the setting.
			return nil
		}
		// The count the reference would read: the server's, and the hits
		// the deny cache kept to send with this job (an uncounted job
		// still sends them).
		counts[i] = uint64(j.d.top-min(max(o.Result.Remaining, 0), j.d.top)) + j.kept
		over[i] = counts[i]+j.n > uint64(j.limit)
		marked = marked || over[i]
	}
	if !marked {
		return nil
	}
	for i, j := range peeks {
		j.uncounted = !over[i]
	}
	return nil
}
