package rls

import (
	"cmp"
	"strconv"
	"strings"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// match is what the configuration says of one descriptor.
type match struct {
	rule *Rule
	// known is false when the domain has no configuration.
	known bool
	// shared holds, per entry, the wildcard value a share_threshold
	// descriptor counts under instead of the entry's own value ("" for
	// none); nil when no entry shares.
	shared []string
	// statKey is the name the reference gives the rule's statistics for
	// this descriptor (before sanitizing): the rule's key, or with
	// detailed_metric the descriptor's entries, or with value_to_metric
	// the values of the levels that ask for them.
	statKey string
}

// lookup walks the domain's tree with the descriptor's entries, as the
// reference does: at each level the exact "key_value", else the first
// wildcard that matches it, else the bare "key"; the rule is the one at the
// level of the last entry, and the walk stops at a level without children.
// It names the statistics as the reference's GetLimit does.
func (c *Config) lookup(domain string, entries []*rlpb.RateLimitDescriptor_Entry) match {
	level := c.domains[domain]
	if level == nil {
		return match{}
	}
	m := match{known: true}
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
			if m.shared == nil {
				m.shared = make([]string, len(entries))
			}
			m.shared[i] = strings.TrimPrefix(next.pattern, e.GetKey()+"_")
		}
		if c.valueToMetric {
			// The value this level's part of the name holds.
			var v string
			switch {
			case wildKey != "" && m.shared != nil && m.shared[i] != "":
				v = m.shared[i]
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
			m.rule = next.rule
		}
		if len(next.children) == 0 {
			break
		}
		level = next
	}
	switch {
	case m.rule == nil:
	case m.rule.DetailedMetric:
		// Every entry, as key_value (with share_threshold the wildcard
		// for the entries it matched, and a bare key for an empty value).
		var b strings.Builder
		b.WriteString(domain)
		for i, e := range entries {
			b.WriteByte('.')
			b.WriteString(e.GetKey())
			if m.shared == nil {
				b.WriteByte('_')
				b.WriteString(e.GetValue())
			} else if v := cmp.Or(m.shared[i], e.GetValue()); v != "" {
				b.WriteByte('_')
				b.WriteString(v)
			}
		}
		m.statKey = b.String()
	case c.valueToMetric:
		m.statKey = byValue.String()
	default:
		m.statKey = m.rule.Key
	}
	return m
}

// overrideStatKey names the statistics of a descriptor carrying its own
// limit, as the reference does: the domain and the entries.
func overrideStatKey(domain string, entries []*rlpb.RateLimitDescriptor_Entry) string {
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

// eventKey is the key a descriptor counts under: its domain and entries,
// each length-prefixed so that no two descriptors share one (the
// reference's "domain_key_value_" can), with a share_threshold entry's
// value replaced by its wildcard.
func eventKey(domain string, entries []*rlpb.RateLimitDescriptor_Entry, shared []string) string {
	var b strings.Builder
	n := len(domain) + 8
	for _, e := range entries {
		n += len(e.GetKey()) + len(e.GetValue()) + 16
	}
	b.Grow(n)
	b.WriteString(strconv.Itoa(len(domain)))
	b.WriteByte(':')
	b.WriteString(domain)
	for i, e := range entries {
		v := e.GetValue()
		if shared != nil && shared[i] != "" {
			v = shared[i]
		}
		b.WriteByte('|')
		b.WriteString(strconv.Itoa(len(e.GetKey())))
		b.WriteByte(':')
		b.WriteString(e.GetKey())
		b.WriteString(strconv.Itoa(len(v)))
		b.WriteByte(':')
		b.WriteString(v)
	}
	return b.String()
}
