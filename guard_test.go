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
	switch pick % 4 {
	case 0:
		return NewSlidingWindow(noClient{}, opts, Window{max, time.Duration(d1), time.Duration(d2)})
	case 1:
		return NewZSetLog(noClient{}, opts, Log{max, time.Duration(d1)})
	case 2:
		return NewTokenBucket(noClient{}, opts, Bucket{max, d2, time.Duration(d1)})
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
		for _, s := range versions(l.script.Name) {
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

// TestErrorsQuoteBoundedInput: no error carries more than a bounded,
// escaped excerpt of what a caller passed.
func TestErrorsQuoteBoundedInput(t *testing.T) {
	huge := strings.Repeat("k", 1<<20)
	if _, err := NewTokenBucket(Rueidis(nil), Options{}, PerSecond(1, 1)); !errors.Is(err, ErrInvalidLimit) {
		t.Fatalf("a nil rueidis client: %v", err)
	}
	l, _ := NewTokenBucket(noClient{}, Options{}, PerSecond(1, 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	errs := map[string]error{
		"ResetMany": l.ResetMany(ctx, []string{huge, "\x00\x1b[31m"}),
	}
	_, errs["Prefix"] = NewTokenBucket(noClient{}, Options{Prefix: huge + "{"}, PerSecond(1, 1))
	_, errs["Prefix braces"] = NewTokenBucket(noClient{}, Options{Prefix: "a{\x1b[2J"}, PerSecond(1, 1))
	_, errs["ResetPrefix"] = ResetPrefix(ctx, noClient{}, huge, true, nil)
	errs["ServerError"] = classify("token_bucket@v2", &ServerError{Message: "ERR ratelua: ARGV[5] got '\x00\x1b[2J" + huge + "'"})
	for name, err := range errs {
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		msg := err.Error()
		if len(msg) > 512 || strings.ContainsAny(msg, "\x00\x1b") {
			t.Errorf("%s: error of %d bytes: %.200q", name, len(msg), msg)
		}
	}
	if !strings.Contains(errs["ServerError"].Error(), `\x00\x1b[2J`) {
		t.Errorf("control bytes are not escaped: %q", errs["ServerError"].Error())
	}
}

// TestLongEventKeysAreDigested: a state key stays short whatever the event
// key's size, and two long event keys that differ only at the end get two
// keys.
func TestLongEventKeysAreDigested(t *testing.T) {
	l, _ := NewTokenBucket(noClient{}, Options{}, PerSecond(1, 1))
	a, b := strings.Repeat("x", 1<<20), strings.Repeat("x", 1<<20-1)+"y"
	ka, kb := l.Key(a), l.Key(b)
	if len(ka) > 200 || ka == kb {
		t.Errorf("keys of long event keys: %d bytes, %q vs %q", len(ka), ka, kb)
	}
	edge := strings.Repeat("e", maxEventKey)
	if k := l.Key(edge); !strings.Contains(k, "{"+edge+"}") {
		t.Errorf("an event key of exactly %d bytes is kept: %q", maxEventKey, k)
	}
	if k := l.Key(edge + "e"); strings.Contains(k, edge) || !strings.Contains(k, "{%H") {
		t.Errorf("an event key of %d bytes is digested: %q", maxEventKey+1, k)
	}
	// '%' escapes to three bytes: the limit is on the escaped form.
	if k := l.Key(strings.Repeat("%", 43)); !strings.Contains(k, "{%H") {
		t.Errorf("an event key escaping past %d bytes is digested: %q", maxEventKey, k)
	}
	if !isStateKey("ratelua", ka) || !isStateKey("ratelua", l.Key("")) || !isStateKey("ratelua", l.Key("{}%")) {
		t.Errorf("state keys not recognised: %q %q", ka, l.Key(""))
	}
	for _, k := range []string{"ratelua:{a}:token_bucket:v2:abcd012", "ratelua:{a}:Token:v2:abcd0123", "ratelua:{a{b}:x:v1:abcd0123",
		"ratelua:admin:{a}:x:v1:abcd0123", "ratelua:{}:x:v1:abcd0123", "ratelua:{a}:x:v01:abcd0123", "ratelua:{a}:x:v1:abcd0123:extra"} {
		if isStateKey("ratelua", k) {
			t.Errorf("%q taken for a state key", k)
		}
	}
}
