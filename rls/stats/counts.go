package stats

import (
	"math"

	"github.com/ratelua/ratelua"
)

// The statistics of a rule, named as the reference names them
// (ratelimit.service.rate_limit.<rule>.<name>). Each is an OpenTelemetry
// counter "ratelua.rls.<name>" of unit {hit}, with the attribute
// ratelua.rls.rule holding <rule>.
const (
	TotalHits               = "total_hits"
	OverLimit               = "over_limit"
	NearLimit               = "near_limit"
	WithinLimit             = "within_limit"
	ShadowMode              = "shadow_mode"
	OverLimitWithLocalCache = "over_limit_with_local_cache"
)

// numStats is how many statistics a rule has.
const numStats = 6

// Names lists the statistics in the order of Counts' fields.
func Names() []string {
	return []string{TotalHits, OverLimit, NearLimit, WithinLimit, ShadowMode, OverLimitWithLocalCache}
}

// Counts are what one decided descriptor adds to its rule's statistics,
// in the order of Names.
type Counts [numStats]uint64

// nearThreshold is the count past which hits are near limit, as the
// reference computes it (in float32).
func (s *Stats) nearThreshold(limit uint64) uint64 {
	return uint64(math.Floor(float64(float32(limit) * s.nearRatio)))
}

// ReferenceCounts are the statistics of n hits that took a window's count
// from before to after under limit, as the reference counts them: a
// request over the limit is over by the hits past the limit (all of them
// when the count was already at the limit), and near by those between the
// near-limit threshold and the limit; one within the limit is within, and
// near by those past the threshold. shadow counts the hits over the limit
// of a shadow-mode rule; local means the deny cache answered (every hit
// over, and over with local cache).
func (s *Stats) ReferenceCounts(n, before, after, limit uint64, shadow, local bool) Counts {
	var c Counts
	c[0] = n
	if s == nil {
		return c
	}
	near := s.nearThreshold(limit)
	over := local || after > limit
	switch {
	case local:
		c[1], c[5] = n, n
	case over && before >= limit:
		c[1] = n
	case over:
		c[1] = after - limit
		c[2] = limit - max(near, before)
	default:
		if after > near {
			if before >= near {
				c[2] = n
			} else {
				c[2] = after - near
			}
		}
		c[3] = n
	}
	if over && shadow {
		if local || before >= limit {
			c[4] = n
		} else {
			c[4] = after - limit
		}
	}
	return c
}

// ExtensionCounts are the statistics of n hits of an extension rule,
// decided by out under the deciding limit's maximum limit. A denied
// request records nothing, so all its hits are over the limit; an
// admitted one is within, and near by the hits past the near-limit
// threshold (the count after it is the limit less its remaining).
func (s *Stats) ExtensionCounts(n, limit uint64, out ratelua.Result, shadow bool) Counts {
	var c Counts
	c[0] = n
	if s == nil {
		return c
	}
	if !out.Allowed {
		c[1] = n
		if shadow {
			c[4] = n
		}
		return c
	}
	c[3] = n
	after := limit - min(uint64(max(out.Remaining, 0)), limit)
	if near := s.nearThreshold(limit); after > near {
		c[2] = min(n, after-near)
	}
	return c
}
