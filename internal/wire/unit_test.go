package wire

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
		u, err := PickUnit(c.durations)
		if err != nil || u.Name != c.want {
			t.Errorf("PickUnit(%v) = %q, %v; want %q", c.durations, u.Name, err, c.want)
		}
	}
	if _, err := PickUnit([]time.Duration{time.Second, 1500 * time.Nanosecond}); err == nil {
		t.Error("a duration of 1.5µs has no exact unit, want an error")
	}
}

func TestUnitConversions(t *testing.T) {
	at := time.Unix(1_700_000_000, 987_654_321)
	for _, u := range Units {
		want := map[string]int64{"s": 1_700_000_000, "ms": 1_700_000_000_987, "us": 1_700_000_000_987_654}[u.Name]
		if got := u.Now(at); got != want {
			t.Errorf("%s: now %d, want %d", u.Name, got, want)
		}
		if got := u.Duration(3); got != 3*u.Size {
			t.Errorf("%s: duration(3) = %v", u.Name, got)
		}
		if got := u.Duration(-1); got != Never {
			t.Errorf("%s: duration(-1) = %v, want Never", u.Name, got)
		}
		if got := u.Duration(MaxScriptInt); got <= 0 {
			t.Errorf("%s: duration(2^52) = %v overflowed", u.Name, got)
		}
	}
}
