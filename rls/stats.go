package rls

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/statsink"
)

// MeterScope is the instrumentation scope of the service's meter.
const MeterScope = "github.com/ratelua/ratelua/rls"

// The statistics of a rule, named as the reference names them
// (ratelimit.service.rate_limit.<rule>.<name>). Each is an OpenTelemetry
// counter "ratelua.rls.<name>" of unit {hit}, with the attribute
// ratelua.rls.rule holding <rule>.
const (
	statTotalHits   = "total_hits"
	statOverLimit   = "over_limit"
	statNearLimit   = "near_limit"
	statWithinLimit = "within_limit"
	statShadowMode  = "shadow_mode"
	statOverLocal   = "over_limit_with_local_cache"
)

// statNames lists the statistics in the order of counts' fields.
var statNames = [...]string{statTotalHits, statOverLimit, statNearLimit, statWithinLimit, statShadowMode, statOverLocal}

// RuleAttribute is the attribute of every counter: the rule's statistics
// name (the reference's, e.g. "api.user_u1" with detailed_metric).
const RuleAttribute = attribute.Key("ratelua.rls.rule")

// counts are what one decided descriptor adds to its rule's statistics,
// in the order of statNames.
type counts [len(statNames)]uint64

// RuleStats are the counters of one rule.
type RuleStats struct {
	c    [len(statNames)]atomic.Uint64
	opt  metric.AddOption                  // the rule's attribute, for the instruments
	sink [len(statNames)]*statsink.Counter // the exported counters (statsd, Prometheus), nil without
}

// Stats counts the decisions of a Service per rule, as the reference's
// statistics do, in memory (Snapshot, /stats) and, when made with a
// MeterProvider, as OpenTelemetry counters. A nil *Stats counts nothing.
type Stats struct {
	nearRatio   float32
	rules       sync.Map // statistics name -> *RuleStats
	raw         sync.Map // name before sanitizing -> *RuleStats
	instruments [len(statNames)]metric.Int64Counter
	sink        *statsink.Store // set by Export, before the first count

	// The names of each rule (detailed_metric and value_to_metric make
	// one per value), at most maxNames; the rest count under the rule's
	// overflow name.
	mu       sync.Mutex
	names    map[string]int
	maxNames int
}

// MaxStatNamesPerRule bounds the statistics names of one rule: with
// detailed_metric (or value_to_metric) each descriptor value is a name of
// its own, so that a client sending new values would grow the statistics
// without end. The first MaxStatNamesPerRule names a rule counts keep
// their own counters; the hits of every later name count under one name,
// the rule's with OverflowSuffix ("app.ip.(other)"), so a rule's totals
// stay whole. Descriptors carrying their own limit are bounded the same
// way per domain, under "<domain>.(override).(other)".
const MaxStatNamesPerRule = 1000

// OverflowSuffix ends the statistics name that counts a rule's names past
// MaxStatNamesPerRule.
const OverflowSuffix = ".(other)"

// NewStats returns the statistics of a service. nearLimitRatio is the
// share of a limit past which admitted hits are near the limit
// (NEAR_LIMIT_RATIO; 0 means 0.8). meters, if not nil, gets one counter
// per statistic.
func NewStats(nearLimitRatio float64, meters metric.MeterProvider) (*Stats, error) {
	if nearLimitRatio == 0 {
		nearLimitRatio = 0.8
	}
	s := &Stats{nearRatio: float32(nearLimitRatio), names: map[string]int{}, maxNames: MaxStatNamesPerRule}
	if meters == nil {
		return s, nil
	}
	meter := meters.Meter(MeterScope)
	descriptions := [...]string{
		"hits decided, per rule",
		"hits over the limit (denied, or admitted by shadow or quota mode)",
		"hits past the near-limit ratio of the limit and within it",
		"hits within the limit",
		"hits over the limit that shadow mode admitted",
		"hits over the limit answered by the deny cache, without a round trip",
	}
	for i, name := range statNames {
		c, err := meter.Int64Counter("ratelua.rls."+name, metric.WithUnit("{hit}"), metric.WithDescription(descriptions[i]))
		if err != nil {
			return nil, fmt.Errorf("rls: counter %s: %w", name, err)
		}
		s.instruments[i] = c
	}
	return s, nil
}

