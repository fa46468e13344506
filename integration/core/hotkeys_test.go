package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
	"github.com/ratelua/ratelua/testbench"
)

// hotLimiter is a token bucket of capacity refilled one unit an hour
// (nothing refills on its frozen clock, nor in the Lifetimes a test
// advances it by), with Options.HotKeys hk and
// opts, sending through a counting client.
func hotLimiter(t *testing.T, client ratelua.Client, prefix string, capacity int64, hk ratelua.HotKeys, opts ratelua.Options) (*ratelua.Limiter, *faultClient, *limitertest.ManualClock) {
	t.Helper()
	clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
	fc := &faultClient{Client: client}
	opts.Prefix, opts.Clock, opts.HotKeys = prefix, clock.Now, &hk
	l, err := ratelua.NewTokenBucket(fc, opts, ratelua.Bucket{Capacity: capacity, RefillAmount: 1, RefillInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return l, fc, clock
}

// hotKey is an event key of its own for t's run.
func hotKey(t *testing.T) string {
	return fmt.Sprintf("k%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
}

// hammer makes workers goroutines decide key each per times on l, and
// returns how many were admitted.
func hammer(t *testing.T, l *ratelua.Limiter, key string, workers, per int) int64 {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range per {
				r, err := l.Allow(context.Background(), key)
				if err != nil {
					errs <- err
					return
				}
				if r.Allowed {
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return admitted.Load()
}

// TestHotKeysHammeredKey: a key hammered by 8 goroutines is served from
// batches, at most 0.1 server calls per decision; every decision is
// admitted (the limit is not reached), and after Close the server's state
// is exactly the units admitted.
func TestHotKeysHammeredKey(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity, workers, per = 1_000_000, 8, 2000
		var batches atomic.Int64
		l, fc, _ := hotLimiter(t, ratelua.Rueidis(client), "hot-hammer", capacity, ratelua.HotKeys{}, ratelua.Options{
			Observe: func(_ context.Context, e ratelua.Event) {
				if e.Kind == ratelua.KindBatch && e.Local && e.Result.Allowed {
					batches.Add(1)
				}
			},
		})
		key := hotKey(t)
		admitted := hammer(t, l, key, workers, per)
		if admitted != workers*per {
			t.Fatalf("admitted %d of %d decisions under a limit of %d", admitted, workers*per, capacity)
		}
		calls := fc.sent.Load()
		if per := float64(calls) / float64(admitted); per > 0.1 {
			t.Fatalf("%d server calls for %d decisions: %.3f per decision, want at most 0.1", calls, admitted, per)
		}
		if batches.Load() < admitted*9/10 {
			t.Fatalf("Observe saw %d decisions of a batch (KindBatch, Local) of %d", batches.Load(), admitted)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := remaining(t, l, key); got != capacity-admitted {
			t.Fatalf("after Close the server has %d remaining, want %d - %d admitted = %d", got, capacity, admitted, capacity-admitted)
		}
	})
}

// TestHotKeysColdKey: a key below Rate makes exactly one call per
// decision, as without HotKeys.
func TestHotKeysColdKey(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		l, fc, clock := hotLimiter(t, ratelua.Rueidis(client), "hot-cold", 1000, ratelua.HotKeys{Rate: 50}, ratelua.Options{})
		key := hotKey(t)
		// A peek first: the script loaded (a NOSCRIPT answered) before
		// the calls are counted.
		remaining(t, l, key)
		sent := fc.sent.Load()
		const decisions = 40
		for i := range decisions {
			r, err := l.Allow(context.Background(), key)
			if err != nil || !r.Allowed {
				t.Fatalf("decision %d: %+v, %v", i, r, err)
			}
			// 10 per second: a fifth of Rate.
			clock.Advance(100 * time.Millisecond)
		}
		if got := fc.sent.Load() - sent; got != decisions {
			t.Fatalf("%d server calls for %d decisions of a cold key, want one each", got, decisions)
		}
	})
}

// TestHotKeysCloseGivesBack: Close settles the open batch with what it
// admitted: the server's Remaining rises by exactly the batch's unused
// units, to the capacity less the admissions; decisions after Close take
// the ordinary path.
func TestHotKeysCloseGivesBack(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity = 10_000
		var log eventLog
		l, fc, _ := hotLimiter(t, ratelua.Rueidis(client), "hot-close", capacity, ratelua.HotKeys{MaxBatch: 500}, ratelua.Options{Observe: log.Observe})
		key := hotKey(t)
		const decisions = 777
		for i := range decisions {
			if r, err := l.Allow(context.Background(), key); err != nil || !r.Allowed {
				t.Fatalf("decision %d: %+v, %v", i, r, err)
			}
		}
		// The open batch's unused units: the last reserve's, less its
		// KindBatch decisions (the earlier batches were used up on the
		// frozen clock).
		var unused int64
		for _, e := range log.take() {
			switch {
			case e.Kind == ratelua.KindReserve && e.Result.Allowed:
				unused = e.N
			case e.Kind == ratelua.KindBatch:
				unused--
			}
		}
		before := remaining(t, l, key)
		if unused < 1 || before != capacity-decisions-unused {
			t.Fatalf("before Close the server has %d remaining, want %d - %d admitted - %d held unused", before, capacity, decisions, unused)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		var settled []ratelua.Event
		for _, e := range log.take() {
			if e.Kind == ratelua.KindSettle {
				settled = append(settled, e)
			}
		}
		if len(settled) != 1 || settled[0].Err != nil {
			t.Fatalf("Close made the settles %+v, want one, of the open batch", settled)
		}
		if after := remaining(t, l, key); after != capacity-decisions {
			t.Fatalf("after Close the server has %d remaining (%d before), want %d", after, before, capacity-decisions)
		}
		sent := fc.sent.Load()
		for range 5 {
			if _, err := l.Allow(context.Background(), key); err != nil {
				t.Fatal(err)
			}
		}
		if got := fc.sent.Load() - sent; got != 5 {
			t.Fatalf("5 decisions after Close made %d calls, want 5 (the ordinary path)", got)
		}
		if after := remaining(t, l, key); after != capacity-decisions-5 {
			t.Fatalf("after 5 more decisions the server has %d remaining, want %d", after, capacity-decisions-5)
		}
	})
}

// TestHotKeysExhaustion: one goroutine takes a limit of 1,000 to the end
// on a hot key: exactly 1,000 are admitted, none denied before the last
// unit (the batches shrink toward 1 as Remaining falls: each reserve is at
// most the last reply's Remaining / 2 + 1, and a reserve denied goes the
// ordinary path), and the server ends at 0.
func TestHotKeysExhaustion(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity = 1000
		var mu sync.Mutex
		var reserves []ratelua.Event
		l, _, _ := hotLimiter(t, ratelua.Rueidis(client), "hot-exhaust", capacity, ratelua.HotKeys{MaxBatch: 200}, ratelua.Options{
			Observe: func(_ context.Context, e ratelua.Event) {
				if e.Kind == ratelua.KindReserve {
					mu.Lock()
					reserves = append(reserves, e)
					mu.Unlock()
				}
			},
		})
		key := hotKey(t)
		for i := range capacity {
			if r, err := l.Allow(context.Background(), key); err != nil || !r.Allowed {
				t.Fatalf("decision %d of a limit of %d denied: %+v, %v", i, capacity, r, err)
			}
		}
		for range 3 {
			if r, err := l.Allow(context.Background(), key); err != nil || r.Allowed {
				t.Fatalf("a decision past the limit: %+v, %v", r, err)
			}
		}
		if got := remaining(t, l, key); got != 0 {
			t.Fatalf("the server has %d remaining after %d admissions of %d", got, capacity, capacity)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(reserves) < 3 {
			t.Fatalf("%d reserves: the key never went hot", len(reserves))
		}
		left := int64(-1)
		big := false
		for _, e := range reserves {
			if left >= 0 && e.N > left/2+1 {
				t.Fatalf("a reserve of %d after a reply of %d remaining (at most %d)", e.N, left, left/2+1)
			}
			if e.N >= 100 {
				big = true
			}
			if e.Result.Allowed {
				left = e.Result.Remaining
			}
		}
		if !big {
			t.Fatalf("no batch reached 100 units: %v", reserves)
		}
		if last := reserves[len(reserves)-1]; last.N > 3 {
			t.Fatalf("the last reserve was of %d units: batches did not shrink toward 1", last.N)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestHotKeysConcurrentExhaustion: 8 goroutines race for a limit of
// 3,000: never more admissions than the limit, and after Close the
// server's state is exactly the admissions (no unit lost or admitted
// twice).
func TestHotKeysConcurrentExhaustion(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity = 3000
		l, _, _ := hotLimiter(t, ratelua.Rueidis(client), "hot-race", capacity, ratelua.HotKeys{}, ratelua.Options{})
		key := hotKey(t)
		admitted := hammer(t, l, key, 8, 500)
		if admitted > capacity {
			t.Fatalf("%d admitted under a limit of %d", admitted, capacity)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := remaining(t, l, key); got != capacity-admitted {
			t.Fatalf("after Close the server has %d remaining, want %d - %d = %d", got, capacity, admitted, capacity-admitted)
		}
		if admitted < capacity {
			// Every batch given back: what is left is admitted.
			more := hammer(t, l, key, 1, int(capacity-admitted)+5)
			if admitted+more != capacity {
				t.Fatalf("%d admitted, then %d more: want %d in all", admitted, more, capacity)
			}
		}
	})
}

// TestHotKeysRefused: HotKeys is refused at construction, with an error
// naming why, for scripts without reserve and settle and for versions
// before 7, and for fields out of range.
func TestHotKeysRefused(t *testing.T) {
	client := limitertest.NewEngineClient()
	hk := &ratelua.HotKeys{}
	opts := ratelua.Options{HotKeys: hk}
	_, err := ratelua.NewAR1(client, opts, ratelua.Decay{Max: 10, Resolution: time.Second, Factor: 2})
	if !errors.Is(err, ratelua.ErrNotSupported) || !strings.Contains(err.Error(), "HotKeys") {
		t.Errorf("ar1: %v", err)
	}
	_, err = ratelua.NewFixedWindow(client, opts, ratelua.Fixed{Max: 10, Window: time.Minute})
	if !errors.Is(err, ratelua.ErrNotSupported) {
		t.Errorf("fixed_window: %v", err)
	}
	_, err = ratelua.NewConcurrency(client, opts, ratelua.Slots{Max: 10, Lease: time.Minute})
	if !errors.Is(err, ratelua.ErrNotSupported) {
		t.Errorf("concurrency: %v", err)
	}
	bucket := ratelua.Bucket{Capacity: 100, RefillAmount: 100, RefillInterval: time.Minute}
	_, err = ratelua.NewTokenBucket(client, ratelua.Options{HotKeys: hk, Version: 6}, bucket)
	var le *ratelua.LimitError
	if !errors.As(err, &le) || le.Field != "HotKeys" || !strings.Contains(err.Error(), "version 7") {
		t.Errorf("token_bucket v6: %v", err)
	}
	for _, c := range []struct {
		field string
		hk    ratelua.HotKeys
	}{
		{"HotKeys.Rate", ratelua.HotKeys{Rate: -1}},
		{"HotKeys.Lifetime", ratelua.HotKeys{Lifetime: -time.Second}},
		{"HotKeys.Lifetime", ratelua.HotKeys{Lifetime: 7 * time.Second}}, // the bucket fills in a minute: at most 6 s
		{"HotKeys.MaxBatch", ratelua.HotKeys{MaxBatch: -1}},
		{"HotKeys.Keys", ratelua.HotKeys{Keys: -1}},
	} {
		_, err := ratelua.NewTokenBucket(client, ratelua.Options{HotKeys: &c.hk}, bucket)
		if !errors.As(err, &le) || le.Field != c.field {
			t.Errorf("%+v: %v, want a *LimitError of %s", c.hk, err, c.field)
		}
	}
	if _, err := ratelua.NewTokenBucket(client, ratelua.Options{HotKeys: &ratelua.HotKeys{Lifetime: 6 * time.Second}}, bucket); err != nil {
		t.Errorf("a Lifetime of a tenth of the window: %v", err)
	}
	if _, err := ratelua.NewZSetLog(client, opts, ratelua.Log{Max: 10, Window: time.Minute}); err != nil {
		t.Errorf("zset_log: %v", err)
	}
}

// eventLog keeps the events an Observe hook sees.
type eventLog struct {
	mu     sync.Mutex
	events []ratelua.Event
}

func (e *eventLog) Observe(_ context.Context, ev ratelua.Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

// take returns the events seen since the last take.
func (e *eventLog) take() []ratelua.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.events
	e.events = nil
	return out
}

// kinds is how many of events are of kind.
func kinds(events []ratelua.Event, kind string) int {
	n := 0
	for _, e := range events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// TestHotKeysBatchExpires: a batch admits nothing once Lifetime has
// passed on the limiter's Clock: the next decision settles it with the
// units it admitted (KindSettle, N the used units) before it reserves
// another; Close then leaves the server at exactly the admissions.
func TestHotKeysBatchExpires(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity = 100_000
		var log eventLog
		l, _, clock := hotLimiter(t, ratelua.Rueidis(client), "hot-expire", capacity, ratelua.HotKeys{}, ratelua.Options{Observe: log.Observe})
		key := hotKey(t)
		const first = 30
		for range first {
			if r, err := l.Allow(context.Background(), key); err != nil || !r.Allowed {
				t.Fatal(r, err)
			}
		}
		// The last batch's units admitted (on the frozen clock a batch is
		// replaced only once used up): its KindBatch decisions, the one
		// that reserved it among them.
		var reserved, used int64
		for _, e := range log.take() {
			switch {
			case e.Kind == ratelua.KindReserve && e.Result.Allowed:
				reserved, used = e.N, 0
			case e.Kind == ratelua.KindBatch:
				used++
			}
		}
		if reserved == 0 || used >= reserved {
			t.Fatalf("%d decisions left no batch with units: the last reserved %d, used %d", first, reserved, used)
		}
		clock.Advance(ratelua.DefaultHotLifetime)
		if r, err := l.Allow(context.Background(), key); err != nil || !r.Allowed {
			t.Fatal(r, err)
		}
		events := log.take()
		if len(events) < 2 || events[0].Kind != ratelua.KindSettle || events[0].N != used || events[1].Kind != ratelua.KindReserve {
			t.Fatalf("the decision after the batch's Lifetime saw %+v, want a settle of the %d units used (of %d), then a reserve", events, used, reserved)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := remaining(t, l, key); got != capacity-first-1 {
			t.Fatalf("after Close the server has %d remaining, want %d", got, capacity-first-1)
		}
	})
}

// TestHotKeysIdleBatchGivenBack: without a Clock, a batch whose key goes
// quiet is given back when its Lifetime ends (a timer): the server's
// state becomes the admissions without another decision or Close.
func TestHotKeysIdleBatchGivenBack(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity = 1_000_000
		settled := make(chan ratelua.Event, 1)
		l, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "hot-idle", HotKeys: &ratelua.HotKeys{},
			Observe: func(_ context.Context, e ratelua.Event) {
				if e.Kind == ratelua.KindSettle {
					select {
					case settled <- e:
					default: // one pending is enough to wake the test
					}
				}
			}},
			// One unit an hour: nothing refills within the test.
			ratelua.Bucket{Capacity: capacity, RefillAmount: 1, RefillInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		key := hotKey(t)
		admitted := hammer(t, l, key, 1, 200)
		if admitted != 200 {
			t.Fatalf("%d of 200 admitted", admitted)
		}
		// Wait for the timer's settle (an event, not a time), unless the
		// last batch was used up (nothing to give back).
		var last ratelua.Event
		for remaining(t, l, key) != capacity-admitted {
			select {
			case last = <-settled:
			case <-time.After(time.Minute):
				t.Fatalf("no give-back brought the server to %d remaining within a minute (last settle %+v, remaining %d)", capacity-admitted, last, remaining(t, l, key))
			}
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestHotKeysSeveralLimits: a batch fits every limit: with limits of
// 1,000,000 and 300 units, one hot key is admitted exactly 300 times.
func TestHotKeysSeveralLimits(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
		l, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "hot-several", Clock: clock.Now, HotKeys: &ratelua.HotKeys{}},
			ratelua.Bucket{Capacity: 1_000_000, RefillAmount: 1_000_000, RefillInterval: time.Hour},
			ratelua.Bucket{Capacity: 300, RefillAmount: 300, RefillInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		key := hotKey(t)
		if admitted := hammer(t, l, key, 1, 500); admitted != 300 {
			t.Fatalf("%d admitted under limits of 1,000,000 and 300", admitted)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := remaining(t, l, key); got != 0 {
			t.Fatalf("the server has %d remaining", got)
		}
	})
}

// TestHotKeysZSetLog: the leases work for any script that reserves: a
// log of 2,000 hammered by 8 goroutines admits at most 2,000, and after
// Close exactly the admissions are recorded.
func TestHotKeysZSetLog(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
		l, err := ratelua.NewZSetLog(ratelua.Rueidis(client), ratelua.Options{Prefix: "hot-log", Clock: clock.Now, HotKeys: &ratelua.HotKeys{}},
			ratelua.Log{Max: 2000, Window: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		key := hotKey(t)
		admitted := hammer(t, l, key, 8, 400)
		if admitted > 2000 {
			t.Fatalf("%d admitted under a limit of 2,000", admitted)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := remaining(t, l, key); got != 2000-admitted {
			t.Fatalf("after Close the log has %d remaining, want 2,000 - %d", got, admitted)
		}
	})
}

// TestHotKeysDryRun: under DryRun every decision is admitted, and exactly
// the limit's units are admitted without DryRunDenied: a batch is made
// only of a reserve the limits admitted.
func TestHotKeysDryRun(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		l, _, _ := hotLimiter(t, ratelua.Rueidis(client), "hot-dry", 500, ratelua.HotKeys{}, ratelua.Options{DryRun: true})
		key := hotKey(t)
		enforced := 0
		for i := range 1000 {
			r, err := l.Allow(context.Background(), key)
			if err != nil || !r.Allowed {
				t.Fatalf("decision %d under DryRun: %+v, %v", i, r, err)
			}
			if !r.DryRunDenied {
				enforced++
			}
		}
		if enforced != 500 {
			t.Fatalf("%d of 1,000 decisions admitted without DryRunDenied under a limit of 500", enforced)
		}
	})
}

// TestHotKeysDenyCache: with the deny cache, a hot key is still admitted
// exactly up to its limit and then denied.
func TestHotKeysDenyCache(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		l, _, _ := hotLimiter(t, ratelua.Rueidis(client), "hot-deny", 500, ratelua.HotKeys{}, ratelua.Options{DenyCache: 100})
		key := hotKey(t)
		if admitted := hammer(t, l, key, 1, 1000); admitted != 500 {
			t.Fatalf("%d admitted under a limit of 500", admitted)
		}
	})
}

// TestHotKeysFallback: while the server is down, a hot key's decisions
// are the fallback's, never a batch made of the fallback's admission;
// once the server answers again, the key leases again.
func TestHotKeysFallback(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		var log eventLog
		l, fc, clock := hotLimiter(t, ratelua.Rueidis(client), "hot-fallback", 100_000, ratelua.HotKeys{}, ratelua.Options{Fallback: 0.5, Observe: log.Observe})
		key := hotKey(t)
		fc.down.Store(true)
		for i := range 300 {
			if r, err := l.Allow(context.Background(), key); err != nil || !r.Allowed {
				t.Fatalf("decision %d in an outage: %+v, %v", i, r, err)
			}
		}
		events := log.take()
		if n := kinds(events, ratelua.KindBatch); n != 0 {
			t.Fatalf("%d decisions in an outage were admitted from a batch", n)
		}
		if n := kinds(events, ratelua.KindFallback); n < 290 {
			t.Fatalf("%d of 300 decisions in an outage were the fallback's", n)
		}
		fc.down.Store(false)
		// The key went the ordinary path for a Lifetime.
		clock.Advance(ratelua.DefaultHotLifetime)
		for range 300 {
			if _, err := l.Allow(context.Background(), key); err != nil {
				t.Fatal(err)
			}
		}
		if n := kinds(log.take(), ratelua.KindBatch); n == 0 {
			t.Fatal("no batch once the server answered again")
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestHotKeysFailOpen: while the server is down, a hot key's batch
// admits its units already debited, and then every decision fails open
// with ErrUnavailable: none comes from a batch it could not reserve.
func TestHotKeysFailOpen(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		var log eventLog
		l, fc, _ := hotLimiter(t, ratelua.Rueidis(client), "hot-failopen", 100_000, ratelua.HotKeys{MaxBatch: 50}, ratelua.Options{FailOpen: true, Observe: log.Observe})
		key := hotKey(t)
		for range 120 {
			if r, err := l.Allow(context.Background(), key); err != nil || !r.Allowed {
				t.Fatal(r, err)
			}
		}
		log.take()
		fc.down.Store(true)
		unavailable := 0
		for i := range 200 {
			r, err := l.Allow(context.Background(), key)
			switch {
			case !r.Allowed:
				t.Fatalf("decision %d in an outage under FailOpen: %+v, %v", i, r, err)
			case errors.Is(err, ratelua.ErrUnavailable):
				unavailable++
			case err != nil:
				t.Fatal(err)
			}
		}
		local := kinds(log.take(), ratelua.KindBatch)
		if local > 50 || local+unavailable != 200 {
			t.Fatalf("in an outage: %d from the batch (at most its 50), %d failed open, of 200", local, unavailable)
		}
		fc.down.Store(false)
	})
}

// TestHotKeysEvicted: with Keys 2, a third hot key lets the least
// recently used go, and its batch is given back: after Close every key's
// state is exactly its admissions.
func TestHotKeysEvicted(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity = 100_000
		l, _, _ := hotLimiter(t, ratelua.Rueidis(client), "hot-evict", capacity, ratelua.HotKeys{Keys: 2}, ratelua.Options{})
		base := hotKey(t)
		keys := []string{base + "a", base + "b", base + "c", base + "a"}
		admitted := map[string]int64{}
		for _, k := range keys {
			admitted[k] += hammer(t, l, k, 1, 77)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		for k, n := range admitted {
			if got := remaining(t, l, k); got != capacity-n {
				t.Fatalf("%s: %d remaining after %d admissions", k, got, n)
			}
		}
	})
}

