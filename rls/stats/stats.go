package stats

import (
	"context"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ratelua/ratelua/rls/statsink"
)

// RuleStats are the counters of one rule.
type RuleStats struct {
	c    [numStats]atomic.Uint64
	opt  metric.AddOption            // the rule's attribute, for the instruments
	sink [numStats]*statsink.Counter // exported (Export), nil without
}

// Stats counts the decisions of a Service per rule, as the reference's
// statistics do, in memory (Snapshot, /stats) and, when made with a
// MeterProvider, as OpenTelemetry counters. A nil *Stats counts nothing.
type Stats struct {
	nearRatio   float32
	rules       sync.Map // statistics name -> *RuleStats
	raw         sync.Map // name before sanitizing -> *RuleStats
	instruments [numStats]metric.Int64Counter
	export      *exported // set by Export, before the first count

	// The names of each rule (detailed_metric and value_to_metric make
	// one per value), at most maxNames; the rest count under the rule's
	// overflow name.
	mu       sync.Mutex
	names    map[string]int
	maxNames int
}

// New returns the statistics of a service. nearLimitRatio is the
// share of a limit past which admitted hits are near the limit
// (NEAR_LIMIT_RATIO; 0 means 0.8). meters, if not nil, gets one counter
// per statistic.
func New(nearLimitRatio float64, meters metric.MeterProvider) (*Stats, error) {
	if nearLimitRatio == 0 {
		nearLimitRatio = 0.8
	}
	s := &Stats{nearRatio: float32(nearLimitRatio), names: map[string]int{}, maxNames: MaxStatNamesPerRule}
	if meters == nil {
		return s, nil
	}
	instruments, err := newInstruments(meters)
	if err != nil {
		return nil, err
	}
	s.instruments = instruments
	return s, nil
}

// Rule returns the counters of a rule's statistics name.
func (s *Stats) Rule(name string) *RuleStats {
	if v, ok := s.rules.Load(name); ok {
		return v.(*RuleStats)
	}
	r := &RuleStats{opt: metric.WithAttributeSet(attribute.NewSet(RuleAttribute.String(name))), sink: s.export.ruleCounters(name)}
	v, _ := s.rules.LoadOrStore(name, r)
	return v.(*RuleStats)
}

// Snapshot returns every rule's counters by statistics name, each
// statistic by its reference name (total_hits, over_limit, ...).
func (s *Stats) Snapshot() map[string]map[string]uint64 {
	out := map[string]map[string]uint64{}
	s.rules.Range(func(k, v any) bool {
		r := v.(*RuleStats)
		m := make(map[string]uint64, numStats)
		for i, name := range Names() {
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

// Add adds c to the statistics of name (not yet sanitized), a name of
// the rule group: the first MaxStatNamesPerRule names of a group count
// under their own name, the rest under the group's overflow name.
func (s *Stats) Add(ctx context.Context, group, name string, c Counts) {
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
