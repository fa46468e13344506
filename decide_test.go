package ratelua_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
)

// batchingClient is an EngineClient that batches: RunBatch runs its calls
// in order and counts the round trips.
type batchingClient struct {
	*limitertest.EngineClient
	mu     sync.Mutex
	rounds int
}

func (c *batchingClient) RunBatch(ctx context.Context, calls []ratelua.Call, replies [][]int64) []error {
	c.mu.Lock()
	c.rounds++
	c.mu.Unlock()
	errs := make([]error, len(calls))
	for i, call := range calls {
		errs[i] = c.Run(ctx, call, replies[i])
	}
	return errs
}

func (c *batchingClient) Rounds() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rounds
}

// twin is one limiter made twice, on two engines, with one clock: a is
// asked by AllowN and Peek, b by Decide.
type twin struct {
	a, b           *ratelua.Limiter
	ca, cb         *batchingClient
	recA, recB     *limitertest.Recorder
	clock          *limitertest.ManualClock
	name           string
	local, special int // decisions made in the process; of the option's kind
}

func newTwin(t *testing.T, name string, opts ratelua.Options, clock *limitertest.ManualClock) *twin {
	t.Helper()
	tw := &twin{name: name, clock: clock, recA: &limitertest.Recorder{}, recB: &limitertest.Recorder{}}
	tw.ca = &batchingClient{EngineClient: limitertest.NewEngineClient()}
	tw.cb = &batchingClient{EngineClient: limitertest.NewEngineClient()}
	opts.Clock = clock.Now
	opts.Prefix = name
	mk := func(c ratelua.Client, rec *limitertest.Recorder) *ratelua.Limiter {
		o := opts
		o.Observe = rec.Observe
		l, err := ratelua.NewSlidingWindow(c, o, ratelua.Window{Max: 3, Duration: 2 * time.Second, Resolution: 100 * time.Millisecond}, ratelua.Window{Max: 8, Duration: 10 * time.Second, Resolution: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	tw.a, tw.b = mk(tw.ca, tw.recA), mk(tw.cb, tw.recB)
	return tw
}

// single decides n events of key by AllowN (Peek for 0) of a.
func (tw *twin) single(ctx context.Context, key string, n int64) ratelua.Outcome {
	var r ratelua.Result
	var err error
	if n == 0 {
		r, err = tw.a.Peek(ctx, key)
	} else {
		r, err = tw.a.AllowN(ctx, key, n)
	}
	return ratelua.Outcome{Result: r, Err: err}
}

// compare fails when a Decide outcome differs from the AllowN one, or the
// events the two limiters' hooks saw differ.
func (tw *twin) compare(t *testing.T, step int, single, batched ratelua.Outcome) {
	t.Helper()
	if single.Result != batched.Result || (single.Err == nil) != (batched.Err == nil) {
		t.Fatalf("%s step %d: Decide %+v (%v), AllowN %+v (%v)", tw.name, step, batched.Result, batched.Err, single.Result, single.Err)
	}
	ea, eb := tw.recA.Take(), tw.recB.Take()
	if len(ea) != len(eb) {
		t.Fatalf("%s step %d: Decide's hook saw %+v, AllowN's %+v", tw.name, step, eb, ea)
	}
	var decided *ratelua.Event
	for i := range ea {
		a, b := ea[i], eb[i]
		if a.Kind != b.Kind || a.N != b.N || a.Result != b.Result || a.Local != b.Local || (a.Err == nil) != (b.Err == nil) {
			t.Fatalf("%s step %d: Decide's event %+v, AllowN's %+v", tw.name, step, b, a)
		}
		if a.Kind != ratelua.KindLoad && a.Kind != ratelua.KindFallbackEnter && a.Kind != ratelua.KindFallbackLeave {
			decided = &eb[i]
		}
	}
	if decided == nil {
		t.Fatalf("%s step %d: no decision event", tw.name, step)
	}
	if decided.Kind != batched.Kind || decided.Local != batched.Local {
		t.Fatalf("%s step %d: Outcome says %s local %v, the event %s local %v", tw.name, step, batched.Kind, batched.Local, decided.Kind, decided.Local)
	}
	if batched.Local {
		tw.local++
	}
}

// TestDecideKeepsEveryOption: a check of Decide is decided as AllowN (or
// Peek) of its limiter decides it, option by option: the same Result and
// error, the same events seen by Observe, and the Outcome's Kind and
// Local those of the event; each option visibly acts in the run (the deny
// cache answers locally, the fallback decides, dry-run admits a denial,
// FailOpen admits without an answer).
func TestDecideKeepsEveryOption(t *testing.T) {
	ctx := context.Background()
	clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
	twins := []*twin{
		newTwin(t, "plain", ratelua.Options{}, clock),
		newTwin(t, "deny", ratelua.Options{DenyCache: 10}, clock),
		newTwin(t, "fallback", ratelua.Options{Fallback: 0.5, FallbackAfter: 0}, clock),
		newTwin(t, "dryrun", ratelua.Options{DryRun: true}, clock),
		newTwin(t, "failopen", ratelua.Options{FailOpen: true}, clock),
		newTwin(t, "counted", ratelua.Options{CountDenied: true}, clock),
	}
	rng := rand.New(rand.NewPCG(7, 34))
	for step := range 600 {
		down := step%150 >= 100 // an outage of 50 steps in every 150
		for _, tw := range twins {
			tw.ca.SetDown(down)
			tw.cb.SetDown(down)
			key := fmt.Sprintf("k%d", rng.IntN(3))
			n := int64(rng.IntN(3))
			single := tw.single(ctx, key, n)
			batched := ratelua.Decide(ctx, tw.cb, []ratelua.Check{{Limiter: tw.b, Key: key, N: n}})[0]
			tw.compare(t, step, single, batched)
			switch {
			case batched.Kind == ratelua.KindFallback,
				batched.Result.DryRunDenied,
				batched.Kind == ratelua.KindFailOpen:
				tw.special++
			}
		}
		clock.Advance(time.Duration(rng.IntN(300)) * time.Millisecond)
	}
	for _, tw := range twins {
		switch tw.name {
		case "deny":
			if tw.local == 0 {
				t.Errorf("deny: the deny cache never answered")
			}
		case "fallback", "dryrun", "failopen":
			if tw.special == 0 {
				t.Errorf("%s: the option never decided", tw.name)
			}
		}
	}
}

// TestDecideAcrossLimitersOneRoundTrip: checks of several limiters (two
// scripts, one with a deny cache and a hook) go in one round trip (one
// more for the scripts' first NOSCRIPT), and each is answered as its
// limiter's AllowN answers it in the same order, its hook seeing the
// same events (each check's own N and Result).
func TestDecideAcrossLimitersOneRoundTrip(t *testing.T) {
	ctx := context.Background()
	clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
	var rec, recA limitertest.Recorder
	events := func(r *limitertest.Recorder) []string {
		var out []string
		for _, e := range r.Decisions() {
			out = append(out, fmt.Sprintf("%s n=%d %+v local=%v", e.Kind, e.N, e.Result, e.Local))
		}
		slices.Sort(out) // a local answer is told before the round trip
		return out
	}
	make2 := func(c ratelua.Client, rec *limitertest.Recorder) (*ratelua.Limiter, *ratelua.Limiter) {
		sw, err := ratelua.NewSlidingWindow(c, ratelua.Options{Prefix: "x", Clock: clock.Now, DenyCache: 10, Observe: rec.Observe}, ratelua.Window{Max: 2, Duration: time.Second, Resolution: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		tb, err := ratelua.NewTokenBucket(c, ratelua.Options{Prefix: "x", Clock: clock.Now}, ratelua.Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return sw, tb
	}
	single := &batchingClient{EngineClient: limitertest.NewEngineClient()}
	batched := &batchingClient{EngineClient: limitertest.NewEngineClient()}
	swA, tbA := make2(single, &recA)
	swB, tbB := make2(batched, &rec)
	var seen []string
	for round := range 6 {
		checks := []ratelua.Check{{Limiter: swB, Key: "a", N: 1}, {Limiter: tbB, Key: "a", N: 2}, {Limiter: swB, Key: "b", N: 0}, {Limiter: tbB, Key: "c", N: 1}}
		before := batched.Rounds()
		out := ratelua.Decide(ctx, batched, checks)
		trips := batched.Rounds() - before
		want := 1
		if round == 0 {
			want = 2 // NOSCRIPT, then EVAL of both scripts together
		}
		if trips != want {
			t.Fatalf("round %d: %d round trips, want %d", round, trips, want)
		}
		for i, c := range checks {
			l := map[*ratelua.Limiter]*ratelua.Limiter{swB: swA, tbB: tbA}[c.Limiter]
			var r ratelua.Result
			var err error
			if c.N == 0 {
				r, err = l.Peek(ctx, c.Key)
			} else {
				r, err = l.AllowN(ctx, c.Key, c.N)
			}
			if out[i].Result != r || (out[i].Err == nil) != (err == nil) {
				t.Fatalf("round %d check %d: Decide %+v (%v), AllowN %+v (%v)", round, i, out[i].Result, out[i].Err, r, err)
			}
		}
		fromDecide, fromAllow := events(&rec), events(&recA)
		if !slices.Equal(fromDecide, fromAllow) {
			t.Fatalf("round %d: the hook saw\n%s\nfrom Decide, and\n%s\nfrom AllowN", round, strings.Join(fromDecide, "\n"), strings.Join(fromAllow, "\n"))
		}
		seen = append(seen, fromDecide...)
	}
	if k := strings.Join(seen, "\n"); !strings.Contains(k, ratelua.KindDenied+" ") || !strings.Contains(k, ratelua.KindAllowed+" ") {
		t.Errorf("the hook saw %v, want allowed and denied decisions", seen)
	}
}

// TestDecideAt: a check's At is the time of its decision, also for a
// limiter on the server's clock, exactly as a Clock reading that time:
// the window of a limiter whose server clock never moves rolls with At.
func TestDecideAt(t *testing.T) {
	ctx := context.Background()
	engine := limitertest.NewEngineClient() // its clock never moves
	clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
	w := ratelua.Window{Max: 1, Duration: time.Second, Resolution: time.Second}
	server, err := ratelua.NewSlidingWindow(engine, ratelua.Options{Prefix: "srv", DenyCache: 4}, w)
	if err != nil {
		t.Fatal(err)
	}
	clocked, err := ratelua.NewSlidingWindow(limitertest.NewEngineClient(), ratelua.Options{Prefix: "clk", Clock: clock.Now, DenyCache: 4}, w)
	if err != nil {
		t.Fatal(err)
	}
	var allowed []bool
	var prev time.Duration
	for _, d := range []time.Duration{0, 0, 400 * time.Millisecond, time.Second, time.Second + 999*time.Millisecond, 2 * time.Second} {
		at := time.Unix(1_800_000_000, 0).Add(d)
		clock.Advance(d - prev)
		prev = d
		o := ratelua.Decide(ctx, engine, []ratelua.Check{{Limiter: server, Key: "k", N: 1, At: at}})[0]
		r, err := clocked.Allow(ctx, "k")
		if o.Err != nil || err != nil || o.Result != r {
			t.Fatalf("at +%v: Decide %+v (%v), the clocked limiter %+v (%v)", d, o.Result, o.Err, r, err)
		}
		allowed = append(allowed, o.Result.Allowed)
	}
	if want := []bool{true, false, false, true, false, true}; fmt.Sprint(allowed) != fmt.Sprint(want) {
		t.Errorf("allowed %v, want %v", allowed, want)
	}
}

// TestDecideRefusesBadChecks: a nil limiter, N out of range, an At the
// scripts cannot take, a nil client and a done context each get an error
// naming what was wrong, and nothing is sent.
func TestDecideRefusesBadChecks(t *testing.T) {
	engine := limitertest.NewEngineClient()
	var rec limitertest.Recorder
	l, err := ratelua.NewTokenBucket(engine, ratelua.Options{Observe: rec.Observe}, ratelua.Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		ctx    context.Context
		client ratelua.Client
		check  ratelua.Check
		field  string
	}{
		{context.Background(), engine, ratelua.Check{Key: "k", N: 1}, "Limiter"},
		{context.Background(), engine, ratelua.Check{Limiter: l, Key: "k", N: -1}, "N"},
		{context.Background(), engine, ratelua.Check{Limiter: l, Key: "k", N: 1 << 53}, "N"},
		{context.Background(), engine, ratelua.Check{Limiter: l, Key: "k", N: 1, At: time.Unix(-5, 0)}, "At"},
		{context.Background(), nil, ratelua.Check{Limiter: l, Key: "k", N: 1}, "client"},
		{done, engine, ratelua.Check{Limiter: l, Key: "k", N: 1}, ""},
	}
	for i, c := range cases {
		o := ratelua.Decide(c.ctx, c.client, []ratelua.Check{c.check})[0]
		var le *ratelua.LimitError
		switch {
		case o.Result.Allowed || !o.Local || o.Kind != ratelua.KindError:
			t.Errorf("case %d: %+v, want a local error, denied", i, o)
		case c.field == "" && !errors.Is(o.Err, context.Canceled):
			t.Errorf("case %d: error %v, want the context's", i, o.Err)
		case c.field != "" && (!errors.As(o.Err, &le) || le.Field != c.field):
			t.Errorf("case %d: error %v, want a LimitError naming %s", i, o.Err, c.field)
		}
	}
	if n := engine.Ran(); n != 0 {
		t.Errorf("%d calls sent, want none", n)
	}
	if k := limitertest.Kinds(rec.Take()); k[ratelua.KindError] != len(cases)-1 {
		t.Errorf("the hook saw %v, want %d errors", k, len(cases)-1)
	}
}
