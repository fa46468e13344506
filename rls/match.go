package rls

import (
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
}

// lookup walks the domain's tree with the descriptor's entries, as the
// reference does: at each level the exact "key_value", else the first
// wildcard that matches it, else the bare "key"; the rule is the one at the
// level of the last entry, and the walk stops at a level without children.
func (c *Config) lookup(domain string, entries []*rlpb.RateLimitDescriptor_Entry) match {
	level := c.domains[domain]
	if level == nil {
		return match{}
	}
	m := match{known: true}
	for i, e := range entries {
		kv := e.GetKey() + "_" + e.GetValue()
		next := level.children[kv]
		wild := false
		if next == nil {
			for _, w := range level.wildcards {
				if w.matches(kv) {
					next, wild = level.children[w.key], true
					break
				}
			}
		}
		if next == nil {
			next = level.children[e.GetKey()]
		}
		if next == nil {
			break
		}
		if wild && next.shareThreshold {
			if m.shared == nil {
				m.shared = make([]string, len(entries))
			}
			m.shared[i] = strings.TrimPrefix(next.pattern, e.GetKey()+"_")
		}
		if next.rule != nil && i == len(entries)-1 {
			m.rule = next.rule
		}
		if len(next.children) == 0 {
			break
		}
		level = next
	}
	return m
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
