package ratelua

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua/luatest"
)

// noClient is a Client for building limiters that never call it.
type noClient struct{}

func (noClient) Run(context.Context, Call, []int64) error {
	return errors.New("noClient: not for calls")
}

// guardLimiter builds a limiter of script pick from raw fuzz values, on a
// caller clock reading clockNanos.
func guardLimiter(pick uint8, max, d1, d2 int64, factor float64, clockNanos int64) (*Limiter, error) {
	opts := Options{Clock: func() time.Time { return time.Unix(0, clockNanos) }}
	switch pick % 5 {
	case 0:
		return NewSlidingWindow(noClient{}, opts, Window{max, time.Duration(d1), time.Duration(d2)})
	case 1:
		return NewZSetLog(noClient{}, opts, Log{max, time.Duration(d1)})
	case 2:
		return NewTokenBucket(noClient{}, opts, Bucket{max, d2, time.Duration(d1)})
	case 4:
		// A Semaphore's calls go through the same core as a Limiter's.
		s, err := NewConcurrency(noClient{}, opts, Slots{Max: max, Lease: time.Duration(d1)})
		if err != nil {
			return nil, err
		}
		l := &Limiter{core: s.l}
		l.bindWire()
		return l, nil
	}
	return NewAR1(noClient{}, opts, Decay{max, factor, time.Duration(d1)})
}

// FuzzGoRefusesWhatScriptsRefuse: whatever limits and clock reading the Go
// constructors and the limiter accept, every embedded version of the
// script accepts too. A value the scripts would refuse must be refused in
// Go, before any round trip, as ErrInvalidLimit.
func FuzzGoRefusesWhatScriptsRefuse(f *testing.F) {
	day := int64(24 * time.Hour)
	for _, seed := range []struct {
		pick        uint8
		max, d1, d2 int64
		factor      float64
		clock       int64
	}{
		{0, 1, int64(5 * time.Second), int64(time.Second), 0, 1_700_000_000e9},
		{0, 1, 9223372036854 * int64(time.Millisecond), int64(time.Millisecond), 0, 1_700_000_000e9},
		{0, 1e9, math.MaxInt64, math.MaxInt64 / 10000, 0, 0},
		{0, 5, 10000 * int64(time.Microsecond), int64(time.Microsecond), 0, math.MaxInt64},
		{1, 1e6, math.MaxInt64, 0, 0, 1},
		{2, 1e9, day * 365 * 100, 1e9, 0, -1},
		{2, 1, 1, 1, 0, math.MinInt64},
		{3, 1e9, math.MaxInt64, 0, 1e6, 1_700_000_000e9},
		{3, 1, int64(time.Microsecond), 0, 1.001, 1_700_000_000e9},
		{4, 2, int64(30 * time.Second), 0, 0, 1_700_000_000e9},
		{4, 1e6, math.MaxInt64, 0, 0, 1},
		{4, 1, int64(time.Microsecond), 0, 0, math.MaxInt64},
	} {
		f.Add(seed.pick, seed.max, seed.d1, seed.d2, seed.factor, seed.clock)
	}
	engine := frozenEngine()
	f.Fuzz(func(t *testing.T, pick uint8, max, d1, d2 int64, factor float64, clock int64) {
		l, err := guardLimiter(pick, max, d1, d2, factor, clock)
		if err != nil {
			if !errors.Is(err, ErrInvalidLimit) {
				t.Fatalf("constructor error %v is not ErrInvalidLimit", err)
			}
			return
		}
		if _, err := l.now(); err != nil {
			if !errors.Is(err, ErrInvalidLimit) {
				t.Fatalf("clock error %v is not ErrInvalidLimit", err)
			}
			if r, err := l.Allow(context.Background(), "k"); r.Allowed || !errors.Is(err, ErrInvalidLimit) {
				t.Fatalf("a clock Go refuses was sent: %+v, %v", r, err)
			}
			return
		}
		for _, s := range versions(t, l.script.Name) {
			engine.FlushAll()
			for _, n := range []int64{1, 0, -1} {
				if _, err := engine.Run(s.Source, []string{testKey}, l.Args(n)); err != nil {
					var er *luatest.ErrorReply
					if errors.As(err, &er) && strings.Contains(er.Msg, "ratelua:") {
						t.Fatalf("%s refuses ARGV %q that Go accepted: %v", s, l.Args(n), err)
					}
					t.Fatalf("%s with ARGV %q: %v", s, l.Args(n), err)
				}
			}
		}
	})
}

func TestClockOutOfRangeIsRefusedInGo(t *testing.T) {
	for _, at := range []time.Time{{}, time.Unix(-1, 0), time.Unix(1<<52/1000+1, 0)} {
		l, err := NewTokenBucket(noClient{}, Options{Clock: func() time.Time { return at }}, PerSecond(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Allow(context.Background(), "k")
		var le *LimitError
		if r.Allowed || !errors.As(err, &le) || le.Field != "Clock" {
			t.Errorf("clock %v: %+v, %v", at, r, err)
		}
		if out := l.AllowBatch(context.Background(), []Request{{"k", 1}}); !errors.Is(out[0].Err, ErrInvalidLimit) {
			t.Errorf("clock %v in a batch: %v", at, out[0].Err)
		}
	}
}

// TestOverflowingWindowIsRefusedInGo is the report's repro: a duration
// whose bucket count overflowed int64 passed the Go checks.
func TestOverflowingWindowIsRefusedInGo(t *testing.T) {
	_, err := NewSlidingWindow(noClient{}, Options{}, Window{1, 9223372036854 * time.Millisecond, time.Millisecond})
	var le *LimitError
	if !errors.As(err, &le) || le.Field != "Resolution" || !strings.Contains(err.Error(), "10000 buckets") {
		t.Errorf("overflowing window: %v", err)
	}
}
