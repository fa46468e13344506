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

// Limit is one limit of a rule: at most RequestsPerUnit per Unit.
type Limit struct {
	RequestsPerUnit uint32
	Unit            pb.RateLimitResponse_RateLimit_Unit
}

// Duration is the length of the limit's unit.
func (l Limit) Duration() time.Duration { return UnitDuration(l.Unit) }

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

// Reference reports whether the rule is a plain reference rule (one limit,
// no extension field): decided exactly as envoyproxy/ratelimit decides it.
func (r *Rule) Reference() bool {
	return r.Algorithm == "" && len(r.Limits) == 1
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
