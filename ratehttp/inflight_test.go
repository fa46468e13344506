package ratehttp_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
	"github.com/ratelua/ratelua/ratehttp"
)

// inFlight is a route limited to 2 requests in flight per client address,
// on the embedded engine with a caller clock that does not move (no lease
// expires by itself).
func inFlight(t *testing.T, slots ratelua.Slots, opts ratehttp.Options) (*ratelua.Semaphore, *ratehttp.Middleware) {
	t.Helper()
	at := time.Unix(1_600_000_000, 0)
	sem, err := ratelua.NewConcurrency(limitertest.NewEngineClient(), ratelua.Options{Prefix: "inflight", Clock: func() time.Time { return at }}, slots)
	if err != nil {
		t.Fatal(err)
	}
	mw, err := ratehttp.New(opts, ratehttp.Limit{Semaphore: sem, Name: "exports"})
	if err != nil {
		t.Fatal(err)
	}
	return sem, mw
}

func free(t *testing.T, sem *ratelua.Semaphore) int64 {
	t.Helper()
	r, err := sem.Peek(context.Background(), "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	return r.Remaining
}

func get() *http.Request {
	r := httptest.NewRequest("GET", "/export", nil)
	r.RemoteAddr = "192.0.2.1:1234"
	return r
}

// TestInFlight: two requests hold the two slots; a third is answered 429
// with Retry-After and a problem body; the slots come back when the
// handlers return, panic, or run on after their client went away.
func TestInFlight(t *testing.T) {
	sem, mw := inFlight(t, ratelua.Slots{Max: 2, Lease: 30 * time.Second}, ratehttp.Options{})
	entered, leave := make(chan struct{}), make(chan struct{})
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-leave
	}))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), get()) })
		<-entered
	}
	if n := free(t, sem); n != 0 {
		t.Fatalf("%d free with two requests in flight", n)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, get())
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "30" ||
		!strings.Contains(w.Body.String(), `allows 2 requests in flight`) || w.Header().Get("RateLimit") != "" {
		t.Fatalf("third request: %d %v %s", w.Code, w.Header(), w.Body)
	}
	close(leave)
	wg.Wait()
	if n := free(t, sem); n != 2 {
		t.Fatalf("%d free after the handlers returned", n)
	}

	panics := mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	func() {
		defer func() { recover() }()
		panics.ServeHTTP(httptest.NewRecorder(), get())
	}()
	if n := free(t, sem); n != 2 {
		t.Errorf("%d free after a handler panicked", n)
	}

	ctx, gone := context.WithCancel(context.Background())
	stubborn := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gone()
		<-r.Context().Done()
		if n := free(t, sem); n != 1 {
			t.Errorf("%d free while a handler runs on after its client went away", n)
		}
	}))
	stubborn.ServeHTTP(httptest.NewRecorder(), get().WithContext(ctx))
	if n := free(t, sem); n != 2 {
		t.Errorf("%d free after the handler of a gone client returned", n)
	}
}

// TestInFlightLost: a lease lost while the handler runs (here to a reset,
// found by the next renewal) cancels the handler's context with
// ErrLeaseLost as the cause.
func TestInFlightLost(t *testing.T) {
	sem, mw := inFlight(t, ratelua.Slots{Max: 2, Lease: 30 * time.Second, Renew: 20 * time.Millisecond}, ratehttp.Options{})
	var cause error
	h := mw.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := sem.Reset(r.Context(), "192.0.2.1"); err != nil {
			t.Error(err)
		}
		select {
		case <-r.Context().Done():
			cause = context.Cause(r.Context())
		case <-time.After(10 * time.Second):
		}
	}))
	h.ServeHTTP(httptest.NewRecorder(), get())
	if !errors.Is(cause, ratelua.ErrLeaseLost) {
		t.Errorf("the handler's context ended with %v, want ErrLeaseLost", cause)
	}
}

