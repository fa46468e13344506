package ratelua

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLimitValidation(t *testing.T) {
	client := noClient{}
	type build func() (*Limiter, error)
	for _, c := range []struct {
		name  string
		build build
		field string
	}{
		{"no limits", func() (*Limiter, error) { return NewSlidingWindow(client, Options{}) }, "limits"},
		{"17 limits", func() (*Limiter, error) {
			return NewTokenBucket(client, Options{}, make([]Bucket, 17)...)
		}, "limits"},
		{"max 0", func() (*Limiter, error) {
			return NewSlidingWindow(client, Options{}, Window{0, time.Second, time.Second})
		}, "Max"},
		{"resolution > duration", func() (*Limiter, error) {
			return NewSlidingWindow(client, Options{}, Window{1, time.Second, 2 * time.Second})
		}, "Resolution"},
		{"10001 buckets", func() (*Limiter, error) {
			return NewSlidingWindow(client, Options{}, Window{1, 10001 * time.Second, time.Second})
		}, "Resolution"},
		{"negative duration", func() (*Limiter, error) {
			return NewSlidingWindow(client, Options{}, Window{1, -time.Second, -time.Second})
		}, "Duration"},
		{"nanoseconds", func() (*Limiter, error) {
			return NewZSetLog(client, Options{}, Log{1, time.Second + time.Nanosecond})
		}, "durations"},
		{"zset max", func() (*Limiter, error) { return NewZSetLog(client, Options{}, Log{1_000_001, time.Second}) }, "Max"},
		{"factor 1", func() (*Limiter, error) { return NewAR1(client, Options{}, Decay{10, 1, time.Second}) }, "Factor"},
		{"factor 4 decimals", func() (*Limiter, error) { return NewAR1(client, Options{}, Decay{10, 1.0005, time.Second}) }, "Factor"},
		{"capacity*interval", func() (*Limiter, error) {
			return NewTokenBucket(client, Options{}, Bucket{1_000_000_000, 1, 1_200_000 * time.Second})
		}, "RefillInterval"},
		{"prefix with brace", func() (*Limiter, error) {
			return NewTokenBucket(client, Options{Prefix: "a{b"}, PerSecond(1, 1))
		}, "Prefix"},
		{"nil client", func() (*Limiter, error) { return NewTokenBucket(nil, Options{}, PerSecond(1, 1)) }, "client"},
	} {
		_, err := c.build()
		var le *LimitError
		if !errors.Is(err, ErrInvalidLimit) || !errors.As(err, &le) || le.Field != c.field {
			t.Errorf("%s: %v, want a LimitError on %s", c.name, err, c.field)
		}
	}
}

func TestLimiterArgsAndKey(t *testing.T) {
	client := noClient{}
	at := time.Unix(1000, 500_000_000)
	l, err := NewSlidingWindow(client, Options{Prefix: "login", CountDenied: true, Clock: func() time.Time { return at }},
		Window{1, 5 * time.Second, time.Second}, Window{5, time.Hour, 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Args(1), " "); got != "1 ms 1000500 1 1 5000 1000 5 3600000 600000" {
		t.Errorf("Args = %q", got)
	}
	key := l.Key("203.0.113.7")
	// sliding_window v7 keeps its own state layout (state version 7, v6's
	// and a denial memo): its key names it, so v5, v6 and v7 never read
	// each other's state.
	if !strings.HasPrefix(key, "login:{203.0.113.7}:sliding_window:v7:") || len(key) != len("login:{203.0.113.7}:sliding_window:v7:")+8 {
		t.Errorf("Key = %q", key)
	}
	pinned, err := NewSlidingWindow(client, Options{Prefix: "login", Version: 5}, Window{1, 5 * time.Second, time.Second}, Window{5, time.Hour, 10 * time.Minute})
	if err != nil || pinned.Script().Version != 5 || !strings.HasPrefix(pinned.Key("203.0.113.7"), "login:{203.0.113.7}:sliding_window:v5:") {
		t.Errorf("Version 5: %v, pins %s, key %q", err, pinned.Script(), pinned.Key("203.0.113.7"))
	}
	// The development versions before 0.1.0 are not embedded.
	if _, err := NewSlidingWindow(client, Options{Version: 4}, Window{1, time.Second, time.Second}); !errors.Is(err, ErrUnknownScript) {
		t.Errorf("Version 4: %v, want ErrUnknownScript", err)
	}
	newest := 0
	for _, s := range Scripts() {
		newest = max(newest, s.Version)
	}
	if l.Script().Version != newest || newest < 7 {
		t.Errorf("the default version is %s, want the newest embedded, v%d (v7 or later)", l.Script(), newest)
	}
	if _, err := NewSlidingWindow(client, Options{Version: 99}, Window{1, time.Second, time.Second}); !errors.Is(err, ErrUnknownScript) {
		t.Errorf("Version 99: %v, want ErrUnknownScript", err)
	}
	other, _ := NewSlidingWindow(client, Options{Prefix: "login"}, Window{2, 5 * time.Second, time.Second})
	if other.Key("203.0.113.7") == key {
		t.Error("other limits share the state key")
	}
	us, _ := NewTokenBucket(client, Options{}, Bucket{10, 1, 1500 * time.Microsecond})
	if got := strings.Join(us.Args(0), " "); got != "0 us  0 10 1 1500" {
		t.Errorf("server-clock Args = %q", got)
	}
}

func TestQuotas(t *testing.T) {
	sw, _ := NewSlidingWindow(noClient{}, Options{}, Window{1, 5 * time.Second, time.Second}, Window{5, time.Hour, 10 * time.Minute})
	tb, _ := NewTokenBucket(noClient{}, Options{}, Bucket{10, 2, time.Second})
	ar, _ := NewAR1(noClient{}, Options{}, Decay{100, 2, time.Second})
	zl, _ := NewZSetLog(noClient{}, Options{}, Log{7, time.Minute})
	for _, tt := range []struct {
		l      *Limiter
		i      int
		max    int64
		window time.Duration
	}{
		{sw, 0, 1, 5 * time.Second}, {sw, 1, 5, time.Hour}, {sw, 2, 0, 0}, {sw, -1, 0, 0},
		{tb, 0, 10, 5 * time.Second}, {ar, 0, 100, 2 * time.Second}, {zl, 0, 7, time.Minute},
	} {
		if max, window := tt.l.Quota(tt.i); max != tt.max || window != tt.window {
			t.Errorf("%s Quota(%d) = %d, %v; want %d, %v", tt.l.Script(), tt.i, max, window, tt.max, tt.window)
		}
	}
	if sw.Limits() != 2 || tb.Limits() != 1 {
		t.Errorf("Limits: %d %d", sw.Limits(), tb.Limits())
	}
}
