package config

import (
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// Config is a loaded set of configuration files: the rules of every
// domain, ready to match descriptors. It is immutable once loaded.
type Config struct {
	domains map[string]*node
	// Rules lists every rule, in the order the files declared them.
	Rules []*Rule
	// valueToMetric is true when a descriptor has value_to_metric: only
	// then can a statistics name differ from its rule's key without
	// detailed_metric.
	valueToMetric bool
}

// Limit is one limit of a rule: at most RequestsPerUnit per Unit, or per
// Window.
type Limit struct {
	RequestsPerUnit uint32
	// Unit is the limit's unit, as the reply's current_limit names it.
	// With Window set it is the unit of that length, or UNKNOWN when none
	// is (a window of 30s).
	Unit pb.RateLimitResponse_RateLimit_Unit
	// Window is an extension rule's window (the field duration), any
	// whole number of milliseconds; 0 means the unit's length.
	Window time.Duration
	// Burst is a token_bucket limit's capacity (the field burst), the
	// tokens a full bucket holds, refilled at RequestsPerUnit per window;
	// 0 means RequestsPerUnit.
	Burst uint32
}

// Duration is the length of the limit's window: Window, else its unit's.
func (l Limit) Duration() time.Duration {
	if l.Window > 0 {
		return l.Window
	}
	return UnitDuration(l.Unit)
}

// Capacity is the tokens of a token_bucket limit's full bucket: Burst,
// else RequestsPerUnit.
func (l Limit) Capacity() uint32 {
	if l.Burst > 0 {
		return l.Burst
	}
	return l.RequestsPerUnit
}

// Rule is the rate_limit of one descriptor path of the configuration.
type Rule struct {
	// File and Line say where the rule's rate_limit is written.
	File string
	Line int
	// Key is the rule's path, "domain.key_value.key", as the reference
	// names its statistics.
	Key string
	// Name is rate_limit.name; Replaces the names this rule replaces.
	Name     string
	Replaces []string
	// Limits holds the rule's limits: rate_limit's own first, then the
	// extension's limits. Empty for an unlimited rule.
	Limits    []Limit
	Unlimited bool
	// ShadowMode, QuotaMode, DetailedMetric: the descriptor's fields.
	ShadowMode     bool
	QuotaMode      bool
	DetailedMetric bool
	// Algorithm is "" for the reference's fixed window, else
	// fixed_window, sliding_window, token_bucket, zset_log or ar1.
	Algorithm string
	// Resolution is the bucket width of a sliding_window rule; 0 means a
	// tenth of each limit's unit.
	Resolution time.Duration
}

// Reference reports whether the rule is a plain reference rule (one limit
// of a unit, no extension field): decided exactly as envoyproxy/ratelimit decides it.
func (r *Rule) Reference() bool {
	return r.Algorithm == "" && len(r.Limits) == 1 && r.Limits[0].Window == 0 && r.Limits[0].Burst == 0
}

// node is one level of a domain's descriptor tree.
type node struct {
	children  map[string]*node // by "key" or "key_value"
	wildcards []wildcard       // the children whose value holds '*', in file order
	rule      *Rule
	// valueToMetric and shareThreshold are the descriptor's fields;
	// pattern is its "key_value" when shareThreshold holds.
	valueToMetric  bool
	shareThreshold bool
	pattern        string
}