// TestInFlightWithRateLimits: a rate limit after the semaphore that denies
// gives the slot back; the RateLimit fields are the rate limit's alone.
func TestInFlightWithRateLimits(t *testing.T) {
	at := time.Unix(1_600_000_000, 0)
	client := limitertest.NewEngineClient()
	sem, _ := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "inflight", Clock: func() time.Time { return at }}, ratelua.Slots{Max: 2, Lease: time.Minute})
	rate, _ := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "rate", Clock: func() time.Time { return at }}, ratelua.Bucket{Capacity: 1, RefillAmount: 1, RefillInterval: time.Minute})
	mw, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Semaphore: sem, Name: "exports"}, ratehttp.Limit{Limiter: rate, Name: "rate"})
	if err != nil {
		t.Fatal(err)
	}
	h := mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for i, want := range []int{200, 429} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, get())
		if w.Code != want || w.Header().Get("RateLimit-Policy") != `"rate";q=1;w=60` {
			t.Errorf("request %d: %d %v", i, w.Code, w.Header())
		}
	}
	if n := free(t, sem); n != 2 {
		t.Errorf("%d free after a request the rate limit denied", n)
	}
	for _, bad := range []ratehttp.Limit{
		{Semaphore: sem, Limiter: rate, Name: "x"},
		{Semaphore: sem, Names: []string{"x"}},
		{Semaphore: sem},
	} {
		if _, err := ratehttp.New(ratehttp.Options{}, bad); !errors.Is(err, ratehttp.ErrInvalidConfig) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestInFlightReleasedWhenALaterLimitPanics: when a later limit's Key or
// Cost panics, the slots the request already acquired go back, and the
// panic goes on to the server as before (issue 30 row M7).
func TestInFlightReleasedWhenALaterLimitPanics(t *testing.T) {
	for _, later := range []ratehttp.Limit{
		{Name: "key", Key: func(*http.Request) (string, bool) { panic("key boom") }},
		{Name: "cost", Cost: func(*http.Request) int64 { panic("cost boom") }},
	} {
		t.Run(later.Name, func(t *testing.T) {
			at := time.Unix(1_600_000_000, 0)
			client := limitertest.NewEngineClient()
			sem, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "inflight", Clock: func() time.Time { return at }}, ratelua.Slots{Max: 2, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			other, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "other", Clock: func() time.Time { return at }}, ratelua.Slots{Max: 2, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			later.Semaphore = other
			mw, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Semaphore: sem, Name: "exports"}, later)
			if err != nil {
				t.Fatal(err)
			}
			h := mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("the handler ran") }))
			for i := range 2 {
				func() {
					defer func() {
						if p := recover(); p == nil {
							t.Errorf("request %d: no panic, want the %s function's", i, later.Name)
						}
					}()
					h.ServeHTTP(httptest.NewRecorder(), get())
				}()
			}
			if n := free(t, sem); n != 2 {
				t.Errorf("%d of 2 slots free after 2 requests whose later limit's %s panicked", n, later.Name)
			}
		})
	}
}

// hangUpClient runs every call on the engine; an acquire whose context can
// end then says so on ran and waits for that end, answering its error:
// the slots were taken, the middleware never learned it (a client that
// hung up while the acquire ran).
type hangUpClient struct {
	ratelua.Client
	ran chan struct{}
}

func (c hangUpClient) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	err := c.Client.Run(context.WithoutCancel(ctx), call, reply)
	if ctx.Done() != nil && call.Args[3] == "0" && call.Args[0] != "0" {
		c.ran <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// TestInFlightClientHangsUpDuringAcquire: requests whose client hangs up
// while their acquire runs leave every slot free afterwards (their leases
// released by id in the background), FailOpen or not, run no handler, and
// a patient client then gets a slot (issue 30 row H3).
func TestInFlightClientHangsUpDuringAcquire(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		client := hangUpClient{Client: limitertest.NewEngineClient(), ran: make(chan struct{})}
		sem, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: "hangup", FailOpen: failOpen}, ratelua.Slots{Max: 2, Lease: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		mw, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Semaphore: sem, Name: "exports"})
		if err != nil {
			t.Fatal(err)
		}
		handled := 0
		h := mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { handled++ }))
		free(t, sem) // loads the script, so that the acquires' EVALSHA runs
		for range 3 {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				h.ServeHTTP(httptest.NewRecorder(), get().WithContext(ctx))
			}()
			<-client.ran
			cancel()
			<-done
		}
		deadline := time.Now().Add(20 * time.Second)
		for free(t, sem) != 2 {
			if time.Now().After(deadline) {
				t.Fatalf("FailOpen %v: %d of 2 slots free 20 s after 3 clients hung up during their acquire", failOpen, free(t, sem))
			}
			time.Sleep(5 * time.Millisecond)
		}
		if handled != 0 {
			t.Errorf("FailOpen %v: %d handlers ran for clients that hung up during the acquire", failOpen, handled)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, get())
		if w.Code != http.StatusOK || handled != 1 {
			t.Fatalf("FailOpen %v: a patient client: %d, %d handled", failOpen, w.Code, handled)
		}
	}
}
