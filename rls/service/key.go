package service

import (
	"strconv"
	"strings"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

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

// referenceKey is envoyproxy/ratelimit's key of a descriptor's counter in
// the window of now (its cache_key.go): the prefix (CACHE_KEY_PREFIX, as
// given), the domain, '_', then each entry's key, '_', value (a
// share_threshold entry's wildcard instead), '_', and last the window's
// start in Unix seconds, now divided by the unit's seconds and multiplied
// back. Two descriptors may share a key ("a_b" and "a", "b"), as in the
// reference.
func referenceKey(prefix, domain string, entries []*rlpb.RateLimitDescriptor_Entry, shared []string, unitSeconds, now int64) string {
	var b strings.Builder
	n := len(prefix) + len(domain) + 24
	for _, e := range entries {
		n += len(e.GetKey()) + len(e.GetValue()) + 2
	}
	b.Grow(n)
	b.WriteString(prefix)
	b.WriteString(domain)
	b.WriteByte('_')
	for i, e := range entries {
		v := e.GetValue()
		if shared != nil && shared[i] != "" {
			v = shared[i]
		}
		b.WriteString(e.GetKey())
		b.WriteByte('_')
		b.WriteString(v)
		b.WriteByte('_')
	}
	b.WriteString(strconv.FormatInt(now/unitSeconds*unitSeconds, 10))
	return b.String()
}

// ownWindowKey is the event key of a reference rule's counter in the
// window of now under ratelua-rls's own keys: the descriptor's event key,
// '@', and the window's start in Unix seconds (now divided by the unit's
// seconds and multiplied back), so that each window counts afresh on the
// fixed_window script, as the reference's keys do.
func ownWindowKey(event string, unitSeconds, now int64) string {
	return event + "@" + strconv.FormatInt(now/unitSeconds*unitSeconds, 10)
}
