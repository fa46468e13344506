// Package wire is the scripts' wire format as the Go API speaks it: the
// units of time, the reply of five integers, the state keys and their hash
// slots. It sends nothing: the root package's wire.go sends the calls
// (one, or batches, with the NOSCRIPT and missing-function recovery)
// through a Client, and internal/decide runs the stages around them.
package wire

import (
	"fmt"
	"time"
)

// MaxScriptInt bounds now, durations, counts and replies in the scripts:
// 2^52.
const MaxScriptInt = 1 << 52

// MaxDuration is the largest time.Duration.
const MaxDuration = time.Duration(1<<63 - 1)

// Never is the wait of events that can never be admitted (the Go API's
// Never): a reply's -1.
const Never = time.Duration(-1)

// Unit is a time unit of the wire contract.
type Unit struct {
	Name string // "s", "ms" or "us"
	Size time.Duration
}

// Units are the units of the contract, coarsest first.
var Units = [...]Unit{{"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}}

// PickUnit returns milliseconds, or microseconds when a duration is not a
// whole number of milliseconds, so that conversions are exact and waits are
// reported to the millisecond at least; durations finer than a microsecond
// are rejected. (Seconds are for raw callers.)
func PickUnit(durations []time.Duration) (Unit, error) {
	for _, u := range Units[1:] {
		exact := true
		for _, d := range durations {
			if d%u.Size != 0 {
				exact = false
				break
			}
		}
		if exact {
			return u, nil
		}
	}
	return Unit{}, fmt.Errorf("durations must be whole microseconds")
}

// Count converts d to a whole number of units.
func (u Unit) Count(d time.Duration) int64 { return int64(d / u.Size) }

// Duration converts a reply value to a duration; -1 stays -1 (Never), and
// a value past the largest Duration is the largest.
func (u Unit) Duration(n int64) time.Duration {
	if n < 0 {
		return Never
	}
	if n > int64(MaxDuration/u.Size) {
		return MaxDuration
	}
	return time.Duration(n) * u.Size
}

// Now converts a clock reading to the unit, rounding down.
func (u Unit) Now(t time.Time) int64 {
	switch u.Name {
	case "s":
		return t.Unix()
	case "ms":
		return t.UnixMilli()
	}
	return t.UnixMicro()
}
