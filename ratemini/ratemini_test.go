package ratemini_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/ratelua/ratelua"
	ratemini "github.com/ratelua/ratelua/ratemini"
)

func start(t *testing.T) (*miniredis.Miniredis, *ratemini.Client, *ratemini.Clock) {
	t.Helper()
	m := miniredis.RunT(t)
	clock := ratemini.NewClock(m, time.Unix(1000, 0))
	c, err := ratemini.New(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return m, c, clock
}

// login builds the login case (1 per 5 s and 5 per hour) with every
// script.
func login(t *testing.T, client ratelua.Client, opts ratelua.Options) map[string]*ratelua.Limiter {
	t.Helper()
	sw, err1 := ratelua.NewSlidingWindow(client, opts, ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
	ar, err2 := ratelua.NewAR1(client, opts, ratelua.Decay{Max: 1, Factor: 2, Resolution: 5 * time.Second},
		ratelua.Decay{Max: 5, Factor: 2, Resolution: time.Hour})
	zl, err3 := ratelua.NewZSetLog(client, opts, ratelua.Log{Max: 1, Window: 5 * time.Second}, ratelua.Log{Max: 5, Window: time.Hour})
	tb, err4 := ratelua.NewTokenBucket(client, opts, ratelua.Bucket{Capacity: 1, RefillAmount: 1, RefillInterval: 5 * time.Second},
		ratelua.Bucket{Capacity: 5, RefillAmount: 1, RefillInterval: 720 * time.Second})
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return map[string]*ratelua.Limiter{ratelua.SlidingWindow: sw, ratelua.AR1: ar, ratelua.ZSetLog: zl, ratelua.TokenBucket: tb}
}

// TestLoginAsOnServers: the README's worked login case (a real Redis
// 7.0's replies) on miniredis, for every script, on miniredis's TIME as
// the clock moves and on a caller clock.
func TestLoginAsOnServers(t *testing.T) {
	// {allowed, remaining, retry_after, reset_after, limit_index} at 1000,
	// 1002 and 1005 s, then a reset at 1006 s.
	want := map[string][3][5]int64{
		ratelua.SlidingWindow: {{1, 0, 0, 3200, 1}, {0, 0, 3, 3198, 1}, {1, 0, 0, 3195, 1}},
		ratelua.ZSetLog:       {{1, 0, 0, 3600, 1}, {0, 0, 3, 3598, 1}, {1, 0, 0, 3600, 1}},
		ratelua.TokenBucket:   {{1, 0, 0, 720, 1}, {0, 0, 3, 718, 1}, {1, 0, 0, 1435, 1}},
		ratelua.AR1:           {{1, 0, 0, 35000, 1}, {0, 0, 48, 34998, 1}, {0, 0, 45, 34995, 1}},
	}
	for _, callerClock := range []bool{false, true} {
		t.Run("caller clock "+strconv.FormatBool(callerClock), func(t *testing.T) {
			m, client, clock := start(t)
			opts := ratelua.Options{Prefix: "login"}
			if callerClock {
				opts.Clock = clock.Now
			}
			limiters := login(t, client, opts)
			ctx := context.Background()
			got := map[string][]ratelua.Result{}
			for i, at := range []int64{1000, 1002, 1005} {
				clock.Advance(time.Duration(at-clock.Now().Unix()) * time.Second)
				for name, l := range limiters {
					r, err := l.Allow(ctx, "203.0.113.7")
					if err != nil {
						t.Fatalf("%s step %d: %v", name, i, err)
					}
					got[name] = append(got[name], r)
				}
			}
			for name, steps := range want {
				for i, w := range steps {
					r := got[name][i]
					if r.Allowed != (w[0] == 1) || r.Remaining != w[1] || r.RetryAfter != time.Duration(w[2])*time.Second ||
						r.ResetAfter != time.Duration(w[3])*time.Second || r.Limit != int(w[4])-1 {
						t.Errorf("%s step %d: %+v, want %v", name, i, r, w)
					}
				}
			}
			clock.Advance(time.Second)
			for name, l := range limiters {
				if err := l.Reset(ctx, "203.0.113.7"); err != nil {
					t.Fatal(err)
				}
				if m.Exists(l.Key("203.0.113.7")) {
					t.Errorf("%s: state left after Reset", name)
				}
			}
		})
	}
}

// TestTTLsFollowTheClock: a state key lives exactly its ResetAfter on the
// clock.
func TestTTLsFollowTheClock(t *testing.T) {
	m, client, clock := start(t)
	l, _ := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "ttl"}, ratelua.Bucket{Capacity: 2, RefillAmount: 1, RefillInterval: time.Minute})
	r, err := l.Allow(context.Background(), "k")
	if err != nil || r.ResetAfter != time.Minute {
		t.Fatalf("%+v %v", r, err)
	}
	clock.Advance(r.ResetAfter - time.Millisecond)
	if !m.Exists(l.Key("k")) {
		t.Fatal("state gone before its TTL")
	}
	clock.Advance(time.Millisecond)
	if m.Exists(l.Key("k")) {
		t.Fatal("state outlived its TTL")
	}
}