// Export counts every rule's statistics in store too, under the
// reference's names (ratelimit.service.rate_limit.<rule>.<statistic>), for
// statsd, dogstatsd or Prometheus. It must be called before the first
// count.
func (s *Stats) Export(store *statsink.Store) {
	if s != nil {
		s.sink = store
	}
}

// Rule returns the counters of a rule's statistics name.
func (s *Stats) Rule(name string) *RuleStats {
	if v, ok := s.rules.Load(name); ok {
		return v.(*RuleStats)
	}
	r := &RuleStats{opt: metric.WithAttributeSet(attribute.NewSet(RuleAttribute.String(name)))}
	if s.sink != nil {
		for i, stat := range statNames {
			r.sink[i] = s.sink.Counter(ruleStatPrefix + name + "." + stat)
		}
	}
	v, _ := s.rules.LoadOrStore(name, r)
	return v.(*RuleStats)
}

// Snapshot returns every rule's counters by statistics name, each
// statistic by its reference name (total_hits, over_limit, ...).
func (s *Stats) Snapshot() map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	s.rules.Range(func(k, v any) bool {
		r := v.(*RuleStats)
		m := make(map[string]uint64, len(statNames))
		for i, name := range statNames {
			m[name] = r.c[i].Load()
		}
		out[k.(string)] = m
		return true
	})
	return out
}

// Keys returns the statistics names counted so far, sorted.
func (s *Stats) Keys() []string {
	var keys []string
	s.rules.Range(func(k, _ any) bool { keys = append(keys, k.(string)); return true })
	sort.Strings(keys)
	return keys
}

// add adds c to the statistics of name (not yet sanitized), a name of
// the rule group.
func (s *Stats) add(ctx context.Context, group, name string, c counts) {
	if s == nil {
		return
	}
	var r *RuleStats
	if v, ok := s.raw.Load(name); ok {
		r = v.(*RuleStats)
	} else {
		r = s.named(group, name)
	}
	for i, v := range c {
		if v == 0 {
			continue
		}
		r.c[i].Add(v)
		r.sink[i].Add(v)
		if s.instruments[i] != nil {
			s.instruments[i].Add(ctx, int64(min(v, math.MaxInt64)), r.opt)
		}
	}
}

// named returns the counters of a name not seen before: its own while the
// group has fewer than maxNames, else the group's overflow.
func (s *Stats) named(group, name string) *RuleStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.raw.Load(name); ok {
		return v.(*RuleStats)
	}
	if s.names[group] >= s.maxNames {
		return s.Rule(sanitizeStatName(group + OverflowSuffix))
	}
	s.names[group]++
	r := s.Rule(sanitizeStatName(name))
	s.raw.Store(name, r)
	return r
}

// nearThreshold is the count past which hits are near limit, as the
// reference computes it (in float32).
func (s *Stats) nearThreshold(limit uint64) uint64 {
	return uint64(math.Floor(float64(float32(limit) * s.nearRatio)))
}

// referenceCounts are the statistics of n hits that took a window's count
// from before to after under limit, as the reference counts them: a
// request over the limit is over by the hits past the limit (all of them
// when the count was already at the limit), and near by those between the
// near-limit threshold and the limit; one within the limit is within, and
// near by those past the threshold. shadow counts the hits over the limit
// of a shadow-mode rule; local means the deny cache answered (every hit
// over, and over with local cache).
func (s *Stats) referenceCounts(n, before, after, limit uint64, shadow, local bool) counts {
	var c counts
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

// extensionCounts are the statistics of n hits of an extension rule,
// decided by out under the deciding limit's maximum limit. A denied
// request records nothing, so all its hits are over the limit; an
// admitted one is within, and near by the hits past the near-limit
// threshold (the count after it is the limit less its remaining).
func (s *Stats) extensionCounts(n, limit uint64, out ratelua.Result, shadow bool) counts {
	var c counts
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

// ipv4 is an IPv4 address as the reference's statistics names rewrite it.
var ipv4 = regexp.MustCompile(`\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}`)

// sanitizeStatName makes a statistics name as the reference does: ':'
// and '|' become '_', and so do the dots of an IPv4 address.
func sanitizeStatName(s string) string {
	if strings.ContainsAny(s, ":|") {
		s = strings.NewReplacer(":", "_", "|", "_").Replace(s)
	}
	if !strings.Contains(s, ".") {
		return s
	}
	return ipv4.ReplaceAllStringFunc(s, func(ip string) string { return strings.ReplaceAll(ip, ".", "_") })
}
