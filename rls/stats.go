package rls

import (
	"sort"
	"sync"
	"sync/atomic"
)

// RuleStats are the counters of one rule, named as the reference's stats:
// hits decided, hits over the limit, hits admitted, admitted hits past the
// near-limit ratio of the limit, and hits over the limit admitted by
// shadow mode.
type RuleStats struct {
	TotalHits   atomic.Uint64
	OverLimit   atomic.Uint64
	NearLimit   atomic.Uint64
	WithinLimit atomic.Uint64
	ShadowMode  atomic.Uint64
}

// Stats counts the decisions of a Service per rule key. A nil *Stats
// counts nothing.
type Stats struct {
	// NearLimitRatio is the share of a limit past which admitted hits are
	// near the limit (NEAR_LIMIT_RATIO); 0 means 0.8.
	NearLimitRatio float64
	rules          sync.Map // rule key -> *RuleStats
}

// Rule returns the counters of a rule key ("domain.key_value...").
func (s *Stats) Rule(key string) *RuleStats {
	if v, ok := s.rules.Load(key); ok {
		return v.(*RuleStats)
	}
	v, _ := s.rules.LoadOrStore(key, &RuleStats{})
	return v.(*RuleStats)
}

// Snapshot returns every rule's counters by rule key.
func (s *Stats) Snapshot() map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	s.rules.Range(func(k, v any) bool {
		r := v.(*RuleStats)
		out[k.(string)] = map[string]uint64{
			"total_hits": r.TotalHits.Load(), "over_limit": r.OverLimit.Load(),
			"near_limit": r.NearLimit.Load(), "within_limit": r.WithinLimit.Load(),
			"shadow_mode": r.ShadowMode.Load(),
		}
		return true
	})
	return out
}

// Keys returns the rule keys counted so far, sorted.
func (s *Stats) Keys() []string {
	var keys []string
	s.rules.Range(func(k, _ any) bool { keys = append(keys, k.(string)); return true })
	sort.Strings(keys)
	return keys
}

// count records one decided descriptor of rule r.
func (s *Stats) count(r *Rule, j *job, over bool) {
	if s == nil || j == nil {
		return
	}
	c := s.Rule(r.Key)
	c.TotalHits.Add(j.n)
	if over {
		c.OverLimit.Add(j.n)
		if r.ShadowMode {
			c.ShadowMode.Add(j.n)
		}
		return
	}
	c.WithinLimit.Add(j.n)
	ratio := s.NearLimitRatio
	if ratio == 0 {
		ratio = 0.8
	}
	limit := float64(r.Limits[0].RequestsPerUnit)
	if used := limit - float64(j.out.remaining); used > limit*ratio {
		c.NearLimit.Add(j.n)
	}
}
