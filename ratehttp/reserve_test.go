package ratehttp_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
	"github.com/ratelua/ratelua/ratehttp"
)

// tokens is a bucket of 100 tokens refilled 100 per minute on the
// embedded engine, on a clock that does not move (nothing refills).
func tokens(t *testing.T, prefix string) *ratelua.Limiter {
	t.Helper()
	at := time.Unix(1_600_000_000, 0)
	l, err := ratelua.NewTokenBucket(limitertest.NewEngineClient(), ratelua.Options{Prefix: prefix, Clock: func() time.Time { return at }},
		ratelua.Bucket{Capacity: 100, RefillAmount: 100, RefillInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func left(t *testing.T, l *ratelua.Limiter) int64 {
	t.Helper()
	r, err := l.Peek(context.Background(), "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	return r.Remaining
}

// reserving is the middleware of one Reserve limit of estimate on l.
func reserving(t *testing.T, l *ratelua.Limiter, estimate int64, more ...ratehttp.Limit) *ratehttp.Middleware {
	t.Helper()
	limits := append([]ratehttp.Limit{{Limiter: l, Name: "tokens", Reserve: func(*http.Request) int64 { return estimate }}}, more...)
	mw, err := ratehttp.New(ratehttp.Options{}, limits...)
	if err != nil {
		t.Fatal(err)
	}
	return mw
}

// TestReserveSettlesReportedCost: a request reserves its estimate (the
// headers say what is left after it), and the cost its handler reports
// is settled when it returns; a handler that reports nothing keeps the
// estimate spent, one that reports 0 gives it back; an estimate past the quota is denied holding nothing.
func TestReserveSettlesReportedCost(t *testing.T) {
	l := tokens(t, "settles")
	mw := reserving(t, l, 30)
	var inHandler int64
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inHandler = left(t, l)
		if !ratehttp.Settle(r.Context(), 12) {
			t.Error("Settle: no reservation on the request")
		}
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, get())
	if w.Code != http.StatusOK || inHandler != 70 || w.Header().Get("RateLimit") != `"tokens";r=70;t=18` {
		t.Fatalf("%d, %d left in the handler, RateLimit %q", w.Code, inHandler, w.Header().Get("RateLimit"))
	}
	if n := left(t, l); n != 88 {
		t.Fatalf("%d left after a cost of 12 was settled, want 88", n)
	}
	silent := mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	silent.ServeHTTP(httptest.NewRecorder(), get())
	if n := left(t, l); n != 58 {
		t.Fatalf("%d left after a handler that reported nothing, want 58 (the estimate spent)", n)
	}
	zero := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ratehttp.Settle(r.Context(), 0) }))
	zero.ServeHTTP(httptest.NewRecorder(), get())
	if n := left(t, l); n != 58 {
		t.Fatalf("%d left after a handler that reported 0, want 58 (the estimate given back)", n)
	}
	if ratehttp.Settle(context.Background(), 1) {
		t.Fatal("Settle reported a reservation on a context without one")
	}
	huge := reserving(t, l, 1000)
	w = httptest.NewRecorder()
	huge.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler ran") })).ServeHTTP(w, get())
	if w.Code != http.StatusTooManyRequests || left(t, l) != 58 {
		t.Fatalf("an estimate past the quota: %d, %d left", w.Code, left(t, l))
	}
}

// TestReserveSettlesOnPanic: a handler that panics after reporting its
// cost has it settled; one that panics before gives the estimate.
func TestReserveSettlesOnPanic(t *testing.T) {
	l := tokens(t, "panics")
	mw := reserving(t, l, 30)
	for _, c := range []struct {
		report int64 // -1: none
		want   int64
	}{{5, 95}, {-1, 65}} {
		h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c.report >= 0 {
				ratehttp.Settle(r.Context(), c.report)
			}
			panic("boom")
		}))
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the panic did not go on")
				}
			}()
			h.ServeHTTP(httptest.NewRecorder(), get())
		}()
		if n := left(t, l); n != c.want {
			t.Fatalf("after a panic (reported %d): %d left, want %d", c.report, n, c.want)
		}
	}
}

