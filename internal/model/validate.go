package model

import (
	"strconv"
	"strings"
)

// isInteger reports an optional '-' and one or more decimal digits.
func isInteger(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

// limitRule bounds one integer of a limit.
type limitRule struct {
	lo, hi int64
}

var rules = map[string][]limitRule{
	"sliding_window": {{1, 1e9}, {1, MaxTime}, {1, MaxTime}},
	"ar1":            {{1, 1e9}, {1001, 1e9}, {1, MaxTime}},
	"zset_log":       {{1, 1e4}, {1, MaxTime}},
	"token_bucket":   {{1, 1e9}, {1, 1e9}, {1, MaxTime}},
	"fixed_window":   {{0, MaxTime}, {1, MaxTime}, {1, MaxTime}},
}

func parseInt(s string, lo, hi int64) (int64, bool) {
	if len(s) == 0 || len(s) > 20 || !isInteger(s) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

// Accepts reports whether the v1 script name accepts keys and argv: the
// rules of the contract, written independently of the scripts.
func Accepts(name string, keys, argv []string) bool {
	if name == "concurrency" {
		return acceptsConcurrency(keys, argv)
	}
	rule, ok := rules[name]
	if !ok || len(keys) != 1 || len(argv) < 4 {
		return false
	}
	count, ok := parseInt(argv[0], -MaxTime, MaxTime)
	if !ok {
		return false
	}
	if argv[1] != "s" && argv[1] != "ms" && argv[1] != "us" {
		return false
	}
	if argv[2] != "" {
		if _, ok := parseInt(argv[2], 0, MaxTime); !ok {
			return false
		}
	}
	if argv[3] != "0" && argv[3] != "1" {
		op, _, _, ok := ParseReservation(argv[3])
		if !ok || !Reservable[name] || (op == OpReserve && count < 1) || (op == OpSettle && count < 0) {
			return false
		}
	}
	rest := argv[4:]
	if len(rest) == 0 || len(rest)%len(rule) != 0 || len(rest)/len(rule) > 16 || (name == "fixed_window" && len(rest) != len(rule)) {
		return false
	}
	for i := 0; i < len(rest); i += len(rule) {
		v := make([]int64, len(rule))
		for j, r := range rule {
			n, ok := parseInt(rest[i+j], r.lo, r.hi)
			if !ok {
				return false
			}
			v[j] = n
		}
		switch name {
		case "sliding_window":
			if v[2] > v[1] || ceilDiv(v[1], v[2]) > 10000 {
				return false
			}
		case "token_bucket":
			if float64(v[0])*float64(v[2]) > 1<<50 {
				return false
			}
		}
	}
	return true
}

// isCanonical reports "0", or an optional "-" then a digit 1-9 then
// digits.
func isCanonical(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	return s == "0" || (isInteger(s) && digits[0] != '0')
}

// AcceptsCanonical reports whether a v3 script name accepts keys and argv:
// the rules of Accepts, and every integer written in canonical form ("0",
// or an optional "-" then a digit 1-9 then digits: no "-0", no leading
// zeros, no "+").
func AcceptsCanonical(name string, keys, argv []string) bool {
	if !Accepts(name, keys, argv) {
		return false
	}
	integers := append([]string{argv[0]}, argv[4:]...)
	if argv[2] != "" {
		integers = append(integers, argv[2])
	}
	for _, s := range integers {
		if !isCanonical(s) {
			return false
		}
	}
	return true
}

// acceptsConcurrency is Accepts for the concurrency script: ARGV[4] is
// '0' (then ARGV[1] is any integer and max and lease follow) or 'renew'
// or 'release' (then ARGV[1] is the lease's slots, 1..10^6, and the lease
// id follows max and lease).
func acceptsConcurrency(keys, argv []string) bool {
	if len(keys) != 1 || len(argv) < 4 {
		return false
	}
	count, ok := parseInt(argv[0], -MaxTime, MaxTime)
	if !ok || (argv[1] != "s" && argv[1] != "ms" && argv[1] != "us") {
		return false
	}
	if argv[2] != "" {
		if _, ok := parseInt(argv[2], 0, MaxTime); !ok {
			return false
		}
	}
	want := 6
	switch argv[3] {
	case "0":
	case "renew", "release":
		if count < 1 || count > 1e6 {
			return false
		}
		want = 7
	default:
		return false
	}
	if len(argv) != want {
		return false
	}
	bounds := []limitRule{{1, 1e6}, {1, MaxTime}, {1, MaxTime}}
	for i, v := range argv[4:] {
		if _, ok := parseInt(v, bounds[i].lo, bounds[i].hi); !ok {
			return false
		}
	}
	return true
}

// Reservable holds the scripts whose newest version (v7) takes reserve
// and settle.
var Reservable = map[string]bool{"token_bucket": true, "zset_log": true, "sliding_window": true}

// ParseReservation reads a reservation's mode, 'reserve:<id>:<lifetime>'
// or 'settle:<id>' with id and lifetime canonical integers in [1, 2^52]
// (a settle's lifetime is 0): ok false for any other text.
func ParseReservation(mode string) (op string, id, lifetime int64, ok bool) {
	parts := strings.Split(mode, ":")
	switch {
	case len(parts) == 3 && parts[0] == OpReserve:
		op = OpReserve
	case len(parts) == 2 && parts[0] == OpSettle:
		op = OpSettle
	default:
		return "", 0, 0, false
	}
	if id, ok = parseInt(parts[1], 1, MaxTime); !ok || !isCanonical(parts[1]) {
		return "", 0, 0, false
	}
	if op == OpReserve {
		if lifetime, ok = parseInt(parts[2], 1, MaxTime); !ok || !isCanonical(parts[2]) {
			return "", 0, 0, false
		}
	}
	return op, id, lifetime, true
}
