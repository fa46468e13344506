package ratelua

import (
	"fmt"
	"time"
)

// maxScriptInt bounds now, durations and replies in the scripts: 2^52.
const maxScriptInt = 1 << 52

// unit is a time unit of the wire contract.
type unit struct {
	name string // "s", "ms" or "us"
	size time.Duration
}

var units = []unit{{"s", time.Second}, {"ms", time.Millisecond}, {"us", time.Microsecond}}

// pickUnit returns milliseconds, or microseconds when a duration is not a
// whole number of milliseconds, so that conversions are exact and waits are
// reported to the millisecond at least; durations finer than a microsecond
// are rejected. (Seconds are for raw callers.)
func pickUnit(durations []time.Duration) (unit, error) {
	for _, u := range units[1:] {
		exact := true
		for _, d := range durations {
			if d%u.size != 0 {
				exact = false
				break
			}
		}
		if exact {
			return u, nil
		}
	}
	return unit{}, fmt.Errorf("durations must be whole microseconds")
}

// count converts d to a whole number of units.
func (u unit) count(d time.Duration) int64 { return int64(d / u.size) }

// duration converts a reply value to a duration; -1 stays -1 (never).
func (u unit) duration(n int64) time.Duration {
	if n < 0 {
		return Never
	}
	if n > int64(maxDuration/u.size) {
		return maxDuration
	}
	return time.Duration(n) * u.size
}

// now converts a clock reading to the unit, rounding down.
func (u unit) now(t time.Time) int64 {
	switch u.name {
	case "s":
		return t.Unix()
	case "ms":
		return t.UnixMilli()
	}
	return t.UnixMicro()
}

const maxDuration = time.Duration(1<<63 - 1)