// served runs h behind a real HTTP server and signals on the returned
// channel each time h has returned (the middleware settled).
func served(t *testing.T, h http.Handler) (*httptest.Server, chan struct{}) {
	t.Helper()
	done := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		r.RemoteAddr = "192.0.2.1:1234"
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, done
}

// TestReserveSettlesOnHangUp: a client that hangs up while its handler
// works still has the cost the handler then reports settled.
func TestReserveSettlesOnHangUp(t *testing.T) {
	l := tokens(t, "hangup")
	entered := make(chan struct{})
	srv, done := served(t, reserving(t, l, 40).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
		ratehttp.Settle(r.Context(), 3)
	})))
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-entered
	if n := left(t, l); n != 60 {
		t.Fatalf("%d left while the handler works, want 60", n)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("the client's request: %v", err)
	}
	<-done
	if n := left(t, l); n != 97 {
		t.Fatalf("%d left after the hang-up and a reported cost of 3, want 97", n)
	}
}

// TestReserveSettlesWhenTheStreamEnds: a streamed response holds the
// estimate while it streams, and its reported cost is settled at its
// end.
func TestReserveSettlesWhenTheStreamEnds(t *testing.T) {
	l := tokens(t, "stream")
	next := make(chan struct{})
	srv, done := served(t, reserving(t, l, 50).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		for i := range 3 {
			io.WriteString(w, "chunk\n")
			rc.Flush()
			if i < 2 {
				<-next
			}
		}
		ratehttp.Settle(r.Context(), 21)
	})))
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	for i := range 3 {
		if line, err := lines.ReadString('\n'); err != nil || line != "chunk\n" {
			t.Fatalf("chunk %d: %q, %v", i, line, err)
		}
		if i < 2 {
			if n := left(t, l); n != 50 {
				t.Fatalf("%d left while streaming, want 50", n)
			}
			next <- struct{}{}
		}
	}
	io.Copy(io.Discard, resp.Body)
	<-done
	if n := left(t, l); n != 79 {
		t.Fatalf("%d left after the stream reported 21, want 79", n)
	}
}

// TestReserveCancelledWhenALaterLimitDenies: a request that a later
// limit denies gives its reservation back whole; a Reserve on a script
// without reservations, or with a Cost, is refused by New.
func TestReserveCancelledWhenALaterLimitDenies(t *testing.T) {
	l := tokens(t, "later")
	other := tokens(t, "other")
	if _, err := other.AllowN(context.Background(), "192.0.2.1", 100); err != nil {
		t.Fatal(err)
	}
	mw := reserving(t, l, 30, ratehttp.Limit{Limiter: other, Name: "requests"})
	w := httptest.NewRecorder()
	mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler ran") })).ServeHTTP(w, get())
	if w.Code != http.StatusTooManyRequests || left(t, l) != 100 {
		t.Fatalf("denied by the later limit: %d, %d left, want 100 (cancelled)", w.Code, left(t, l))
	}
	ar, err := ratelua.NewAR1(limitertest.NewEngineClient(), ratelua.Options{}, ratelua.Decay{Max: 5, Factor: 2, Resolution: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []ratehttp.Limit{
		{Limiter: ar, Name: "w", Reserve: func(*http.Request) int64 { return 1 }},
		{Limiter: l, Name: "t", Reserve: func(*http.Request) int64 { return 1 }, Cost: func(*http.Request) int64 { return 1 }},
	} {
		if _, err := ratehttp.New(ratehttp.Options{}, bad); !errors.Is(err, ratehttp.ErrInvalidConfig) || !strings.Contains(err.Error(), "Reserve") {
			t.Errorf("New with %+v: %v", bad, err)
		}
	}
}
