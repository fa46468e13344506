package ratehttp_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
	"github.com/ratelua/ratelua/ratehttp"
)

// TestFractionalWaitsRoundUp: a denial's wait that is not a whole number of
// seconds is sent rounded up, in t and in Retry-After alike, so that a
// client that waits what it is told is admitted: just above a whole second
// (1.001 s is 2), just below (0.999 s is 1, 1.999 s is 2), a half
// (2.5 s is 3) and whole seconds (4 s is 4). The expected figure is
// math.Ceil of the wait the limiter returned, not the middleware's own
// rounding. On the embedded engine, with a caller clock.
func TestFractionalWaitsRoundUp(t *testing.T) {
	clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
	logins, err := ratelua.NewZSetLog(limitertest.NewEngineClient(), ratelua.Options{Prefix: "waits", Clock: clock.Now},
		ratelua.Log{Max: 1, Window: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	mw, err := ratehttp.New(ratehttp.Options{Clock: clock.Now}, ratehttp.Limit{Limiter: logins, Name: "login"})
	if err != nil {
		t.Fatal(err)
	}
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	send := func() *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/login", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	if rec := send(); rec.Code != 200 {
		t.Fatalf("first login: %d", rec.Code)
	}
	elapsed := time.Duration(0)
	for _, wait := range []time.Duration{
		4 * time.Second, 2500 * time.Millisecond, 1999 * time.Millisecond,
		1001 * time.Millisecond, time.Second, 999 * time.Millisecond, time.Millisecond,
	} {
		// The login admitted at +0 frees its place at +5 s.
		at := 5*time.Second - wait
		clock.Advance(at - elapsed)
		elapsed = at
		r, err := logins.Peek(t.Context(), "192.0.2.1")
		if err != nil || r.RetryAfter != wait {
			t.Fatalf("at +%v the limiter says %+v, %v; want a wait of %v", at, r, err, wait)
		}
		rec := send()
		want := strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10)
		if rec.Code != 429 {
			t.Errorf("wait %v: status %d, want 429", wait, rec.Code)
		}
		if got := rec.Header().Get("Retry-After"); got != want {
			t.Errorf("wait %v: Retry-After %q, want %s (rounded up)", wait, got, want)
		}
		if got := rec.Header().Get("RateLimit"); !strings.HasSuffix(got, ";t="+want) {
			t.Errorf("wait %v: RateLimit %q, want t=%s (rounded up)", wait, got, want)
		}
	}
}
