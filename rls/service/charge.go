package service

import (
	"fmt"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// ChargeKey is the key of the descriptor entry that marks a charge: the
// cost of work already done, such as the request Envoy sends when a
// stream ends (a rate limit with apply_on_stream_done, its hits_addend
// the actual cost). Its value must be ChargeValue. The entry is removed
// before the descriptor is matched and keyed, so the charge counts on the
// counter the request-time check reads. A charge is counted whole even
// above what remains: the limit goes into debt and later checks are
// denied until it is paid off. A reference rule counts every hit so
// already; an extension rule counts a charge as CountDenied does (a
// token_bucket's debt is at most its capacity), where a hit without the
// entry is counted only when admitted.
const ChargeKey = "ratelua.charge"

// ChargeValue is the one value of a ChargeKey entry.
const ChargeValue = "true"

// chargeEntries returns the entries of d without its ChargeKey entry, and
// whether it had one; more than one, or one of another value, is an
// error.
func chargeEntries(d *rlpb.RateLimitDescriptor) ([]*rlpb.RateLimitDescriptor_Entry, bool, error) {
	entries := d.GetEntries()
	at := -1
	for i, e := range entries {
		if e.GetKey() != ChargeKey {
			continue
		}
		if at >= 0 {
			return nil, false, fmt.Errorf("entries %d and %d are both %s: a descriptor is a charge once", at, i, ChargeKey)
		}
		if e.GetValue() != ChargeValue {
			return nil, false, fmt.Errorf("entry %d: %s has value %q, want %q", i, ChargeKey, e.GetValue(), ChargeValue)
		}
		at = i
	}
	if at < 0 {
		return entries, false, nil
	}
	out := make([]*rlpb.RateLimitDescriptor_Entry, 0, len(entries)-1)
	out = append(out, entries[:at]...)
	return append(out, entries[at+1:]...), true, nil
}
