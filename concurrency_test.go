package ratelua_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
)

// newLogins is "2 concurrent logins per account" on the embedded engine,
// leases of 30 s by a caller clock the test moves.
func newLogins(t *testing.T, opts ratelua.Options) (*ratelua.Semaphore, *limitertest.EngineClient, *limitertest.ManualClock) {
	t.Helper()
	client := limitertest.NewEngineClient()
	clock := limitertest.NewManualClock(time.Unix(1_600_000_000, 0))
	opts.Clock = clock.Now
	s, err := ratelua.NewConcurrency(client, opts, ratelua.Slots{Max: 2, Lease: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s, client, clock
}

func TestSemaphoreLogins(t *testing.T) {
	ctx := context.Background()
	logins, _, clock := newLogins(t, ratelua.Options{Prefix: "login"})
	a, r, err := logins.Acquire(ctx, "account:42")
	if err != nil || a == nil || !r.Allowed || r.Remaining != 1 || r.ResetAfter != 30*time.Second || r.Limit != 0 {
		t.Fatalf("first: %v %+v %v", a, r, err)
	}
	clock.Advance(10 * time.Second)
	b, r, err := logins.Acquire(ctx, "account:42")
	if err != nil || b == nil || r.Remaining != 0 || b.ID() == a.ID() {
		t.Fatalf("second: %v %+v %v", b, r, err)
	}
	if other, r, _ := logins.Acquire(ctx, "account:7"); other == nil || r.Remaining != 1 {
		t.Fatalf("another account: %+v", r)
	}
	clock.Advance(5 * time.Second)
	c, r, err := logins.Acquire(ctx, "account:42")
	if err != nil || c != nil || r.Allowed || r.RetryAfter != 15*time.Second || r.ResetAfter != 25*time.Second {
		t.Fatalf("third: %v %+v %v, want denied until a's lease ends in 15 s", c, r, err)
	}
	if r, err := logins.Peek(ctx, "account:42"); err != nil || r.Allowed || r.Remaining != 0 {
		t.Fatalf("peek: %+v %v", r, err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); err != nil {
		t.Errorf("a second release: %v", err)
	}
	c, r, err = logins.Acquire(ctx, "account:42")
	if err != nil || c == nil || r.Remaining != 0 {
		t.Fatalf("after a release: %v %+v %v", c, r, err)
	}
	if err := a.Renew(ctx); !errors.Is(err, ratelua.ErrLeaseLost) {
		t.Errorf("renewing a released lease: %v", err)
	}
	// Three slots at once are never granted; two are once both leases end.
	if l, r, _ := logins.AcquireN(ctx, "account:42", 3); l != nil || r.RetryAfter != ratelua.Never {
		t.Errorf("3 of 2 slots: %+v", r)
	}
	if _, _, err := logins.AcquireN(ctx, "account:42", 0); !errors.Is(err, ratelua.ErrInvalidLimit) {
		t.Errorf("0 slots: %v", err)
	}
	b.Release(ctx)
	c.Release(ctx)
	two, r, err := logins.AcquireN(ctx, "account:42", 2)
	if err != nil || two == nil || two.Slots() != 2 || r.Remaining != 0 {
		t.Fatalf("2 slots: %v %+v %v", two, r, err)
	}
	if err := two.Renew(ctx); err != nil {
		t.Errorf("renewing 2 slots: %v", err)
	}
	if err := two.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := logins.Peek(ctx, "account:42"); !r.Allowed || r.Remaining != 2 {
		t.Errorf("all released: %+v", r)
	}
}

// TestLeaseDeadline: a lease not renewed is lost at its local deadline,
// and then Renew and Release send nothing (the key may have vanished and
// its ids may be handed out again); a renewal moves the deadline.
func TestLeaseDeadline(t *testing.T) {
	ctx := context.Background()
	var rec limitertest.Recorder
	logins, client, clock := newLogins(t, ratelua.Options{Observe: rec.Observe})
	a, _, err := logins.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	// The script reads now in ms: the deadline is a millisecond short.
	if want := start.Add(30*time.Second - time.Millisecond); !a.Deadline().Equal(want) {
		t.Errorf("deadline %v, want %v", a.Deadline(), want)
	}
	clock.Advance(20 * time.Second)
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if want := start.Add(50*time.Second - time.Millisecond); !a.Deadline().Equal(want) {
		t.Errorf("deadline after a renewal %v, want %v", a.Deadline(), want)
	}
	clock.Advance(30 * time.Second)
	select {
	case <-a.Lost():
		t.Fatal("lost before anyone looked, with a Clock")
	default:
	}
	calls := client.Ran()
	if err := a.Renew(ctx); !errors.Is(err, ratelua.ErrLeaseLost) {
		t.Fatalf("renew after the deadline: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, ratelua.ErrLeaseLost) {
		t.Errorf("release after the deadline: %v", err)
	}
	if client.Ran() != calls {
		t.Errorf("%d calls sent after the deadline", client.Ran()-calls)
	}
	select {
	case <-a.Lost():
	default:
		t.Error("Lost not closed")
	}
	if k := limitertest.Kinds(rec.Take()); k[ratelua.KindLost] != 1 {
		t.Errorf("events %v, want one %s", k, ratelua.KindLost)
	}
}

// TestLeaseLostToReset: a reset drops the lease; its holder's renewal
// learns it from the server, and the next acquire gets a new id.
func TestLeaseLostToReset(t *testing.T) {
	ctx := context.Background()
	logins, _, _ := newLogins(t, ratelua.Options{})
	a, _, _ := logins.Acquire(ctx, "k")
	if err := logins.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	b, _, _ := logins.Acquire(ctx, "k")
	if b == nil || b.ID() == a.ID() {
		t.Fatalf("after the reset: %v, a's id %d", b, a.ID())
	}
	if err := a.Renew(ctx); !errors.Is(err, ratelua.ErrLeaseLost) || !errors.Is(a.Err(), ratelua.ErrLeaseLost) {
		t.Fatalf("renewing a dropped lease: %v, Err %v", err, a.Err())
	}
	if err := a.Release(ctx); !errors.Is(err, ratelua.ErrLeaseLost) {
		t.Errorf("releasing a lost lease: %v", err)
	}
	if err := b.Release(ctx); err != nil {
		t.Errorf("b: %v", err)
	}
}

// TestLeaseTimer: without a Clock, a timer marks the loss at the deadline;
// Slots.Renew keeps a lease held past many lease times.
func TestLeaseTimer(t *testing.T) {
	ctx := context.Background()
	client := limitertest.NewEngineClient()
	short, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "short"}, ratelua.Slots{Max: 1, Lease: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := short.Acquire(ctx, "k")
	if err != nil || a == nil {
		t.Fatal(a, err)
	}
	select {
	case <-a.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("not lost 10 s after a 50 ms lease")
	}
	if !errors.Is(a.Err(), ratelua.ErrLeaseLost) {
		t.Errorf("Err %v", a.Err())
	}
	renewed, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "renewed"}, ratelua.Slots{Max: 1, Lease: 2 * time.Second, Renew: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := renewed.Acquire(ctx, "k")
	if err != nil || b == nil {
		t.Fatal(b, err)
	}
	first := b.Deadline()
	time.Sleep(300 * time.Millisecond)
	if !b.Deadline().After(first) || b.Err() != nil {
		t.Errorf("after 3 renewal periods: deadline %v (first %v), Err %v", b.Deadline(), first, b.Err())
	}
	if err := b.Release(ctx); err != nil {
		t.Fatal(err)
	}
	calls := client.Ran()
	time.Sleep(300 * time.Millisecond)
	if client.Ran() != calls {
		t.Errorf("%d calls after the release: the renewals did not stop", client.Ran()-calls)
	}
}

// TestSemaphoreFailOpenAndDryRun: FailOpen admits an acquire the server
// could not answer with a local lease; DryRun admits a denied one; failing
// closed gives no lease.
func TestSemaphoreFailOpenAndDryRun(t *testing.T) {
	ctx := context.Background()
	open, client, _ := newLogins(t, ratelua.Options{FailOpen: true})
	client.SetDown(true)
	l, r, err := open.Acquire(ctx, "k")
	if !errors.Is(err, ratelua.ErrUnavailable) || !r.Allowed || l == nil || !l.Local() || l.Release(ctx) != nil || l.Renew(ctx) != nil {
		t.Fatalf("fail open: %v %+v %v", l, r, err)
	}
	closed, client, _ := newLogins(t, ratelua.Options{})
	client.SetDown(true)
	if l, r, err := closed.Acquire(ctx, "k"); !errors.Is(err, ratelua.ErrUnavailable) || r.Allowed || l != nil {
		t.Fatalf("fail closed: %v %+v %v", l, r, err)
	}
	dry, _, _ := newLogins(t, ratelua.Options{DryRun: true})
	for i := range 3 {
		l, r, err := dry.Acquire(ctx, "k")
		if err != nil || !r.Allowed || l == nil || r.DryRunDenied != (i == 2) || l.Local() != (i == 2) {
			t.Fatalf("dry run %d: %v %+v %v", i, l, r, err)
		}
	}
}

// TestSemaphorePeekGoesTheLimitersWay: a Semaphore's Peek ends as a
// Limiter's does (issue 34 row 2: it skipped the common finish): with a
// server that does not answer, FailOpen admits it with the error and
// Observe sees a fail_open decision of 0 events; failing closed, it is
// denied and seen as an error; under DryRun a full key is admitted with
// DryRunDenied and seen as dry_run; a reset is no decision.
func TestSemaphorePeekGoesTheLimitersWay(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		opts    ratelua.Options
		down    bool
		allowed bool
		kind    string
	}{
		{"fail open", ratelua.Options{FailOpen: true}, true, true, ratelua.KindFailOpen},
		{"fail closed", ratelua.Options{}, true, false, ratelua.KindError},
		{"dry run", ratelua.Options{DryRun: true}, false, true, ratelua.KindDryRun},
		{"free", ratelua.Options{}, false, true, ratelua.KindAllowed},
	} {
		t.Run(c.name, func(t *testing.T) {
			var rec limitertest.Recorder
			c.opts.Observe = rec.Observe
			s, client, _ := newLogins(t, c.opts)
			if c.kind == ratelua.KindDryRun {
				for range 2 {
					if l, r, err := s.Acquire(ctx, "k"); err != nil || l == nil || l.Local() || !r.Allowed {
						t.Fatalf("an acquire of a free slot: %v %+v %v", l, r, err)
					}
				}
			}
			client.SetDown(c.down)
			rec.Take()
			r, err := s.Peek(ctx, "k")
			if r.Allowed != c.allowed || (c.down != (err != nil)) || (c.down && !errors.Is(err, ratelua.ErrUnavailable)) {
				t.Fatalf("Peek: %+v %v, want allowed %v, an error wrapping ErrUnavailable %v", r, err, c.allowed, c.down)
			}
			if r.DryRunDenied != (c.kind == ratelua.KindDryRun) {
				t.Errorf("Peek: DryRunDenied %v under %s", r.DryRunDenied, c.name)
			}
			events := rec.Decisions()
			if len(events) != 1 || events[0].Kind != c.kind || events[0].N != 0 || events[0].Script != s.Script().String() || (c.down && !errors.Is(events[0].Err, ratelua.ErrUnavailable)) {
				t.Fatalf("Observe saw %+v, want one %s decision of 0 events by %s", events, c.kind, s.Script())
			}
			client.SetDown(false)
			if err := s.Reset(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if events := rec.Decisions(); len(events) != 0 {
				t.Errorf("a reset was observed as a decision: %+v", events)
			}
		})
	}
}

// TestSemaphoreOptions: what a Semaphore refuses, and that Max and Lease
// are not part of the key.
func TestSemaphoreOptions(t *testing.T) {
	client := limitertest.NewEngineClient()
	for _, c := range []struct {
		name  string
		opts  ratelua.Options
		slots ratelua.Slots
		field string
	}{
		{"count denied", ratelua.Options{CountDenied: true}, ratelua.Slots{1, time.Second, 0}, "CountDenied"},
		{"deny cache", ratelua.Options{DenyCache: 10}, ratelua.Slots{1, time.Second, 0}, "DenyCache"},
		{"fallback", ratelua.Options{Fallback: 0.5}, ratelua.Slots{1, time.Second, 0}, "Fallback"},
		{"renew as long as the lease", ratelua.Options{}, ratelua.Slots{1, time.Second, time.Second}, "Renew"},
		{"max 0", ratelua.Options{}, ratelua.Slots{0, time.Second, 0}, "Max"},
		{"max 10^6 + 1", ratelua.Options{}, ratelua.Slots{1_000_001, time.Second, 0}, "Max"},
		{"no lease", ratelua.Options{}, ratelua.Slots{1, 0, 0}, "Lease"},
		{"nanoseconds", ratelua.Options{}, ratelua.Slots{1, time.Second + 1, 0}, "durations"},
	} {
		_, err := ratelua.NewConcurrency(client, c.opts, c.slots)
		var le *ratelua.LimitError
		if !errors.As(err, &le) || le.Field != c.field {
			t.Errorf("%s: %v, want a LimitError on %s", c.name, err, c.field)
		}
	}
	a, _ := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "p"}, ratelua.Slots{Max: 2, Lease: time.Minute})
	b, _ := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "p"}, ratelua.Slots{Max: 3, Lease: time.Second})
	us, _ := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "p"}, ratelua.Slots{Max: 2, Lease: 1500 * time.Microsecond})
	if a.Key("x") != b.Key("x") || a.Key("x") == us.Key("x") {
		t.Errorf("keys %q %q %q: want Max and Lease out of the key, the unit in it", a.Key("x"), b.Key("x"), us.Key("x"))
	}
}

