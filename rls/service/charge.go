package service

import (
	"fmt"
	"strconv"

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

// ReserveKey is the key of the descriptor entry that makes a request-time
// call a reserve of its hits_addend (the estimate) on an extension rule
// whose script takes reservations (token_bucket): decided as those hits
// would be, and when admitted held until settled. Its value names the
// field of the response's dynamic_metadata that carries the
// reservation's id (a string), which Envoy keeps under
// envoy.filters.http.ratelimit for the stream end's descriptor.
const ReserveKey = "ratelua.reserve"

// SettleKey is the key of the descriptor entry that settles, with the
// descriptor's hits_addend as the actual cost (0 cancels), the
// reservation whose id is its value: the difference is refunded or
// charged (never denied), at most once.
const SettleKey = "ratelua.settle"

// op is what a descriptor asks of its rule.
type op uint8

const (
	opDecide  op = iota // decide the hits (the reference's way)
	opCharge            // count the hits even when denied (ChargeKey)
	opReserve           // reserve the hits (ReserveKey)
	opSettle            // settle a reservation with the hits (SettleKey)
)

// marked is a descriptor's entries without its ratelua entry, what that
// entry asks, and its value.
type marked struct {
	entries []*rlpb.RateLimitDescriptor_Entry
	op      op
	name    string // a reserve's metadata field
	id      int64  // a settle's reservation
}

// maxReserveName bounds the metadata field a reserve names.
const maxReserveName = 64

// markedEntries returns the entries of d without its ChargeKey, ReserveKey
// or SettleKey entry, and what it asks; more than one such entry, or one
// of a bad value, is an error.
func markedEntries(d *rlpb.RateLimitDescriptor) (marked, error) {
	entries := d.GetEntries()
	m := marked{entries: entries}
	at := -1
	for i, e := range entries {
		var o op
		switch e.GetKey() {
		case ChargeKey:
			o = opCharge
		case ReserveKey:
			o = opReserve
		case SettleKey:
			o = opSettle
		default:
			continue
		}
		if at >= 0 {
			return marked{}, fmt.Errorf("entries %d (%s) and %d (%s): a descriptor takes one of %s, %s and %s", at, entries[at].GetKey(), i, e.GetKey(), ChargeKey, ReserveKey, SettleKey)
		}
		at, m.op = i, o
		v := e.GetValue()
		switch o {
		case opCharge:
			if v != ChargeValue {
				return marked{}, fmt.Errorf("entry %d: %s has value %q, want %q", i, ChargeKey, v, ChargeValue)
			}
		case opReserve:
			if !validName(v) {
				return marked{}, fmt.Errorf("entry %d: %s has value %q, want a metadata field name of 1 to %d letters, digits, '_', '-' or '.'", i, ReserveKey, v, maxReserveName)
			}
			m.name = v
		case opSettle:
			id, err := strconv.ParseInt(v, 10, 64)
			if err != nil || id < 1 || id > chargeMax || strconv.FormatInt(id, 10) != v {
				return marked{}, fmt.Errorf("entry %d: %s has value %q, want a reservation id, an integer in [1, 2^52]", i, SettleKey, v)
			}
			m.id = id
		}
	}
	if at < 0 {
		return m, nil
	}
	out := make([]*rlpb.RateLimitDescriptor_Entry, 0, len(entries)-1)
	out = append(out, entries[:at]...)
	m.entries = append(out, entries[at+1:]...)
	return m, nil
}

// validName reports whether s is a reserve's metadata field name.
func validName(s string) bool {
	if s == "" || len(s) > maxReserveName {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