// TestHotKeysReset: Reset drops the key's batch with its state: the
// decisions after it are debited afresh, and Close gives back only the
// new batch.
func TestHotKeysReset(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity = 100_000
		l, _, _ := hotLimiter(t, ratelua.Rueidis(client), "hot-reset", capacity, ratelua.HotKeys{}, ratelua.Options{})
		key := hotKey(t)
		hammer(t, l, key, 1, 100)
		if err := l.Reset(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		if got := remaining(t, l, key); got != capacity {
			t.Fatalf("after Reset %d remaining", got)
		}
		after := hammer(t, l, key, 1, 60)
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := remaining(t, l, key); got != capacity-after {
			t.Fatalf("after Close %d remaining, want %d - %d", got, capacity, after)
		}
	})
}

// TestHotKeysHammeredKeyCluster: on the six-node cluster, a key hammered
// by 8 goroutines on the server's clock makes at most 0.1 calls per
// decision, and after Close the server's state is exactly the
// admissions.
func TestHotKeysHammeredKeyCluster(t *testing.T) {
	onCluster(t, func(t *testing.T, client rueidis.Client, _ *testbench.Cluster) {
		const capacity = 1_000_000
		fc := &faultClient{Client: ratelua.Rueidis(client)}
		l, err := ratelua.NewTokenBucket(fc, ratelua.Options{Prefix: "hot-cluster", HotKeys: &ratelua.HotKeys{}},
			// One unit an hour: nothing refills within the test.
			ratelua.Bucket{Capacity: capacity, RefillAmount: 1, RefillInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		key := hotKey(t)
		admitted := hammer(t, l, key, 8, 2000)
		if admitted != 16000 {
			t.Fatalf("%d of 16000 admitted", admitted)
		}
		if per := float64(fc.sent.Load()) / float64(admitted); per > 0.1 {
			t.Fatalf("%d calls for %d decisions: %.3f per decision", fc.sent.Load(), admitted, per)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := remaining(t, l, key); got != capacity-admitted {
			t.Fatalf("after Close %d remaining, want %d", got, capacity-admitted)
		}
	})
}

// TestHotKeysReserveDeniedDecidesExactly: another process takes the
// limit down to 2 units behind a hot key's back; the key's next batch,
// sized from its own stale reply, is denied, and the request is decided
// on the ordinary path all the same: the key is admitted exactly its
// batch's unused units and the 2 left, and denied only once the server
// has none.
func TestHotKeysReserveDeniedDecidesExactly(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity = 10_000
		var log eventLog
		hot, _, clock := hotLimiter(t, ratelua.Rueidis(client), "hot-stale", capacity, ratelua.HotKeys{MaxBatch: 100}, ratelua.Options{Observe: log.Observe})
		other, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "hot-stale", Clock: clock.Now},
			ratelua.Bucket{Capacity: capacity, RefillAmount: 1, RefillInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		key := hotKey(t)
		hammer(t, hot, key, 1, 150)
		var unused int64
		for _, e := range log.take() {
			switch {
			case e.Kind == ratelua.KindReserve && e.Result.Allowed:
				unused = e.N
			case e.Kind == ratelua.KindBatch:
				unused--
			}
		}
		left := remaining(t, other, key)
		if r, err := other.AllowN(context.Background(), key, left-2); err != nil || !r.Allowed || r.Remaining != 2 {
			t.Fatalf("the other process's AllowN(%d): %+v, %v", left-2, r, err)
		}
		admitted := int64(0)
		for i := 0; ; i++ {
			r, err := hot.Allow(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if !r.Allowed {
				if got := remaining(t, other, key); got != 0 {
					t.Fatalf("decision %d denied while the server has %d", i, got)
				}
				break
			}
			admitted++
		}
		if admitted != unused+2 {
			t.Fatalf("admitted %d: want the batch's %d unused and the 2 left", admitted, unused)
		}
		denied := 0
		for _, e := range log.take() {
			if e.Kind == ratelua.KindReserve && !e.Result.Allowed {
				denied++
			}
		}
		if denied == 0 {
			t.Fatal("no reserve was denied: the test did not reach its case")
		}
	})
}

// TestHotKeysCooledKeyGivesBack: a hot key whose batch's Lifetime passed
// and that has gone cold since gives the batch back at its next decision,
// which then goes the ordinary path: the server's state is exactly the
// admissions without Close.
func TestHotKeysCooledKeyGivesBack(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity = 100_000
		var log eventLog
		l, fc, clock := hotLimiter(t, ratelua.Rueidis(client), "hot-cooled", capacity, ratelua.HotKeys{}, ratelua.Options{Observe: log.Observe})
		key := hotKey(t)
		admitted := hammer(t, l, key, 1, 40)
		if kinds(log.take(), ratelua.KindBatch) == 0 {
			t.Fatal("40 decisions on a frozen clock made no batch")
		}
		if got := remaining(t, l, key); got >= capacity-admitted {
			t.Fatalf("%d remaining after %d admissions: no batch holds units", got, admitted)
		}
		// Ten Lifetimes of silence: the key is cold.
		clock.Advance(10 * ratelua.DefaultHotLifetime)
		sent := fc.sent.Load()
		if r, err := l.Allow(context.Background(), key); err != nil || !r.Allowed {
			t.Fatal(r, err)
		}
		events := log.take()
		if kinds(events, ratelua.KindSettle) != 1 || kinds(events, ratelua.KindReserve) != 0 || fc.sent.Load()-sent != 2 {
			t.Fatalf("the cold decision saw %+v in %d calls, want the batch's settle and one ordinary call", events, fc.sent.Load()-sent)
		}
		if got := remaining(t, l, key); got != capacity-admitted-1 {
			t.Fatalf("%d remaining, want %d", got, capacity-admitted-1)
		}
	})
}

