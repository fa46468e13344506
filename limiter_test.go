package ratelua

import (
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"
)

func ints(xs ...int64) rueidis.RedisResult {
	msgs := make([]rueidis.RedisMessage, len(xs))
	for i, x := range xs {
		msgs[i] = mock.RedisInt64(x)
	}
	return mock.Result(mock.RedisArray(msgs...))
}

func TestLimitValidation(t *testing.T) {
	client := mock.NewClient(gomock.NewController(t))
	type build func() (*Limiter, error)
	for _, c := range []struct {
		name  string
		build build
		field string
	}{
		{"no limits", func() (*Limiter, error) { return NewSlidingWindow(Rueidis(client), Options{}) }, "limits"},
		{"17 limits", func() (*Limiter, error) {
			return NewTokenBucket(Rueidis(client), Options{}, make([]Bucket, 17)...)
		}, "limits"},
		{"max 0", func() (*Limiter, error) {
			return NewSlidingWindow(Rueidis(client), Options{}, Window{0, time.Second, time.Second})
		}, "Max"},
		{"resolution > duration", func() (*Limiter, error) {
			return NewSlidingWindow(Rueidis(client), Options{}, Window{1, time.Second, 2 * time.Second})
		}, "Resolution"},
		{"10001 buckets", func() (*Limiter, error) {
			return NewSlidingWindow(Rueidis(client), Options{}, Window{1, 10001 * time.Second, time.Second})
		}, "Resolution"},
		{"negative duration", func() (*Limiter, error) {
			return NewSlidingWindow(Rueidis(client), Options{}, Window{1, -time.Second, -time.Second})
		}, "Duration"},
		{"nanoseconds", func() (*Limiter, error) {
			return NewZSetLog(Rueidis(client), Options{}, Log{1, time.Second + time.Nanosecond})
		}, "durations"},
		{"zset max", func() (*Limiter, error) { return NewZSetLog(Rueidis(client), Options{}, Log{1_000_001, time.Second}) }, "Max"},
		{"factor 1", func() (*Limiter, error) { return NewAR1(Rueidis(client), Options{}, Decay{10, 1, time.Second}) }, "Factor"},
		{"factor 4 decimals", func() (*Limiter, error) { return NewAR1(Rueidis(client), Options{}, Decay{10, 1.0005, time.Second}) }, "Factor"},
		{"capacity*interval", func() (*Limiter, error) {
			return NewTokenBucket(Rueidis(client), Options{}, Bucket{1_000_000_000, 1, 1_200_000 * time.Second})
		}, "RefillInterval"},
		{"prefix with brace", func() (*Limiter, error) {
			return NewTokenBucket(Rueidis(client), Options{Prefix: "a{b"}, PerSecond(1, 1))
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
	client := mock.NewClient(gomock.NewController(t))
	at := time.Unix(1000, 500_000_000)
	l, err := NewSlidingWindow(Rueidis(client), Options{Prefix: "login", CountDenied: true, Clock: func() time.Time { return at }},
		Window{1, 5 * time.Second, time.Second}, Window{5, time.Hour, 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(l.Args(1), " "); got != "1 ms 1000500 1 1 5000 1000 5 3600000 600000" {
		t.Errorf("Args = %q", got)
	}
	key := l.Key("203.0.113.7")
	if !strings.HasPrefix(key, "login:{203.0.113.7}:sliding_window:v5:") || len(key) != len("login:{203.0.113.7}:sliding_window:v5:")+8 {
		t.Errorf("Key = %q", key)
	}
	pinned, err := NewSlidingWindow(Rueidis(client), Options{Prefix: "login", Version: 1}, Window{1, 5 * time.Second, time.Second}, Window{5, time.Hour, 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := pinned.Key("203.0.113.7"); !strings.HasPrefix(got, "login:{203.0.113.7}:sliding_window:v1:") {
		t.Errorf("Key with Version 1 = %q", got)
	}
	for _, version := range []int{2, 3} {
		pinned, err := NewSlidingWindow(Rueidis(client), Options{Prefix: "login", Version: version}, Window{1, 5 * time.Second, time.Second}, Window{5, time.Hour, 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		prefix := "login:{203.0.113.7}:sliding_window:v" + strconv.Itoa(version) + ":"
		if got := pinned.Script().Version; got != version || !strings.HasPrefix(pinned.Key("203.0.113.7"), prefix) {
			t.Errorf("Version %d pins %s, key %q", version, pinned.Script(), pinned.Key("203.0.113.7"))
		}
	}
	if l.Script().Version != 5 {
		t.Errorf("the default version is %s, want the newest, v5", l.Script())
	}
	if _, err := NewSlidingWindow(Rueidis(client), Options{Version: 99}, Window{1, time.Second, time.Second}); !errors.Is(err, ErrUnknownScript) {
		t.Errorf("Version 99: %v, want ErrUnknownScript", err)
	}
	other, _ := NewSlidingWindow(Rueidis(client), Options{Prefix: "login"}, Window{2, 5 * time.Second, time.Second})
	if other.Key("203.0.113.7") == key {
		t.Error("other limits share the state key")
	}
	us, _ := NewTokenBucket(Rueidis(client), Options{}, Bucket{10, 1, 1500 * time.Microsecond})
	if got := strings.Join(us.Args(0), " "); got != "0 us  0 10 1 1500" {
		t.Errorf("server-clock Args = %q", got)
	}
}

func TestAllowDecodesAndFails(t *testing.T) {
	ctx := context.Background()
	ctrl := gomock.NewController(t)
	client := mock.NewClient(ctrl)
	closed, _ := NewZSetLog(Rueidis(client), Options{}, Log{5, time.Minute}, Log{100, time.Hour})
	open, _ := NewZSetLog(Rueidis(client), Options{FailOpen: true}, Log{5, time.Minute}, Log{100, time.Hour})
	evalsha := mock.MatchFn(func(cmd []string) bool {
		return cmd[0] == "EVALSHA" && cmd[1] == closed.Script().SHA1 && cmd[3] == closed.Key("u1")
	}, "EVALSHA of zset_log for u1")

	client.EXPECT().Do(ctx, evalsha).Return(ints(0, 0, 42, 3600, 2))
	r, err := closed.Allow(ctx, "u1")
	if err != nil || r != (Result{Allowed: false, Remaining: 0, RetryAfter: 42 * time.Millisecond, ResetAfter: 3600 * time.Millisecond, Limit: 1}) {
		t.Errorf("decode: %+v, %v", r, err)
	}

	client.EXPECT().Do(ctx, evalsha).Return(ints(0, 0, -1, 0, 1))
	r, _ = closed.AllowN(ctx, "u1", 6)
	if r.RetryAfter != Never || r.Limit != 0 {
		t.Errorf("never: %+v", r)
	}

	client.EXPECT().Do(ctx, evalsha).Return(mock.ErrorResult(io.ErrUnexpectedEOF)).Times(2)
	r, err = closed.Allow(ctx, "u1")
	if r.Allowed || !errors.Is(err, ErrUnavailable) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("fail closed: %+v, %v", r, err)
	}
	r, err = open.Allow(ctx, "u1")
	if !r.Allowed || !errors.Is(err, ErrUnavailable) {
		t.Errorf("fail open: %+v, %v", r, err)
	}

	client.EXPECT().Do(ctx, evalsha).Return(mock.Result(mock.RedisError("ERR ratelua: ARGV[2] unit must be 's', 'ms' or 'us', got 'x'"))).Times(2)
	for _, l := range []*Limiter{closed, open} {
		r, err = l.Allow(ctx, "u1")
		var se *ServerError
		if r.Allowed || !errors.As(err, &se) || !errors.Is(err, ErrScript) || !strings.HasPrefix(se.Message, "ratelua: ARGV[2]") || se.Script != l.Script().String() {
			t.Errorf("script error (fail open %v): %+v, %v", l.failOpen, r, err)
		}
	}

	// A reply of another shape is the script's fault: never unavailable,
	// never admitted by FailOpen.
	wrong := mock.Result(mock.RedisArray(mock.RedisInt64(1), mock.RedisString("x"), mock.RedisInt64(0), mock.RedisInt64(0), mock.RedisInt64(1)))
	for _, resp := range []rueidis.RedisResult{wrong, ints(1, 2, 3)} {
		client.EXPECT().Do(ctx, evalsha).Return(resp)
		if r, err := open.Allow(ctx, "u1"); r.Allowed || err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("malformed reply: %+v, %v", r, err)
		}
	}

	// NOSCRIPT: the same arguments again by EVAL, which loads the script.
	client.EXPECT().Do(ctx, evalsha).Return(mock.Result(mock.RedisError("NOSCRIPT No matching script.")))
	client.EXPECT().Do(ctx, mock.MatchFn(func(cmd []string) bool {
		return cmd[0] == "EVAL" && cmd[1] == closed.Script().Source && cmd[3] == closed.Key("u1") && cmd[4] == "1"
	}, "EVAL of zset_log for u1")).Return(ints(1, 4, 0, 60000, 1))
	if r, err := closed.Allow(ctx, "u1"); err != nil || !r.Allowed || r.Remaining != 4 {
		t.Errorf("after NOSCRIPT: %+v, %v", r, err)
	}

	if r, err := open.decode(nil, ErrUnknownScript); r.Allowed || !errors.Is(err, ErrUnknownScript) || errors.Is(err, ErrUnavailable) {
		t.Errorf("fail open must not admit on a registry miss: %+v, %v", r, err)
	}
	if _, err := closed.AllowN(ctx, "u1", 0); !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("AllowN(0): %v", err)
	}
	client.EXPECT().Do(ctx, mock.MatchFn(func(cmd []string) bool { return cmd[0] == "EVALSHA" && cmd[4] == "-1" })).Return(ints(1, 5, 0, 0, 0))
	if err := closed.Reset(ctx, "u1"); err != nil {
		t.Errorf("Reset: %v", err)
	}
}

// TestBatchRetriesOnlyNoScript: a batch is one pipelined EVALSHA per
// request; entries answered NOSCRIPT are sent again, alone, with EVAL, and
// nothing calls SCRIPT LOAD.
func TestBatchRetriesOnlyNoScript(t *testing.T) {
	ctx := context.Background()
	client := mock.NewClient(gomock.NewController(t))
	l, _ := NewTokenBucket(Rueidis(client), Options{}, PerSecond(10, 10))
	first := mock.MatchFn(func(cmd []string) bool { return cmd[0] == "EVALSHA" }, "EVALSHA")
	client.EXPECT().DoMulti(ctx, first, first, first).Return([]rueidis.RedisResult{
		ints(1, 9, 0, 100, 1),
		mock.Result(mock.RedisError("NOSCRIPT No matching script. Please use EVAL.")),
		ints(1, 8, 0, 200, 1),
	})
	client.EXPECT().DoMulti(ctx, mock.MatchFn(func(cmd []string) bool {
		return cmd[0] == "EVAL" && cmd[1] == l.Script().Source && cmd[3] == l.Key("b")
	}, "EVAL for b")).Return([]rueidis.RedisResult{ints(1, 7, 0, 300, 1)})
	out := l.AllowBatch(ctx, []Request{{"a", 1}, {"b", 1}, {"c", 1}, {"d", -1}})
	for i, want := range []int64{9, 7, 8} {
		if out[i].Err != nil || !out[i].Result.Allowed || out[i].Result.Remaining != want {
			t.Errorf("outcome %d: %+v", i, out[i])
		}
	}
	if !errors.Is(out[3].Err, ErrInvalidLimit) {
		t.Errorf("negative N in a batch: %+v", out[3])
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
