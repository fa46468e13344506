package ratelua

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ratelua/ratelua/luatest"
)

// engineClient is a Client that runs the scripts in luatest: EVALSHA of a
// script it has seen (by EVAL), NOSCRIPT otherwise. While down, every
// call fails without an answer, as a refused connection does. It counts
// the calls it ran.
type engineClient struct {
	mu    sync.Mutex
	e     *luatest.Engine
	down  bool
	calls int
}

func newEngineClient() *engineClient { return &engineClient{e: frozenEngine()} }

func (c *engineClient) Run(_ context.Context, call Call, reply []int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	c.calls++
	var res *luatest.Result
	var err error
	switch call.Command {
	case "EVALSHA":
		res, err = c.e.EvalSHA(call.Script, []string{call.Key}, call.Args)
	case "EVAL":
		res, err = c.e.Run(call.Script, []string{call.Key}, call.Args)
	default:
		return fmt.Errorf("%w: %s", ErrNotSupported, call.Command)
	}
	var er *luatest.ErrorReply
	if errors.As(err, &er) {
		return &ServerError{Message: er.Msg}
	}
	if err != nil {
		return err
	}
	ints, err := luatest.Ints(res.Reply)
	if err != nil || len(ints) != len(reply) {
		return fmt.Errorf("reply %v: %v", res.Reply, err)
	}
	copy(reply, ints)
	return nil
}

func (c *engineClient) setDown(down bool) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

func (c *engineClient) ran() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// recorder collects a limiter's events.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) observe(_ context.Context, e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) take() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	return out
}

// decisions takes the decision events, dropping the loads.
func (r *recorder) decisions() []Event {
	var out []Event
	for _, e := range r.take() {
		if e.Kind != KindLoad {
			out = append(out, e)
		}
	}
	return out
}

// kinds counts events by kind.
func kinds(events []Event) map[string]int {
	out := map[string]int{}
	for _, e := range events {
		out[e.Kind]++
	}
	return out
}

// manualClock is a caller clock the test moves.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// builders makes a limiter of every script with opts: the login case.
func builders(client Client, opts Options) (map[string]*Limiter, error) {
	sw, err1 := NewSlidingWindow(client, opts, Window{1, 5 * time.Second, time.Second}, Window{5, time.Hour, 10 * time.Minute})
	ar, err2 := NewAR1(client, opts, Decay{1, 2, 5 * time.Second}, Decay{5, 2, time.Hour})
	zl, err3 := NewZSetLog(client, opts, Log{1, 5 * time.Second}, Log{5, time.Hour})
	tb, err4 := NewTokenBucket(client, opts, Bucket{1, 1, 5 * time.Second}, Bucket{5, 1, 720 * time.Second})
	return map[string]*Limiter{SlidingWindow: sw, AR1: ar, ZSetLog: zl, TokenBucket: tb}, errors.Join(err1, err2, err3, err4)
}

// mixedLimiters makes a limiter of every script with opts, with limits
// that admit about half of a call every 200 ms: 3 per second and 20 per
// minute.
func mixedLimiters(client Client, opts Options) (map[string]*Limiter, error) {
	sw, err1 := NewSlidingWindow(client, opts, Window{3, time.Second, 100 * time.Millisecond}, Window{20, time.Minute, time.Second})
	ar, err2 := NewAR1(client, opts, Decay{3, 2, time.Second}, Decay{20, 1.5, 10 * time.Second})
	zl, err3 := NewZSetLog(client, opts, Log{3, time.Second}, Log{20, time.Minute})
	tb, err4 := NewTokenBucket(client, opts, Bucket{3, 3, time.Second}, Bucket{20, 1, 3 * time.Second})
	return map[string]*Limiter{SlidingWindow: sw, AR1: ar, ZSetLog: zl, TokenBucket: tb}, errors.Join(err1, err2, err3, err4)
}