// TestFunctionsNotSupported: FCALL fails at once wrapping ErrNotSupported,
// and even a FailOpen limiter denies.
func TestFunctionsNotSupported(t *testing.T) {
	_, client, _ := start(t)
	ctx := context.Background()
	l, _ := ratelua.NewTokenBucket(client, ratelua.Options{Functions: true, FailOpen: true}, ratelua.PerSecond(1, 1))
	if r, err := l.Allow(ctx, "k"); r.Allowed || !errors.Is(err, ratelua.ErrNotSupported) {
		t.Errorf("Allow with Functions: %+v, %v", r, err)
	}
	for _, o := range l.AllowBatch(ctx, []ratelua.Request{{Key: "a", N: 1}, {Key: "b", N: 1}}) {
		if o.Result.Allowed || !errors.Is(o.Err, ratelua.ErrNotSupported) {
			t.Errorf("AllowBatch with Functions: %+v", o)
		}
	}
	lib, err := ratelua.ReleaseLibrary(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ratelua.LoadFunctions(ctx, client, lib); !errors.Is(err, ratelua.ErrNotSupported) {
		t.Errorf("LoadFunctions: %v", err)
	}
}

// TestResetPrefixAndLoad: ResetPrefix deletes exactly the prefix's state
// keys; Registry.Load loads every script.
func TestResetPrefixAndLoad(t *testing.T) {
	m, client, _ := start(t)
	ctx := context.Background()
	report, err := ratelua.NewRegistry().Load(ctx, client)
	if err != nil || len(report) != 1 || report[m.Addr()] != nil {
		t.Fatalf("Load: %+v %v", report, err)
	}
	l, _ := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "wipe"}, ratelua.PerSecond(1, 5))
	sibling, _ := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "wipe:admin"}, ratelua.PerSecond(1, 5))
	requests := make([]ratelua.Request, 700)
	for i := range requests {
		requests[i] = ratelua.Request{Key: strconv.Itoa(i), N: 1}
	}
	for _, o := range l.AllowBatch(ctx, requests) {
		if o.Err != nil {
			t.Fatal(o.Err)
		}
	}
	sibling.AllowBatch(ctx, requests[:3])
	m.Set("wipe:session:42", "x")
	n, err := ratelua.ResetPrefix(ctx, client, "wipe", true, nil)
	if err != nil || n != 700 {
		t.Fatalf("dry run: %d, %v", n, err)
	}
	if n, err = ratelua.ResetPrefix(ctx, client, "wipe", false, nil); err != nil || n != 700 {
		t.Fatalf("ResetPrefix: %d, %v", n, err)
	}
	if got := len(m.Keys()); got != 4 {
		t.Errorf("%d keys left, want the sibling's 3 and wipe:session:42: %v", got, m.Keys())
	}
}

type batcher interface {
	RunBatch(ctx context.Context, calls []ratelua.Call, replies [][]int64) []error
}

// TestErrors: an error reply is a *ratelua.ServerError, a reply of
// another shape a plain error, a closed client or a closed miniredis
// unavailability.
func TestErrors(t *testing.T) {
	m, client, _ := start(t)
	ctx := context.Background()
	call := func(script string) ratelua.Call {
		return ratelua.Call{Command: "EVAL", Script: script, Key: "k"}
	}
	var se *ratelua.ServerError
	if err := client.Run(ctx, call("return redis.error_reply('ERR ratelua: boom')"), make([]int64, 5)); !errors.As(err, &se) || se.Message != "ratelua: boom" {
		t.Errorf("error reply: %v", err)
	}
	for _, script := range []string{"return 'x'", "return {1, 2}", "return {1, 'a', 3, 4, 5}"} {
		if err := client.Run(ctx, call(script), make([]int64, 5)); err == nil || errors.As(err, &se) || errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("%s: %v, want a plain error", script, err)
		}
	}
	errs := client.RunBatch(ctx, []ratelua.Call{call("return {1,2,3,4,5}"), {Command: "FCALL", Script: "f", Key: "k"}},
		[][]int64{make([]int64, 5), make([]int64, 5)})
	if errs[0] != nil || !errors.Is(errs[1], ratelua.ErrNotSupported) {
		t.Errorf("batch: %v", errs)
	}

	closed, err := ratemini.New(m)
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	if err := closed.Run(ctx, call("return 1"), make([]int64, 5)); !errors.Is(err, ratelua.ErrUnavailable) {
		t.Errorf("closed client: %v", err)
	}

	open, _ := ratelua.NewTokenBucket(client, ratelua.Options{FailOpen: true}, ratelua.PerSecond(1, 1))
	m.Close()
	if r, err := open.Allow(ctx, "k"); !r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) {
		t.Errorf("miniredis closed, fail open: %+v %v", r, err)
	}
}

var _ batcher = (*ratemini.Client)(nil)

// TestLoginIsThrottled is the README's example of a user's unit test.
func TestLoginIsThrottled(t *testing.T) {
	per5s := ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second}
	perHour := ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute}

	m := miniredis.RunT(t)
	clock := ratemini.NewClock(m, time.Unix(1_700_000_000, 0))
	client, err := ratemini.New(m)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	logins, _ := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "login"}, per5s, perHour)

	ctx := context.Background()
	if r, _ := logins.Allow(ctx, "203.0.113.7"); !r.Allowed {
		t.Fatal("first attempt denied")
	}
	if r, _ := logins.Allow(ctx, "203.0.113.7"); r.Allowed || r.RetryAfter != 5*time.Second {
		t.Fatalf("second attempt: %+v", r)
	}
	clock.Advance(5 * time.Second) // TIME and TTLs move on together
	if r, _ := logins.Allow(ctx, "203.0.113.7"); !r.Allowed {
		t.Fatal("denied after the window")
	}
}