// TestLeaseLostAfterARenewal: without a Clock, a lease renewed once whose
// later renewals fail (the client is gone) is lost at its renewed
// deadline: the renewal moved the timer with the deadline (issue 36 row 2).
func TestLeaseLostAfterARenewal(t *testing.T) {
	ctx := context.Background()
	client := limitertest.NewEngineClient()
	const lease = 2 * time.Second
	s, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "renewed-once"}, ratelua.Slots{Max: 1, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	// The holder works half its lease, then renews once: the deadline
	// moves by about a second. A machine so busy that the lease ran out
	// meanwhile starts again.
	var a *ratelua.Lease
	for attempt := 0; a == nil; attempt++ {
		if attempt == 5 {
			t.Fatal("5 leases of 2 s lost before a renewal half-way")
		}
		l, _, err := s.Acquire(ctx, fmt.Sprint("k", attempt))
		if err != nil || l == nil {
			t.Fatal(l, err)
		}
		first := l.Deadline()
		<-time.After(lease / 2)
		err = l.Renew(ctx)
		switch {
		case errors.Is(err, ratelua.ErrLeaseLost):
			continue
		case err != nil:
			t.Fatalf("renewal: %v", err)
		case !l.Deadline().After(first.Add(lease / 4)):
			t.Fatalf("the renewal half-way moved the deadline from %v to %v", first, l.Deadline())
		}
		a = l
	}
	client.SetDown(true)
	if err := a.Renew(ctx); err == nil || errors.Is(err, ratelua.ErrLeaseLost) {
		t.Fatalf("a renewal with the client gone: %v, want the call's error", err)
	}
	select {
	case <-a.Lost():
	case <-time.After(15 * time.Second):
		t.Fatal("Lost() not closed 15 s after a 2 s lease renewed once: the timer did not follow the deadline")
	}
	if !errors.Is(a.Err(), ratelua.ErrLeaseLost) {
		t.Errorf("Err %v, want ErrLeaseLost", a.Err())
	}
}

