package rls

import (
	"fmt"
	"strings"
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
func (l Limit) Duration() time.Duration { return unitDuration(l.Unit) }

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

	dec *decider
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

// wildcard is a child of a node whose "key_value" holds '*': each '*'
// matches any run of bytes.
type wildcard struct {
	key   string
	parts []string
}

// matches reports whether s matches the pattern w.
func (w wildcard) matches(s string) bool {
	p := w.parts
	if len(p) == 1 {
		return p[0] == s
	}
	if !strings.HasPrefix(s, p[0]) {
		return false
	}
	s = s[len(p[0]):]
	last := p[len(p)-1]
	if len(s) < len(last) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[:len(s)-len(last)]
	for _, mid := range p[1 : len(p)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return true
}

// unitDuration is the length of a unit, as the reference divides time.
func unitDuration(u pb.RateLimitResponse_RateLimit_Unit) time.Duration {
	const day = 24 * time.Hour
	switch u {
	case pb.RateLimitResponse_RateLimit_SECOND:
		return time.Second
	case pb.RateLimitResponse_RateLimit_MINUTE:
		return time.Minute
	case pb.RateLimitResponse_RateLimit_HOUR:
		return time.Hour
	case pb.RateLimitResponse_RateLimit_DAY:
		return day
	case pb.RateLimitResponse_RateLimit_WEEK:
		return 7 * day
	case pb.RateLimitResponse_RateLimit_MONTH:
		return 30 * day
	case pb.RateLimitResponse_RateLimit_YEAR:
		return 365 * day
	}
	return 0
}

// parseUnit reads a unit name as the reference does (any case).
func parseUnit(s string) (pb.RateLimitResponse_RateLimit_Unit, error) {
	v, ok := pb.RateLimitResponse_RateLimit_Unit_value[strings.ToUpper(s)]
	if !ok || v == int32(pb.RateLimitResponse_RateLimit_UNKNOWN) || unitDuration(pb.RateLimitResponse_RateLimit_Unit(v)) == 0 {
		return 0, fmt.Errorf("invalid rate limit unit '%s'", s)
	}
	return pb.RateLimitResponse_RateLimit_Unit(v), nil
}
