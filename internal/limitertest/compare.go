// Package limitertest holds what the tests of the limiters share, in the
// root package and in integration/: a Client that runs the scripts in
// luatest, an event recorder, a caller clock a test moves, the login
// limiters, and comparisons of the options against plain enforcement.
package limitertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
)

// Package limitertest holds what the tests of the limiters share, in the
// root package and in integration/: a Client that runs the scripts in
// luatest, an event recorder, a caller clock a test moves, the login
// limiters, and comparisons of the options against plain enforcement.
// DryRunAgainstEnforcement replays one random sequence of Allow, AllowN
// and Peek through an enforcing and a DryRun limiter of every script on
// client (prefixes apart) and compares every answer.
func DryRunAgainstEnforcement(t *testing.T, client ratelua.Client, steps int) {
	t.Helper()
	ctx := context.Background()
	clock := NewManualClock(time.Unix(1_800_000_000, 0))
	prefix := fmt.Sprintf("dry%d", rand.Int64())
	enforce, err := Mixed(client, ratelua.Options{Prefix: prefix + "-enforce", Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var rec Recorder
	dry, err := Mixed(client, ratelua.Options{Prefix: prefix + "-dry", Clock: clock.Now, DryRun: true, Observe: rec.Observe})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	denied, admitted := map[string]int{}, map[string]int{}
	for step := range steps {
		clock.Advance(time.Duration(r.IntN(400)) * time.Millisecond)
		key := fmt.Sprintf("k%d", r.IntN(3))
		n := int64(r.IntN(3)) // 0 peeks
		for name, e := range enforce {
			d := dry[name]
			var want, got ratelua.Result
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
			events := rec.Decisions()
			wantKind := ratelua.KindAllowed
			if !want.Allowed {
				wantKind = ratelua.KindDryRun
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

// DenyCacheAgainstServer hammers one event key per script with Allow,
// AllowN(2) now and then, and Peek, through a limiter without the cache on
// plain and one with it on cached (the same clock, the caller's), and
// requires equal answers. It returns how many were answered locally and
// compared.
func DenyCacheAgainstServer(t *testing.T, plain, cached ratelua.Client, prefix string, steps int) (local, compared int) {
	t.Helper()
	ctx := context.Background()
	clock := NewManualClock(time.Unix(1_800_000_000, 0))
	without, err := Login(plain, ratelua.Options{Prefix: prefix + "-plain", Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var rec Recorder
	with, err := Login(cached, ratelua.Options{Prefix: prefix + "-cached", Clock: clock.Now, DenyCache: 100, Observe: rec.Observe})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for step := range steps {
		clock.Advance(time.Duration(r.IntN(20)) * time.Millisecond)
		n := int64(1)
		switch r.IntN(50) {
		case 0:
			n = 2
		case 1:
			n = 0
		}
		for name, p := range without {
			c := with[name]
			var want, got ratelua.Result
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
			events := rec.Decisions()
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

// DenyCacheMixedAgainstServer hammers one event key per script of the
// Mixed limits with Allow, AllowN(2), AllowN(3) and Peek through a limiter
// without the cache on plain and one with it on cached (the same clock,
// the caller's), and requires the server's answer from the cache:
// Allowed, RetryAfter, ResetAfter and Limit always, and Remaining unless a
// request of n > 1 was answered locally (documented: the server's grows
// while capacity frees). It returns how many were answered locally and
// compared.
func DenyCacheMixedAgainstServer(t *testing.T, plain, cached ratelua.Client, prefix string, steps int) (local, compared int) {
	t.Helper()
	ctx := context.Background()
	clock := NewManualClock(time.Unix(1_800_000_000, 0))
	without, err := Mixed(plain, ratelua.Options{Prefix: prefix + "-plain", Clock: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	var rec Recorder
	with, err := Mixed(cached, ratelua.Options{Prefix: prefix + "-cached", Clock: clock.Now, DenyCache: 100, Observe: rec.Observe})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for step := range steps {
		clock.Advance(time.Duration(r.IntN(60)) * time.Millisecond)
		n := []int64{0, 1, 1, 1, 2, 2, 3}[r.IntN(7)]
		for _, name := range []string{ratelua.SlidingWindow, ratelua.AR1, ratelua.ZSetLog, ratelua.TokenBucket} {
			p, c := without[name], with[name]
			var want, got ratelua.Result
			var errP, errC error
			if n == 0 {
				want, errP = p.Peek(ctx, "mixed")
				got, errC = c.Peek(ctx, "mixed")
			} else {
				want, errP = p.AllowN(ctx, "mixed", n)
				got, errC = c.AllowN(ctx, "mixed", n)
			}
			if errP != nil || errC != nil {
				t.Fatalf("step %d %s: %v, %v", step, name, errP, errC)
			}
			events := rec.Decisions()
			if len(events) != 1 {
				t.Fatalf("step %d %s: %d events", step, name, len(events))
			}
			isLocal := events[0].Local
			if isLocal && n > 1 {
				got.Remaining = want.Remaining
			}
			if got != want {
				t.Fatalf("step %d %s n=%d: cached %+v (local %v), server %+v", step, name, n, got, isLocal, want)
			}
			if isLocal {
				local++
			}
			compared++
		}
	}
	return local, compared
}

// DenyCacheInFlight: for every script of the Mixed limits on client, a
// denial that the server gave while a Reset, a ResetMany or an admission
// ran through the same Limiter, and that reaches the limiter after it, is
// not answered from the deny cache afterwards: the next request is the
// server's to decide (a frozen caller clock).
func DenyCacheInFlight(t *testing.T, client ratelua.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	hold := NewHoldClient(client)
	clock := NewManualClock(time.Unix(1_800_000_000, 0))
	var rec Recorder
	limiters, err := Mixed(hold, ratelua.Options{Prefix: fmt.Sprintf("%s%d", prefix, rand.Int64()), Clock: clock.Now, DenyCache: 100, Observe: rec.Observe})
	if err != nil {
		t.Fatal(err)
	}
	// call makes one decision and returns it with whether it was local.
	call := func(l *ratelua.Limiter, key string, n int64) (ratelua.Result, bool) {
		t.Helper()
		r, err := l.AllowN(ctx, key, n)
		if err != nil {
			t.Fatalf("AllowN(%s, %d): %v", key, n, err)
		}
		events := rec.Decisions()
		return r, len(events) == 1 && events[0].Local
	}
	// inFlight runs AllowN(key, n), which the server denies, and runs
	// meanwhile between the server's answer and the limiter's.
	inFlight := func(name string, l *ratelua.Limiter, key string, n int64, meanwhile func()) {
		t.Helper()
		h := hold.Arm()
		done := make(chan ratelua.Result, 1)
		go func() {
			r, _ := l.AllowN(ctx, key, n)
			done <- r
		}()
		select {
		case <-h.Answered:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the held call never reached the server", name)
		}
		meanwhile()
		h.Release()
		if r := <-done; r.Allowed {
			t.Fatalf("%s: the held AllowN(%s, %d) was admitted; the case needs a denial", name, key, n)
		}
		rec.Decisions()
	}
	for _, name := range []string{ratelua.SlidingWindow, ratelua.AR1, ratelua.ZSetLog, ratelua.TokenBucket} {
		l := limiters[name]
		for _, how := range []string{"Reset", "ResetMany"} {
			key := name + "-" + how
			if r, _ := call(l, key, 3); !r.Allowed {
				t.Fatalf("%s %s: the first 3 events denied: %+v", name, how, r)
			}
			inFlight(name+" "+how, l, key, 1, func() {
				var err error
				if how == "Reset" {
					err = l.Reset(ctx, key)
				} else {
					err = l.ResetMany(ctx, []string{key})
				}
				if err != nil {
					t.Fatalf("%s %s: %v", name, how, err)
				}
			})
			if r, isLocal := call(l, key, 1); !r.Allowed || isLocal {
				t.Errorf("%s: a denial in flight during %s was cached: the next Allow got %+v (local %v); the server admits a reset key", name, how, r, isLocal)
			}
		}
		key := name + "-admission"
		if r, _ := call(l, key, 2); !r.Allowed {
			t.Fatalf("%s admission: the first 2 events denied: %+v", name, r)
		}
		inFlight(name+" admission", l, key, 2, func() {
			if r, _ := call(l, key, 1); !r.Allowed {
				t.Fatalf("%s admission: one more event denied: %+v", name, r)
			}
		})
		if _, isLocal := call(l, key, 2); isLocal {
			t.Errorf("%s: a denial of AllowN(2) in flight during an admission of 1 was cached and answered locally after it", name)
		}
	}
}
