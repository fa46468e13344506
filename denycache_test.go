package ratelua_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
)

// TestDenyCacheInFlight: a denial that reaches the limiter after a Reset,
// a ResetMany or an admission made through the same Limiter is not cached
// (issue 20, row 3: a key stayed denied locally for the rest of its wait
// while the server admitted).
func TestDenyCacheInFlight(t *testing.T) {
	limitertest.DenyCacheInFlight(t, limitertest.NewEngineClient(), "inflight")
}

// TestDenyCacheMixedRequests: with requests of 1, 2 and 3 events on one
// key, every answer of the cache is the server's (issue 20, row 6: after
// the limiter admitted a smaller request, cached AllowN(2) denials kept a
// RetryAfter and Limit the server no longer gave).
func TestDenyCacheMixedRequests(t *testing.T) {
	plain, cached := limitertest.NewEngineClient(), limitertest.NewEngineClient()
	local, compared := limitertest.DenyCacheMixedAgainstServer(t, plain, cached, "mixed", 5000)
	t.Logf("engine: %d of %d decisions local, every one the server's", local, compared)
	if local == 0 {
		t.Error("nothing was answered locally: the sequence tests nothing")
	}
}

// TestDenyCacheKeepsDenialsWhileOtherKeysAreAdmitted: a denial with a long
// wait is answered locally however many other keys the limiter admits
// meanwhile (changes of other keys' state never drop it).
func TestDenyCacheKeepsDenialsWhileOtherKeysAreAdmitted(t *testing.T) {
	ctx := context.Background()
	client := limitertest.NewEngineClient()
	clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
	var rec limitertest.Recorder
	l, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "others", Clock: clock.Now, DenyCache: 100, Observe: rec.Observe}, ratelua.Window{Max: 1, Duration: time.Hour, Resolution: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []bool{true, false} {
		if r, err := l.Allow(ctx, "denied"); err != nil || r.Allowed != want {
			t.Fatalf("Allow(denied): %+v, %v; want allowed %v", r, err, want)
		}
	}
	for i := range 10_000 {
		if r, err := l.Allow(ctx, fmt.Sprint("other-", i)); err != nil || !r.Allowed {
			t.Fatalf("Allow(other-%d): %+v, %v", i, r, err)
		}
	}
	rec.Take()
	if r, _ := l.Allow(ctx, "denied"); r.Allowed {
		t.Fatal("the denied key was admitted")
	}
	if events := rec.Decisions(); len(events) != 1 || !events[0].Local {
		t.Errorf("after 10,000 admissions of other keys, the denied key was not answered locally: %+v", events)
	}
}