// TestObserveEveryDecision: the hook sees each decision with its kind,
// names, events, deciding limit and whether it was local; the NOSCRIPT
// recovery as a load; nothing without a hook.
func TestObserveEveryDecision(t *testing.T) {
	ctx := context.Background()
	client := newEngineClient()
	clock := &manualClock{t: time.Unix(1_800_000_000, 0)}
	var rec recorder
	l, err := NewSlidingWindow(client, Options{Prefix: "obs", Clock: clock.now, Observe: rec.observe},
		Window{1, 5 * time.Second, time.Second}, Window{5, time.Hour, 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	l.Allow(ctx, "a")                                // the first call meets NOSCRIPT: a load, then allowed
	l.Allow(ctx, "a")                                // denied by the 5 s limit
	l.Peek(ctx, "a")                                 // denied
	l.AllowN(ctx, "a", 0)                            // refused in Go
	l.AllowBatch(ctx, []Request{{"b", 1}, {"a", 1}}) // allowed, denied
	l.Reset(ctx, "a")                                // not a decision
	events := rec.take()
	want := []struct {
		kind  string
		n     int64
		limit int
		local bool
	}{
		{KindLoad, 0, -1, false},
		{KindAllowed, 1, 0, false},
		{KindDenied, 1, 0, false},
		{KindDenied, 0, 0, false},
		{KindError, 0, -1, true},
		{KindAllowed, 1, 0, false},
		{KindDenied, 1, 0, false},
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
		if (e.Kind == KindError) != (e.Err != nil) {
			t.Errorf("event %d: kind %s with error %v", i, e.Kind, e.Err)
		}
	}
}

// TestDryRunDecidesAsEnforcement: call by call, a DryRun limiter admits
// everything and says exactly when an enforcing one on the same sequence
// denied, for every script; its hook says dry_run for those.
func TestDryRunDecidesAsEnforcement(t *testing.T) {
	client := newEngineClient()
	dryRunAgainstEnforcement(t, client, 2000)
}

// dryRunAgainstEnforcement replays one random sequence of Allow, AllowN
// and Peek through an enforcing and a DryRun limiter of every script on
// client (prefixes apart) and compares every answer.
func dryRunAgainstEnforcement(t *testing.T, client Client, steps int) {
	t.Helper()
	ctx := context.Background()
	clock := &manualClock{t: time.Unix(1_800_000_000, 0)}
	prefix := fmt.Sprintf("dry%d", rand.Int64())
	enforce, err := mixedLimiters(client, Options{Prefix: prefix + "-enforce", Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	dry, err := mixedLimiters(client, Options{Prefix: prefix + "-dry", Clock: clock.now, DryRun: true, Observe: rec.observe})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	denied, admitted := map[string]int{}, map[string]int{}
	for step := range steps {
		clock.advance(time.Duration(r.IntN(400)) * time.Millisecond)
		key := fmt.Sprintf("k%d", r.IntN(3))
		n := int64(r.IntN(3)) // 0 peeks
		for name, e := range enforce {
			d := dry[name]
			var want, got Result
			var errE, errD error
			if n == 0 {
				want, errE = e.Peek(ctx, key)
				got, errD = d.Peek(ctx, key)
			} else {
				want, errE = e.AllowN(ctx, key, n)
				got, errD = d.AllowN(ctx, key, n)
			}
			if errE != nil || errD != nil {
				t.Fatalf("step %d %s: %v, %v", step, name, errE, errD)
			}
			wantDry := want
			wantDry.Allowed, wantDry.DryRunDenied = true, !want.Allowed
			if got != wantDry {
				t.Fatalf("step %d %s n=%d: dry run %+v, enforcement %+v", step, name, n, got, want)
			}
			events := rec.decisions()
			wantKind := KindAllowed
			if !want.Allowed {
				wantKind = KindDryRun
				denied[name]++
			} else {
				admitted[name]++
			}
			if len(events) != 1 || events[0].Kind != wantKind || events[0].Result != got {
				t.Fatalf("step %d %s: events %+v, want one %s", step, name, events, wantKind)
			}
		}
	}
	for name := range enforce {
		if denied[name] == 0 || admitted[name] == 0 {
			t.Errorf("%s: enforcement admitted %d and denied %d: the sequence tests too little", name, admitted[name], denied[name])
		}
	}
	t.Logf("%d steps per script; enforcement admitted %v and denied %v; every one admitted under DryRun, the denials reported", steps, admitted, denied)
}

// TestDenyCacheAnswersAsTheServer: one client hammering denied keys is
// answered locally with the server's exact answers (caller clock), and
// the server runs a fraction of the calls.
func TestDenyCacheAnswersAsTheServer(t *testing.T) {
	plainClient, cachedClient := newEngineClient(), newEngineClient()
	local, agree := denyCacheAgainstServer(t, plainClient, cachedClient, "dc", 20000)
	t.Logf("engine: %d of %d decisions local, all %d equal", local, 20000*4, agree)
	plain, cached := plainClient.ran(), cachedClient.ran()
	if cached*10 > plain {
		t.Errorf("the cache let %d of %d calls through, want at most 10%%", cached, plain)
	}
}

// denyCacheAgainstServer hammers one event key per script with Allow,
// AllowN(2) now and then, and Peek, through a limiter without the cache on
// plain and one with it on cached (the same clock, the caller's), and
// requires equal answers. It returns how many were answered locally and
// compared.
func denyCacheAgainstServer(t *testing.T, plain, cached Client, prefix string, steps int) (local, compared int) {
	t.Helper()
	ctx := context.Background()
	clock := &manualClock{t: time.Unix(1_800_000_000, 0)}
	without, err := builders(plain, Options{Prefix: prefix + "-plain", Clock: clock.now})
	if err != nil {
		t.Fatal(err)
	}
	var rec recorder
	with, err := builders(cached, Options{Prefix: prefix + "-cached", Clock: clock.now, DenyCache: 100, Observe: rec.observe})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for step := range steps {
		clock.advance(time.Duration(r.IntN(20)) * time.Millisecond)
		n := int64(1)
		switch r.IntN(50) {
		case 0:
			n = 2
		case 1:
			n = 0
		}
		for name, p := range without {
			c := with[name]
			var want, got Result
			var errP, errC error
			if n == 0 {
				want, errP = p.Peek(ctx, "hammer")
				got, errC = c.Peek(ctx, "hammer")
			} else {
				want, errP = p.AllowN(ctx, "hammer", n)
				got, errC = c.AllowN(ctx, "hammer", n)
			}
			if errP != nil || errC != nil {
				t.Fatalf("step %d %s: %v, %v", step, name, errP, errC)
			}
			events := rec.decisions()
			if len(events) != 1 {
				t.Fatalf("step %d %s: %d events", step, name, len(events))
			}
			// Remaining may differ for n > 1 only (documented); here n = 2
			// is never answered locally unless the server denied 2 before.
			if got != want {
				t.Fatalf("step %d %s n=%d: cached %+v (local %v), server %+v", step, name, n, got, events[0].Local, want)
			}
			if events[0].Local {
				local++
			}
			compared++
		}
	}
	return local, compared
}

// TestDenyCacheOptions: refused with CountDenied (the server would record
// the attempts), and with a negative size; a Reset forgets the key.
func TestDenyCacheOptions(t *testing.T) {
	client := newEngineClient()
	if _, err := NewTokenBucket(client, Options{DenyCache: 10, CountDenied: true}, PerSecond(1, 1)); !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("DenyCache with CountDenied: %v", err)
	}
	if _, err := NewTokenBucket(client, Options{DenyCache: -1}, PerSecond(1, 1)); !errors.Is(err, ErrInvalidLimit) {
		t.Errorf("DenyCache -1: %v", err)
	}
	ctx := context.Background()
	clock := &manualClock{t: time.Unix(1_800_000_000, 0)}
	l, err := NewTokenBucket(client, Options{DenyCache: 10, Clock: clock.now}, Bucket{1, 1, time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	l.Allow(ctx, "k")
	if r, _ := l.Allow(ctx, "k"); r.Allowed {
		t.Fatal("second event admitted")
	}
	before := client.ran()
	if r, _ := l.Allow(ctx, "k"); r.Allowed || client.ran() != before {
		t.Fatalf("not answered locally: %+v, %d calls", r, client.ran()-before)
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
	if n := l.deny.keys.len(); n != 10 {
		t.Errorf("cache holds %d keys, want 10", n)
	}
}

// TestFallbackAdmitsTheShare: with the server down, each script admits
// exactly its limits' share (frozen clock: nothing refills), decided
// with a nil error; it enters at the first failure with FallbackAfter 0
// and leaves at the first answer, and the hook sees both switches.
func TestFallbackAdmitsTheShare(t *testing.T) {
	ctx := context.Background()
	client := newEngineClient()
	at := func() time.Time { return time.Unix(1_800_000_000, 0) }
	var rec recorder
	opts := Options{Prefix: "fb", Clock: at, Fallback: 0.5, Observe: rec.observe}
	sw, err1 := NewSlidingWindow(client, opts, Window{10, time.Minute, time.Second}, Window{100, time.Hour, time.Minute})
	zl, err2 := NewZSetLog(client, opts, Log{10, time.Minute})
	tb, err3 := NewTokenBucket(client, opts, Bucket{10, 1, time.Hour})
	ar, err4 := NewAR1(client, opts, Decay{10, 2, time.Hour})
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	client.setDown(true)
	for name, l := range map[string]*Limiter{SlidingWindow: sw, ZSetLog: zl, TokenBucket: tb, AR1: ar} {
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
		c := kinds(rec.take())
		if c[KindFallbackEnter] != 1 || c[KindFallback] != 40 {
			t.Errorf("%s: events %v", name, c)
		}
	}
	client.setDown(false)
	r, err := sw.Allow(ctx, "k")
	if err != nil || !r.Allowed {
		t.Errorf("server back: %+v, %v", r, err)
	}
	if c := kinds(rec.take()); c[KindFallbackLeave] != 1 || c[KindAllowed] != 1 {
		t.Errorf("server back: events %v", c)
	}
}

// TestFallbackOptions refuses shares out of range.
func TestFallbackOptions(t *testing.T) {
	client := newEngineClient()
	for _, o := range []Options{{Fallback: -0.5}, {Fallback: 1.5}, {Fallback: 0.0001}, {Fallback: 0.5, FallbackAfter: -1}, {Fallback: 0.5, FallbackKeys: -1}} {
		if _, err := NewTokenBucket(client, o, PerSecond(1, 1)); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("%+v: %v", o, err)
		}
	}
}

// TestFallbackEpisodes drives the fallback's state on its own clock: it
// decides only once calls have gone unanswered for After, only for slots
// that failed, probes once per After, and an answer on a failed slot ends
// it; a blip followed by answers is forgotten.
func TestFallbackEpisodes(t *testing.T) {
	f := newFallback(2*time.Second, 0, nil)
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	if local, probe := f.route(1, at(0)); local || probe {
		t.Fatal("routed before any failure")
	}
	if use, entered, _ := f.fail(1, false, at(0), at(100)); use || entered {
		t.Fatal("fell back before After")
	}
	if use, _, _ := f.fail(2, false, at(1000), at(1900)); use {
		t.Fatal("fell back before After")
	}
	use, entered, unanswered := f.fail(1, false, at(2000), at(2100))
	if !use || !entered || unanswered != 2100*time.Millisecond {
		t.Fatalf("after 2.1 s unanswered: use %v entered %v after %v", use, entered, unanswered)
	}
	if local, _ := f.route(3, at(2200)); local {
		t.Error("a slot that never failed is answered locally")
	}
	if local, probe := f.route(1, at(2200)); !local || probe {
		t.Error("a down slot asks the server before the probe is due")
	}
	if local, probe := f.route(2, at(4100)); local || !probe {
		t.Fatal("no probe after After")
	}
	if local, probe := f.route(1, at(4200)); !local || probe {
		t.Error("a second probe while one is in flight")
	}
	if use, entered, _ := f.fail(2, true, at(4100), at(4300)); !use || entered {
		t.Error("a failed probe must keep the fallback")
	}
	if left, _ := f.answer(3, false, at(4400)); left {
		t.Error("an answer on a slot that never failed ends the fallback")
	}
	if local, probe := f.route(1, at(6300)); local || !probe {
		t.Fatal("no probe After after the failed one")
	}
	left, used := f.answer(1, true, at(6400))
	if !left || used != 4300*time.Millisecond {
		t.Fatalf("answer on a down slot: left %v after %v", left, used)
	}
	if local, probe := f.route(1, at(6500)); local || probe {
		t.Error("still falling back after the server answered")
	}
	// A blip, then answers: forgotten After later.
	f.fail(5, false, at(10000), at(10100))
	f.answer(6, false, at(10200))
	if use, entered, _ := f.fail(7, false, at(13000), at(13100)); use || entered {
		t.Error("a blip 3 s ago, answered since, started the fallback")
	}
}

// TestOptionsUnderConcurrency: many goroutines through a limiter with
// every option while the server comes and goes (run with -race); the
// caches stay within their bounds, and the fallback never admits more
// than its share of a key over all the outages (a frozen clock).
func TestOptionsUnderConcurrency(t *testing.T) {
	client := newEngineClient()
	at := func() time.Time { return time.Unix(1_800_000_000, 0) }
	var mu sync.Mutex
	byKind := map[string]int{}
	admitted := 0 // by the fallback
	count := func(_ context.Context, e Event) {
		mu.Lock()
		defer mu.Unlock()
		byKind[e.Kind]++
		if e.Kind == KindFallback && e.Result.Allowed && e.N > 0 {
			admitted++ // a Peek admits nothing
		}
	}
	l, err := NewSlidingWindow(client, Options{Prefix: "conc", Clock: at, DenyCache: 4, Fallback: 0.5, FallbackKeys: 6, Observe: count},
		Window{Max: 6, Duration: time.Hour, Resolution: time.Minute})
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
					client.setDown(i%200 == 0)
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
	if l.deny.keys.len() > 4 || l.fallback.models.len() > 6 {
		t.Errorf("bounds: deny cache %d keys, fallback %d keys", l.deny.keys.len(), l.fallback.models.len())
	}
	if admitted > 6*3 {
		t.Errorf("the fallback admitted %d, more than 3 for each of 6 keys", admitted)
	}
	t.Logf("events %v; %d admitted by the fallback", byKind, admitted)
}