// lateClient runs every call on the server, then, when an acquire's
// context has a deadline, waits for it and answers its error: the server
// took the slots, the caller never learned it (a reply later than the
// deadline). late counts those acquires; released receives a value once
// each release has been answered.
type lateClient struct {
	ratelua.Client
	late     *atomic.Int64
	released chan struct{}
}

func (c lateClient) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	err := c.Client.Run(context.WithoutCancel(ctx), call, reply)
	if call.Args[3] == "release" {
		c.released <- struct{}{}
	}
	if _, ok := ctx.Deadline(); ok && call.Args[3] == "0" && call.Args[0] != "0" {
		c.late.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// TestAcquireWithUnknownOutcome: acquires whose context ends while the
// script runs hold no slot afterwards (each is released by its id in the
// background) and are never admitted, not even by FailOpen; a patient
// caller then gets a slot (issue 30 row H3).
func TestAcquireWithUnknownOutcome(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		engine := limitertest.NewEngineClient()
		clock := limitertest.NewManualClock(time.Unix(1_600_000_000, 0))
		late := new(atomic.Int64)
		released := make(chan struct{}, 200)
		s, err := ratelua.NewConcurrency(lateClient{engine, late, released}, ratelua.Options{Prefix: "late", FailOpen: failOpen, Clock: clock.Now},
			ratelua.Slots{Max: 2, Lease: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		// Loaded first: an acquire's EVALSHA then runs (an unknown script
		// would answer NOSCRIPT, and its EVAL would not be sent).
		if r, err := s.Peek(context.Background(), "k"); err != nil || r.Remaining != 2 {
			t.Fatalf("peek: %+v %v", r, err)
		}
		// 3 acquires that reach the server (on a busy machine a 5 ms
		// deadline may pass before one is sent: then it is tried again).
		for i := 0; late.Load() < 3; i++ {
			if i == 100 {
				t.Fatalf("FailOpen %v: %d of 100 acquires with a 5 ms deadline reached the server", failOpen, late.Load())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
			l, r, err := s.Acquire(ctx, "k")
			cancel()
			if l != nil || r.Allowed || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("FailOpen %v: acquire %d with a 5 ms deadline: %v %+v %v, want no lease, not allowed, the deadline's error", failOpen, i, l, r, err)
			}
		}
		// Each late acquire is released in the background, each release
		// bounded by a few seconds: wait until the server has answered
		// every one (10 s bounds the wait for a release never sent).
		for i := range late.Load() {
			select {
			case <-released:
			case <-time.After(10 * time.Second):
				t.Fatalf("FailOpen %v: %d of %d acquires with an unknown outcome released after 10 s", failOpen, i, late.Load())
			}
		}
		r, err := s.Peek(context.Background(), "k")
		if err != nil || r.Remaining != 2 {
			t.Fatalf("FailOpen %v: after 3 acquires that ended with their deadline: %+v %v, want 2 of 2 slots free", failOpen, r, err)
		}
		l, r, err := s.Acquire(context.Background(), "k")
		if err != nil || l == nil || !r.Allowed || l.Local() {
			t.Fatalf("FailOpen %v: a patient caller: %v %+v %v", failOpen, l, r, err)
		}
	}
}

// TestSemaphoreCallerClockBehind: through Options.Clock, a process whose
// clock is 20 s behind holds its slot as long as the others count it:
// with Max 2 a third holder is denied (issue 30 row M4).
func TestSemaphoreCallerClockBehind(t *testing.T) {
	ctx := context.Background()
	client := limitertest.NewEngineClient()
	clock := limitertest.NewManualClock(time.Unix(1_600_000_000, 0))
	behind := func() time.Time { return clock.Now().Add(-20 * time.Second) }
	slots := ratelua.Slots{Max: 2, Lease: 30 * time.Second}
	on, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "p", Clock: clock.Now}, slots)
	if err != nil {
		t.Fatal(err)
	}
	late, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "p", Clock: behind}, slots)
	if err != nil {
		t.Fatal(err)
	}
	if a, _, err := on.Acquire(ctx, "k"); err != nil || a == nil {
		t.Fatal(a, err)
	}
	b, _, err := late.Acquire(ctx, "k")
	if err != nil || b == nil {
		t.Fatal(b, err)
	}
	clock.Advance(15 * time.Second)
	if b.Err() != nil {
		t.Fatalf("the late holder's lease, 15 s in: %v", b.Err())
	}
	if c, r, err := on.Acquire(ctx, "k"); err != nil || c != nil || r.Allowed {
		t.Fatalf("a third holder 15 s later: %v %+v %v, want denied: the late holder still holds its slot", c, r, err)
	}
}