// TestHotKeysSpentKeyHoldsItsDenial: once the server denies a hot key,
// the process denies it locally for a Lifetime, so that a spent limit
// costs one call per Lifetime and not one per decision (issue 32: at
// most 0.1 calls per decision, the limit spent or not); it never admits
// more than the limit, and asks the server again after the Lifetime, or
// at once after a Reset.
func TestHotKeysSpentKeyHoldsItsDenial(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		const capacity, workers, per = 500, 8, 400
		var held atomic.Int64
		l, fc, clock := hotLimiter(t, ratelua.Rueidis(client), "hot-held", capacity, ratelua.HotKeys{Lifetime: 100 * time.Millisecond}, ratelua.Options{
			Observe: func(_ context.Context, e ratelua.Event) {
				if e.Kind == ratelua.KindDenied && e.Local {
					held.Add(1)
				}
			},
		})
		key := hotKey(t)
		admitted := hammer(t, l, key, workers, per)
		if admitted != capacity {
			t.Fatalf("admitted %d of %d decisions under a limit of %d on a frozen clock, want exactly the limit", admitted, workers*per, capacity)
		}
		calls := fc.sent.Load()
		if r := float64(calls) / float64(workers*per); r > 0.1 {
			t.Fatalf("%d server calls for %d decisions, the limit spent: %.3f per decision, want at most 0.1", calls, workers*per, r)
		}
		if held.Load() == 0 {
			t.Fatal("Observe saw no denial held in the process (KindDenied, Local)")
		}
		// Within the Lifetime: held, no call.
		before := fc.sent.Load()
		r, err := l.Allow(context.Background(), key)
		if err != nil || r.Allowed || r.RetryAfter <= 0 {
			t.Fatalf("a decision of a spent hot key: %+v, %v", r, err)
		}
		if r.ResetAfter < r.RetryAfter {
			t.Fatalf("a held denial resets (%v) before it may be retried (%v)", r.ResetAfter, r.RetryAfter)
		}
		if fc.sent.Load() != before {
			t.Fatal("a held denial made a server call")
		}
		// After it: the server is asked again (and denies: nothing refilled).
		clock.Advance(101 * time.Millisecond)
		if r, err := l.Allow(context.Background(), key); err != nil || r.Allowed {
			t.Fatalf("after the Lifetime: %+v, %v", r, err)
		}
		if fc.sent.Load() == before {
			t.Fatal("the denial was held past its Lifetime: no server call")
		}
		// A Reset drops the held denial with the key's state.
		if err := l.Reset(context.Background(), key); err != nil {
			t.Fatal(err)
		}
		if r, err := l.Allow(context.Background(), key); err != nil || !r.Allowed {
			t.Fatalf("after a Reset: %+v, %v", r, err)
		}
		if err := l.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
