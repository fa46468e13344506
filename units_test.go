package ratelua

import (
	"testing"
	"time"
)

func TestPickUnit(t *testing.T) {
	for _, c := range []struct {
		durations []time.Duration
		want      string
	}{
		{[]time.Duration{5 * time.Second, time.Hour}, "ms"},
		{[]time.Duration{5 * time.Second, 1500 * time.Millisecond}, "ms"},
		{[]time.Duration{time.Second, time.Microsecond}, "us"},
		{[]time.Duration{time.Minute}, "ms"},
	} {
		u, err := pickUnit(c.durations)
		if err != nil || u.name != c.want {
			t.Errorf("pickUnit(%v) = %q, %v; want %q", c.durations, u.name, err, c.want)
		}
	}
	if _, err := pickUnit([]time.Duration{time.Second, 1500 * time.Nanosecond}); err == nil {
		t.Error("a duration of 1.5µs has no exact unit, want an error")
	}
}

func TestUnitConversions(t *testing.T) {
	at := time.Unix(1_700_000_000, 987_654_321)
	for _, u := range units {
		want := map[string]int64{"s": 1_700_000_000, "ms": 1_700_000_000_987, "us": 1_700_000_000_987_654}[u.name]
		if got := u.now(at); got != want {
			t.Errorf("%s: now %d, want %d", u.name, got, want)
		}
		if got := u.duration(3); got != 3*u.size {
			t.Errorf("%s: duration(3) = %v", u.name, got)
		}
		if got := u.duration(-1); got != Never {
			t.Errorf("%s: duration(-1) = %v, want Never", u.name, got)
		}
		if got := u.duration(maxScriptInt); got <= 0 {
			t.Errorf("%s: duration(2^52) = %v overflowed", u.name, got)
		}
	}
}
