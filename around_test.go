package ratelua_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
)

// TestObserveEveryDecision: the hook sees each decision with its kind,
// names, events, deciding limit and whether it was local; the NOSCRIPT
// recovery as a load; nothing without a hook.
func TestObserveEveryDecision(t *testing.T) {
	ctx := context.Background()
	client := limitertest.NewEngineClient()
	clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
	var rec limitertest.Recorder
	l, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "obs", Clock: clock.Now, Observe: rec.Observe}, ratelua.Window{1, 5 * time.Second, time.Second}, ratelua.Window{5, time.Hour, 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l.Allow(ctx, "a")                                        // the first call meets NOSCRIPT: a load, then allowed
	l.Allow(ctx, "a")                                        // denied by the 5 s limit
	l.Peek(ctx, "a")                                         // denied
	l.AllowN(ctx, "a", 0)                                    // refused in Go
	l.AllowBatch(ctx, []ratelua.Request{{"b", 1}, {"a", 1}}) // allowed, denied
	l.Reset(ctx, "a")                                        // not a decision
	events := rec.Take()
	want := []struct {
		kind  string
		n     int64
		limit int
		local bool
	}{
		{ratelua.KindLoad, 0, -1, false},
		{ratelua.KindAllowed, 1, 0, false},
		{ratelua.KindDenied, 1, 0, false},
		{ratelua.KindDenied, 0, 0, false},
		{ratelua.KindError, 0, -1, true},
		{ratelua.KindAllowed, 1, 0, false},
		{ratelua.KindDenied, 1, 0, false},
	}
	if len(events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(events), len(want), events)
	}
	for i, w := range want {
		e := events[i]
		if e.Kind != w.kind || e.N != w.n || e.Result.Limit != w.limit || e.Local != w.local ||
			e.Script != l.Script().String() || e.Prefix != "obs" || e.Latency < 0 {
			t.Errorf("event %d: %+v, want %+v", i, e, w)
		}
		if (e.Kind == ratelua.KindError) != (e.Err != nil) {
			t.Errorf("event %d: kind %s with error %v", i, e.Kind, e.Err)
		}
	}
}

// TestDryRunDecidesAsEnforcement: call by call, a DryRun limiter admits
// everything and says exactly when an enforcing one on the same sequence
// denied, for every script; its hook says dry_run for those.
func TestDryRunDecidesAsEnforcement(t *testing.T) {
	client := limitertest.NewEngineClient()
	limitertest.DryRunAgainstEnforcement(t, client, 2000)
}

// TestDenyCacheAnswersAsTheServer: one client hammering denied keys is
// answered locally with the server's exact answers (caller clock), and
// the server runs a fraction of the calls.
func TestDenyCacheAnswersAsTheServer(t *testing.T) {
	plainClient, cachedClient := limitertest.NewEngineClient(), limitertest.NewEngineClient()
	local, agree := limitertest.DenyCacheAgainstServer(t, plainClient, cachedClient, "dc", 20000)
	t.Logf("engine: %d of %d decisions local, all %d equal", local, 20000*4, agree)
	plain, cached := plainClient.Ran(), cachedClient.Ran()
	if cached*10 > plain {
		t.Errorf("the cache let %d of %d calls through, want at most 10%%", cached, plain)
	}
}

