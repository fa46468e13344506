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
