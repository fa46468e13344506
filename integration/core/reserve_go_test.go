package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
	"github.com/ratelua/ratelua/testbench"
)

// faultClient sends every call to a real server, but: while down, sends
// nothing and answers as a lost connection would; and it loses the reply
// of the next lose calls whose ARGV[4] starts with losePrefix (the server
// ran them; the caller hears of a lost connection). It counts the calls
// it sent.
type faultClient struct {
	ratelua.Client
	down       atomic.Bool
	losePrefix string
	lose       atomic.Int64
	sent       atomic.Int64
}

func (c *faultClient) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	if c.down.Load() {
		return io.ErrUnexpectedEOF
	}
	c.sent.Add(1)
	err := c.Client.Run(ctx, call, reply)
	if err == nil && len(call.Args) > 3 && c.losePrefix != "" && strings.HasPrefix(call.Args[3], c.losePrefix) && c.lose.Add(-1) >= 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}

// reserveLimiter is a token bucket of 10 refilled 10 per minute, on a
// frozen clock (nothing refills between calls), with opts.
func reserveLimiter(t *testing.T, client ratelua.Client, prefix string, opts ratelua.Options) (*ratelua.Limiter, *limitertest.ManualClock) {
	t.Helper()
	clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
	opts.Prefix, opts.Clock = prefix, clock.Now
	l, err := ratelua.NewTokenBucket(client, opts, ratelua.Bucket{Capacity: 10, RefillAmount: 10, RefillInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return l, clock
}

// remaining is a peek's Remaining of key.
func remaining(t *testing.T, l *ratelua.Limiter, key string) int64 {
	t.Helper()
	r, err := l.Peek(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return r.Remaining
}

// reserveOK reserves estimate and requires it admitted and held.
func reserveOK(t *testing.T, l *ratelua.Limiter, key string, estimate int64) *ratelua.Reservation {
	t.Helper()
	res, err := l.Reserve(context.Background(), key, estimate)
	if err != nil || !res.Result().Allowed || !res.Held() || res.ID() < 1 {
		t.Fatalf("reserve %d: %+v held %v id %d, %v", estimate, res.Result(), res.Held(), res.ID(), err)
	}
	return res
}

// TestReserveSettleOnServers: Reserve decides as AllowN(estimate) and
// holds it; Settle gives back what was not used, or charges the overrun
// into debt; a second Settle, and a Settle or Cancel of a denied
// reservation, send nothing; a settle after the lifetime reports
// ErrReservationExpired; a script without the modes is refused before
// any call.
func TestReserveSettleOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		fc := &faultClient{Client: ratelua.Rueidis(client)}
		l, clock := reserveLimiter(t, fc, "res-"+t.Name(), ratelua.Options{ReservationLifetime: time.Second})
		r1 := reserveOK(t, l, "k", 6)
		if r1.Result().Remaining != 4 || r1.Estimate() != 6 {
			t.Fatalf("reserve 6 of 10: %+v", r1.Result())
		}
		r2, err := l.Reserve(ctx, "k", 6)
		if err != nil || r2.Result().Allowed || r2.Held() || r2.Result().RetryAfter <= 0 {
			t.Fatalf("reserve 6 of 4 left: %+v held %v, %v", r2.Result(), r2.Held(), err)
		}
		sent := fc.sent.Load()
		for _, step := range []func() (ratelua.Result, error){
			func() (ratelua.Result, error) { return r2.Settle(ctx, 3) },
			func() (ratelua.Result, error) { return r2.Cancel(ctx) },
		} {
			if _, err := step(); err != nil {
				t.Fatalf("a step of a denied reservation: %v", err)
			}
		}
		if fc.sent.Load() != sent {
			t.Fatalf("a denied reservation's settle and cancel sent %d calls", fc.sent.Load()-sent)
		}
		s, err := r1.Settle(ctx, 2)
		if err != nil || s.Remaining != 8 || !s.Allowed || s.Limit != 0 {
			t.Fatalf("settle 2 of 6: %+v, %v, want 8 remaining", s, err)
		}
		sent = fc.sent.Load()
		again, err := r1.Settle(ctx, 2)
		if err != nil || again != s || fc.sent.Load() != sent || r1.Held() {
			t.Fatalf("settle twice: %+v, %v (%d calls sent), want %+v and nothing sent", again, err, fc.sent.Load()-sent, s)
		}
		if _, err := r1.Cancel(ctx); err != nil || remaining(t, l, "k") != 8 {
			t.Fatalf("cancel after settle: %v, remaining %d", err, remaining(t, l, "k"))
		}
		// An overrun: into debt, never denied.
		r3 := reserveOK(t, l, "k", 5)
		s, err = r3.Settle(ctx, 12)
		if err != nil || s.Allowed || s.Remaining != 0 || s.RetryAfter != 30*time.Second {
			t.Fatalf("settle 12 of 5 with 3 left: %+v, %v, want in debt by 4 tokens (30 s until one is back)", s, err)
		}
		// The lifetime: a settle after it applies nothing.
		if err := l.Reset(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		r4 := reserveOK(t, l, "k", 4)
		clock.Advance(time.Second)
		s, err = r4.Settle(ctx, 1)
		if !errors.Is(err, ratelua.ErrReservationExpired) || s.Limit != -1 || s.RetryAfter != ratelua.Never {
			t.Fatalf("settle past the lifetime: %+v, %v, want ErrReservationExpired", s, err)
		}
		if got := remaining(t, l, "k"); got != 6 {
			t.Fatalf("an expired reservation stays spent: remaining %d, want 6", got)
		}
		// A script without reservations: refused, nothing sent.
		ar, err := ratelua.NewAR1(fc, ratelua.Options{Prefix: "res-ar1"}, ratelua.Decay{Max: 5, Factor: 2, Resolution: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		sent = fc.sent.Load()
		res, err := ar.Reserve(ctx, "k", 1)
		if !errors.Is(err, ratelua.ErrNotSupported) || !strings.Contains(err.Error(), "ar1") || res.Held() || res.Result().Allowed || fc.sent.Load() != sent {
			t.Fatalf("reserve on ar1: %+v, %v (%d calls sent), want ErrNotSupported naming it", res.Result(), err, fc.sent.Load()-sent)
		}
		if _, err := l.Reserve(ctx, "k", 0); !errors.Is(err, ratelua.ErrInvalidLimit) || !strings.Contains(err.Error(), "estimate") {
			t.Fatalf("reserve 0: %v", err)
		}
		// On the server's clock (no Options.Clock), a bucket refilled 1
		// token per 6 minutes: nothing refills between the calls.
		onServer, err := ratelua.NewTokenBucket(fc, ratelua.Options{Prefix: "res-server-" + t.Name()}, ratelua.Bucket{Capacity: 10, RefillAmount: 10, RefillInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		rs := reserveOK(t, onServer, "k", 6)
		if s, err := rs.Settle(ctx, 2); err != nil || s.Remaining != 8 {
			t.Fatalf("on the server's clock, settle 2 of 6: %+v, %v", s, err)
		}
		if _, err := ratelua.NewTokenBucket(fc, ratelua.Options{ReservationLifetime: -time.Second}, ratelua.Bucket{Capacity: 10, RefillAmount: 10, RefillInterval: time.Hour}); !errors.Is(err, ratelua.ErrInvalidLimit) || !strings.Contains(err.Error(), "ReservationLifetime") {
			t.Fatalf("a negative ReservationLifetime: %v", err)
		}
		r5 := reserveOK(t, l, "k", 1)
		if _, err := r5.Settle(ctx, -1); !errors.Is(err, ratelua.ErrInvalidLimit) || !strings.Contains(err.Error(), "actual") || !r5.Held() {
			t.Fatalf("settle -1: %v, held %v", err, r5.Held())
		}
	})
}

// TestReserveSettleRetriedOnServers: a settle whose reply is lost returns
// the error, and Settle again (even 3 times) applies it once; another
// actual cost is refused meanwhile. A reserve whose reply is lost is not
// admitted and is cancelled in the background; under FailOpen it is
// admitted, and its settle is sent.
func TestReserveSettleRetriedOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		fc := &faultClient{Client: ratelua.Rueidis(client), losePrefix: "settle:"}
		l, _ := reserveLimiter(t, fc, "retry-"+t.Name(), ratelua.Options{})
		res := reserveOK(t, l, "k", 6)
		fc.lose.Store(1)
		if _, err := res.Settle(ctx, 1); !errors.Is(err, ratelua.ErrUnavailable) || !res.Held() {
			t.Fatalf("a settle whose reply is lost: %v, held %v, want ErrUnavailable and still held", err, res.Held())
		}
		if got := remaining(t, l, "k"); got != 9 {
			t.Fatalf("the lost settle ran: remaining %d, want 9", got)
		}
		if _, err := res.Settle(ctx, 2); !errors.Is(err, ratelua.ErrInvalidLimit) {
			t.Fatalf("a retry with another actual cost: %v, want refused", err)
		}
		if _, err := res.Cancel(ctx); !errors.Is(err, ratelua.ErrInvalidLimit) {
			t.Fatalf("a cancel while a settle of 1 is unknown: %v, want refused", err)
		}
		fc.lose.Store(2)
		for i := 0; i < 3; i++ {
			_, err := res.Settle(ctx, 1)
			if (i < 2) != errors.Is(err, ratelua.ErrUnavailable) || (i == 2 && err != nil) {
				t.Fatalf("retry %d: %v", i, err)
			}
		}
		if got := remaining(t, l, "k"); got != 9 || res.Held() {
			t.Fatalf("after 3 retries: remaining %d held %v, want 9 (applied once)", got, res.Held())
		}

		// A reserve whose reply is lost.
		fc.losePrefix = "reserve:"
		fc.lose.Store(1)
		lost, err := l.Reserve(ctx, "k2", 7)
		if !errors.Is(err, ratelua.ErrUnavailable) || lost.Result().Allowed || lost.Held() {
			t.Fatalf("a reserve whose reply is lost: %+v held %v, %v", lost.Result(), lost.Held(), err)
		}
		eventually(t, "the lost reserve cancelled", func() (bool, string) {
			got := remaining(t, l, "k2")
			return got == 10, fmt.Sprintf("remaining %d", got)
		})
		open, _ := reserveLimiter(t, fc, "retry-"+t.Name(), ratelua.Options{FailOpen: true})
		fc.lose.Store(1)
		maybe, err := open.Reserve(ctx, "k3", 7)
		if !errors.Is(err, ratelua.ErrUnavailable) || !maybe.Result().Allowed || !maybe.Held() {
			t.Fatalf("FailOpen, a reserve whose reply is lost: %+v held %v, %v", maybe.Result(), maybe.Held(), err)
		}
		if got := remaining(t, open, "k3"); got != 3 {
			t.Fatalf("the lost reserve ran: remaining %d", got)
		}
		if _, err := maybe.Settle(ctx, 2); err != nil || remaining(t, open, "k3") != 8 {
			t.Fatalf("its settle: %v, remaining %d, want 8", err, remaining(t, open, "k3"))
		}
	})
}

// TestReserveOptionsOnServers: each option at each step. DenyCache
// caches a denied reserve as a denied AllowN, never a settle's reply, and
// a settle drops the key's denial; DryRun admits a denied reserve holding
// nothing and settles as the wire says; Observe sees reserve, settle and
// cancel; the fallback decides a reserve during an outage and settles it
// in the process, while a server reservation's settle during an outage
// returns the error and applies on a retry.
func TestReserveOptionsOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		prefix := "opts-" + t.Name()
		fc := &faultClient{Client: ratelua.Rueidis(client)}
		var rec limitertest.Recorder
		l, _ := reserveLimiter(t, fc, prefix, ratelua.Options{DenyCache: 100, Observe: rec.Observe})
		plain, _ := reserveLimiter(t, ratelua.Rueidis(client), prefix, ratelua.Options{})

		// A denied reserve is cached as a denied AllowN(estimate).
		held := reserveOK(t, l, "k", 8)
		if res, err := l.Reserve(ctx, "k", 5); err != nil || res.Result().Allowed {
			t.Fatalf("reserve 5 of 2 left: %+v, %v", res.Result(), err)
		}
		sent := fc.sent.Load()
		if r, err := l.AllowN(ctx, "k", 5); err != nil || r.Allowed || fc.sent.Load() != sent {
			t.Fatalf("AllowN(5) after a denied reserve of 5: %+v, %v, %d calls sent, want the cache's denial", r, err, fc.sent.Load()-sent)
		}
		// A settle drops it: the next AllowN asks the server.
		if _, err := held.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		sent = fc.sent.Load()
		if r, err := l.AllowN(ctx, "k", 5); err != nil || !r.Allowed || fc.sent.Load() != sent+1 {
			t.Fatalf("AllowN(5) after the cancel: %+v, %v (%d calls sent)", r, err, fc.sent.Load()-sent)
		}
		// A settle's reply in debt is no denial to cache.
		over := reserveOK(t, l, "k", 5)
		if s, err := over.Settle(ctx, 7); err != nil || s.Allowed || s.RetryAfter <= 0 {
			t.Fatalf("settle 7 of 5 with none left: %+v, %v, want in debt", s, err)
		}
		if err := plain.Reset(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if r, err := l.AllowN(ctx, "k", 7); err != nil || !r.Allowed {
			t.Fatalf("AllowN(7) after another process's reset: %+v, %v: a settle's reply was cached as a denial", r, err)
		}
		kinds := []string{}
		for _, e := range rec.Decisions() {
			kinds = append(kinds, fmt.Sprintf("%s/%d/%v/%v", e.Kind, e.N, e.Result.Allowed, e.Local))
		}
		want := "reserve/8/true/false reserve/5/false/false denied/5/false/true cancel/0/true/false allowed/5/true/false reserve/5/true/false settle/7/false/false allowed/7/true/false"
		if got := strings.Join(kinds, " "); got != want {
			t.Errorf("observed %s\nwant     %s", got, want)
		}

		// DryRun.
		dry, _ := reserveLimiter(t, fc, prefix+"-dry", ratelua.Options{DryRun: true})
		big := reserveOK(t, dry, "k", 9)
		res, err := dry.Reserve(ctx, "k", 5)
		if err != nil || !res.Result().Allowed || !res.Result().DryRunDenied || res.Held() {
			t.Fatalf("DryRun, reserve 5 of 1 left: %+v held %v, %v", res.Result(), res.Held(), err)
		}
		if got := remaining(t, dry, "k"); got != 1 {
			t.Fatalf("DryRun: a denied reserve held something: remaining %d, want 1", got)
		}
		if s, err := big.Settle(ctx, 4); err != nil || s.Remaining != 6 {
			t.Fatalf("DryRun, settle 4 of 9: %+v, %v, want 6 remaining", s, err)
		}

		// The fallback.
		fb, _ := reserveLimiter(t, fc, prefix+"-fb", ratelua.Options{Fallback: 0.5, Observe: rec.Observe})
		server := reserveOK(t, fb, "k", 6)
		fc.down.Store(true)
		local, err := fb.Reserve(ctx, "k", 4)
		if err != nil || !local.Result().Allowed || !local.Held() || local.Result().Remaining != 1 {
			t.Fatalf("reserve 4 in an outage (fallback of 5): %+v held %v, %v", local.Result(), local.Held(), err)
		}
		if s, err := local.Settle(ctx, 1); err != nil || s.Remaining != 4 {
			t.Fatalf("its settle in the outage: %+v, %v, want 4 remaining in the fallback", s, err)
		}
		if _, err := server.Settle(ctx, 2); !errors.Is(err, ratelua.ErrUnavailable) || !server.Held() {
			t.Fatalf("a server reservation's settle in an outage: %v, want ErrUnavailable", err)
		}
		fc.down.Store(false)
		if _, err := server.Settle(ctx, 2); err != nil || server.Held() {
			t.Fatalf("its retry: %v", err)
		}
		var steps []string
		for _, e := range rec.Decisions() {
			if e.Kind == ratelua.KindReserve || e.Kind == ratelua.KindSettle {
				steps = append(steps, fmt.Sprintf("%s/%d/%v", e.Kind, e.N, e.Local))
			}
		}
		if got := strings.Join(steps, " "); got != "reserve/6/false reserve/4/false settle/1/true settle/2/false settle/2/false" {
			t.Errorf("fallback steps observed: %s", got)
		}
	})
}