// TestDenyCacheOptions: refused with CountDenied (the server would record
// the attempts), and with a negative size; a Reset forgets the key.
func TestDenyCacheOptions(t *testing.T) {
	client := limitertest.NewEngineClient()
	if _, err := ratelua.NewTokenBucket(client, ratelua.Options{DenyCache: 10, CountDenied: true}, ratelua.PerSecond(1, 1)); !errors.Is(err, ratelua.ErrInvalidLimit) {
		t.Errorf("DenyCache with CountDenied: %v", err)
	}
	if _, err := ratelua.NewTokenBucket(client, ratelua.Options{DenyCache: -1}, ratelua.PerSecond(1, 1)); !errors.Is(err, ratelua.ErrInvalidLimit) {
		t.Errorf("DenyCache -1: %v", err)
	}
	ctx := context.Background()
	clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
	l, err := ratelua.NewTokenBucket(client, ratelua.Options{DenyCache: 10, Clock: clock.Now}, ratelua.Bucket{1, 1, time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l.Allow(ctx, "k")
	if r, _ := l.Allow(ctx, "k"); r.Allowed {
		t.Fatal("second event admitted")
	}
	before := client.Ran()
	if r, _ := l.Allow(ctx, "k"); r.Allowed || client.Ran() != before {
		t.Fatalf("not answered locally: %+v, %d calls", r, client.Ran()-before)
	}
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if r, _ := l.Allow(ctx, "k"); !r.Allowed {
		t.Errorf("after Reset: %+v", r)
	}
	// Bounded: 10 keys, the least recently used evicted.
	for i := range 20 {
		l.Allow(ctx, fmt.Sprint("e", i))
		l.Allow(ctx, fmt.Sprint("e", i))
	}
	// e10 to e19 are held (answered locally), e0 was evicted (asks).
	before = client.Ran()
	for i := 10; i < 20; i++ {
		l.Allow(ctx, fmt.Sprint("e", i))
	}
	if n := client.Ran() - before; n != 0 {
		t.Errorf("%d of the 10 newest denied keys asked the server, want 0", n)
	}
	l.Allow(ctx, "e0")
	if n := client.Ran() - before; n != 1 {
		t.Errorf("the evicted key asked the server %d times, want 1", n)
	}
}

// TestFallbackAdmitsTheShare: with the server down, each script admits
// exactly its limits' share (frozen clock: nothing refills), decided
// with a nil error; it enters at the first failure with FallbackAfter 0
// and leaves at the first answer, and the hook sees both switches.
func TestFallbackAdmitsTheShare(t *testing.T) {
	ctx := context.Background()
	client := limitertest.NewEngineClient()
	at := func() time.Time { return time.Unix(1_800_000_000, 0) }
	var rec limitertest.Recorder
	opts := ratelua.Options{Prefix: "fb", Clock: at, Fallback: 0.5, Observe: rec.Observe}
	sw, err1 := ratelua.NewSlidingWindow(client, opts, ratelua.Window{10, time.Minute, time.Second}, ratelua.Window{100, time.Hour, time.Minute})
	zl, err2 := ratelua.NewZSetLog(client, opts, ratelua.Log{10, time.Minute})
	tb, err3 := ratelua.NewTokenBucket(client, opts, ratelua.Bucket{10, 1, time.Hour})
	ar, err4 := ratelua.NewAR1(client, opts, ratelua.Decay{10, 2, time.Hour})
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	client.SetDown(true)
	for name, l := range map[string]*ratelua.Limiter{ratelua.SlidingWindow: sw, ratelua.ZSetLog: zl, ratelua.TokenBucket: tb, ratelua.AR1: ar} {
		admitted := 0
		for i := range 40 {
			r, err := l.Allow(ctx, "k")
			if err != nil {
				t.Fatalf("%s call %d: %v", name, i, err)
			}
			if r.Allowed {
				admitted++
			}
		}
		if admitted != 5 {
			t.Errorf("%s: %d admitted by the fallback, want 5 (half of 10)", name, admitted)
		}
		c := limitertest.Kinds(rec.Take())
		if c[ratelua.KindFallbackEnter] != 1 || c[ratelua.KindFallback] != 40 {
			t.Errorf("%s: events %v", name, c)
		}
	}
	client.SetDown(false)
	r, err := sw.Allow(ctx, "k")
	if err != nil || !r.Allowed {
		t.Errorf("server back: %+v, %v", r, err)
	}
	if c := limitertest.Kinds(rec.Take()); c[ratelua.KindFallbackLeave] != 1 || c[ratelua.KindAllowed] != 1 {
		t.Errorf("server back: events %v", c)
	}
}

// TestFallbackShareRoundsDown: a share that does not divide a limit gives
// the largest whole number of events within the share of the limit as
// written (0.3 of 10 is 3, 0.7 of 3 is 2, 0.7 of 90 is 63, not the 62 of
// a float product just below 63), for every script, with the server down
// and the clock frozen.
func TestFallbackShareRoundsDown(t *testing.T) {
	ctx := context.Background()
	at := func() time.Time { return time.Unix(1_800_000_000, 0) }
	for _, c := range []struct {
		max   int64
		share float64
		want  int
	}{
		{10, 0.3, 3}, {3, 0.7, 2}, {7, 0.5, 3}, {9, 0.999, 8}, {100, 0.29, 29}, {90, 0.7, 63},
		{50, 0.58, 29}, {1000, 0.001, 1}, {1000, 0.999, 999}, {10, 1, 10},
	} {
		client := limitertest.NewEngineClient()
		client.SetDown(true)
		opts := ratelua.Options{Prefix: "share", Clock: at, Fallback: c.share}
		sw, err1 := ratelua.NewSlidingWindow(client, opts, ratelua.Window{c.max, time.Hour, time.Minute})
		zl, err2 := ratelua.NewZSetLog(client, opts, ratelua.Log{c.max, time.Hour})
		tb, err3 := ratelua.NewTokenBucket(client, opts, ratelua.Bucket{c.max, 1, time.Hour})
		ar, err4 := ratelua.NewAR1(client, opts, ratelua.Decay{c.max, 2, time.Hour})
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatal(err)
		}
		for name, l := range map[string]*ratelua.Limiter{ratelua.SlidingWindow: sw, ratelua.ZSetLog: zl, ratelua.TokenBucket: tb, ratelua.AR1: ar} {
			admitted := 0
			for range 2*c.want + 5 {
				r, err := l.Allow(ctx, "k")
				if err != nil {
					t.Fatalf("%s, %v of %d: %v", name, c.share, c.max, err)
				}
				if r.Allowed {
					admitted++
				}
			}
			if admitted != c.want {
				t.Errorf("%s: a share of %v of %d admitted %d, want %d", name, c.share, c.max, admitted, c.want)
			}
		}
	}
}

// TestFallbackOptions refuses shares out of range.
func TestFallbackOptions(t *testing.T) {
	client := limitertest.NewEngineClient()
	for _, o := range []ratelua.Options{{Fallback: -0.5}, {Fallback: 1.5}, {Fallback: 0.0001}, {Fallback: 0.5, FallbackAfter: -1}, {Fallback: 0.5, FallbackKeys: -1}} {
		if _, err := ratelua.NewTokenBucket(client, o, ratelua.PerSecond(1, 1)); !errors.Is(err, ratelua.ErrInvalidLimit) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestOptionsUnderConcurrency: many goroutines through a limiter with
// every option while the server comes and goes (run with -race): the
// fallback never admits more than its share of a key over all the
// outages (a frozen clock). The bounds of the deny cache and the
// fallback under concurrency are their packages' tests
// (TestBoundsUnderConcurrency in internal/denycache and
// internal/fallback).
func TestOptionsUnderConcurrency(t *testing.T) {
	client := limitertest.NewEngineClient()
	at := func() time.Time { return time.Unix(1_800_000_000, 0) }
	var mu sync.Mutex
	byKind := map[string]int{}
	admitted := 0 // by the fallback
	count := func(_ context.Context, e ratelua.Event) {
		mu.Lock()
		defer mu.Unlock()
		byKind[e.Kind]++
		if e.Kind == ratelua.KindFallback && e.Result.Allowed && e.N > 0 {
			admitted++ // a Peek admits nothing
		}
	}
	l, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "conc", Clock: at, DenyCache: 4, Fallback: 0.5, FallbackKeys: 6, Observe: count}, ratelua.Window{Max: 6, Duration: time.Hour, Resolution: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 400 {
				if w == 0 && i%100 == 0 {
					client.SetDown(i%200 == 0)
				}
				key := fmt.Sprint("k", (w+i)%6)
				if i%50 == 0 {
					l.Peek(context.Background(), key)
				}
				if r, _ := l.Allow(context.Background(), key); r.DryRunDenied {
					t.Error("DryRunDenied without DryRun")
				}
			}
		}()
	}
	wg.Wait()
	if admitted > 6*3 {
		t.Errorf("the fallback admitted %d, more than 3 for each of 6 keys", admitted)
	}
	t.Logf("events %v; %d admitted by the fallback", byKind, admitted)
}
