package config

import (
	"cmp"
	"strings"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// Match is what the configuration says of one descriptor.
type Match struct {
	// Rule is the rule the descriptor matched; nil for none.
	Rule *Rule
	// Known is false when the domain has no configuration.
	Known bool
	// Shared holds, per entry, the wildcard value a share_threshold
	// descriptor counts under instead of the entry's own value ("" for
	// none); nil when no entry shares.
	Shared []string
	// StatKey is the name the reference gives the rule's statistics for
	// this descriptor (before sanitizing): the rule's key, or with
	// detailed_metric the descriptor's entries, or with value_to_metric
	// the values of the levels that ask for them.
	StatKey string
}

// Lookup walks the domain's tree with the descriptor's entries, as the
// reference does: at each level the exact "key_value", else the first
// wildcard that matches it, else the bare "key"; the rule is the one at the
// level of the last entry, and the walk stops at a level without children.
// It names the statistics as the reference's GetLimit does.
func (c *Config) Lookup(domain string, entries []*rlpb.RateLimitDescriptor_Entry) Match {
	level := c.domains[domain]
	if level == nil {
		return Match{}
	}
	m := Match{Known: true}
	// The value_to_metric name, built only when some level may ask for a
	// value (without, it is the rule's key).
	var byValue strings.Builder
	if c.valueToMetric {
		byValue.WriteString(domain)
	}
	for i, e := range entries {
		kv := e.GetKey() + "_" + e.GetValue()
		next := level.children[kv]
		wildKey := ""
		if next == nil {
			for _, w := range level.wildcards {
				if w.matches(kv) {
					next, wildKey = level.children[w.key], w.key
					break
				}
			}
		}
		byExactValue := next != nil && wildKey == ""
		if next == nil {
			next = level.children[e.GetKey()]
		}
		if c.valueToMetric {
			byValue.WriteByte('.')
			byValue.WriteString(e.GetKey())
		}
		if next == nil {
			break
		}
		if wildKey != "" && next.shareThreshold {
			if m.Shared == nil {
				m.Shared = make([]string, len(entries))
			}
			m.Shared[i] = strings.TrimPrefix(next.pattern, e.GetKey()+"_")
		}
		if c.valueToMetric {
			// The value this level's part of the name holds.
			var v string
			switch {
			case wildKey != "" && m.Shared != nil && m.Shared[i] != "":
				v = m.Shared[i]
			case wildKey != "" && next.valueToMetric:
				v = e.GetValue()
			case wildKey != "":
				v = strings.TrimPrefix(wildKey, e.GetKey()+"_")
			case byExactValue || next.valueToMetric:
				v = e.GetValue()
			}
			if v != "" {
				byValue.WriteByte('_')
				byValue.WriteString(v)
			}
		}
		if next.rule != nil && i == len(entries)-1 {
			m.Rule = next.rule
		}
		if len(next.children) == 0 {
			break
		}
		level = next
	}
	switch {
	case m.Rule == nil:
	case m.Rule.DetailedMetric:
		// Every entry, as key_value (with share_threshold the wildcard
		// for the entries it matched, and a bare key for an empty value).
		var b strings.Builder
		b.WriteString(domain)
		for i, e := range entries {
			b.WriteByte('.')
			b.WriteString(e.GetKey())
			if m.Shared == nil {
				b.WriteByte('_')
				b.WriteString(e.GetValue())
			} else if v := cmp.Or(m.Shared[i], e.GetValue()); v != "" {
				b.WriteByte('_')
				b.WriteString(v)
			}
		}
		m.StatKey = b.String()
	case c.valueToMetric:
		m.StatKey = byValue.String()
	default:
		m.StatKey = m.Rule.Key
	}
	return m
}

// OverrideStatKey names the statistics of a descriptor carrying its own
// limit, as the reference does: the domain and the entries.
func OverrideStatKey(domain string, entries []*rlpb.RateLimitDescriptor_Entry) string {
	var b strings.Builder
	b.WriteString(domain)
	b.WriteByte('.')
	for i, e := range entries {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.GetKey())
		if e.GetValue() != "" {
			b.WriteByte('_')
			b.WriteString(e.GetValue())
		}
	}
	return b.String()
}
