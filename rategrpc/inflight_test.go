package rategrpc_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rategrpc"
)

// TestInFlight: a Semaphore of 2 slots per peer; two open Watch streams
// hold them, a third call fails with ResourceExhausted (RetryInfo: the
// lease); a stream that ends gives its slot back, and a unary call holds
// one only while it runs. Interceptor.Limit, which cannot release, skips
// the semaphore.
func TestInFlight(t *testing.T) {
	eachServer(t, func(t *testing.T, client ratelua.Client) {
		at := time.Unix(1_600_000_000, 0)
		sem, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: t.Name(), Clock: func() time.Time { return at }},
			ratelua.Slots{Max: 2, Lease: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		in, err := rategrpc.New(rategrpc.Options{}, rategrpc.Limit{Semaphore: sem, Name: "inflight"})
		if err != nil {
			t.Fatal(err)
		}
		hc := healthServer(t, grpc.ChainUnaryInterceptor(in.Unary()), grpc.ChainStreamInterceptor(in.Stream()))
		free := func() int64 {
			r, err := sem.Peek(context.Background(), "127.0.0.1")
			if err != nil {
				t.Fatal(err)
			}
			return r.Remaining
		}
		var cancels []context.CancelFunc
		for i := range 2 {
			ctx, cancel := context.WithCancel(context.Background())
			cancels = append(cancels, cancel)
			stream, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := stream.Recv(); err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
		}
		if n := free(); n != 0 {
			t.Fatalf("%d free with two streams open", n)
		}
		exhausted(t, "a third stream", watch(hc), 30*time.Second, "inflight")
		if err := in.Limit(context.Background()); err != nil {
			t.Errorf("Limit with every slot held: %v, want the semaphore skipped", err)
		}
		cancels[0]()
		deadline := time.Now().Add(10 * time.Second)
		for free() != 1 {
			if time.Now().After(deadline) {
				t.Fatal("the slot of a cancelled stream did not come back")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := check(hc); err != nil {
			t.Fatalf("a unary call with a slot free: %v", err)
		}
		if n := free(); n != 1 {
			t.Errorf("%d free after a unary call returned, want its slot back", n)
		}
		cancels[1]()
		for free() != 2 {
			if time.Now().After(deadline) {
				t.Fatal("the slots did not all come back")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := rategrpc.New(rategrpc.Options{}, rategrpc.Limit{Semaphore: sem, Limiter: &ratelua.Limiter{}, Name: "x"}); !errors.Is(err, rategrpc.ErrInvalidConfig) {
			t.Errorf("a Limiter and a Semaphore: %v", err)
		}
	})
}

// TestInFlightReleasedWhenALaterLimitPanics: when a later limit's Key or
// Cost panics, the slots the call already acquired go back, and the panic
// goes on as before (issue 30 row M7).
func TestInFlightReleasedWhenALaterLimitPanics(t *testing.T) {
	eachServer(t, func(t *testing.T, client ratelua.Client) {
		for _, later := range []rategrpc.Limit{
			{Name: "key", Key: func(context.Context, string) (string, bool) { panic("key boom") }},
			{Name: "cost", Cost: func(context.Context, string) int64 { panic("cost boom") }},
		} {
			at := time.Unix(1_700_000_000, 0)
			sem, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: t.Name() + later.Name, Clock: func() time.Time { return at }},
				ratelua.Slots{Max: 2, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			other, err := ratelua.NewConcurrency(client, ratelua.Options{Prefix: t.Name() + later.Name + "-other", Clock: func() time.Time { return at }},
				ratelua.Slots{Max: 2, Lease: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			later.Semaphore = other
			in, err := rategrpc.New(rategrpc.Options{}, rategrpc.Limit{Semaphore: sem, Name: "inflight", Key: func(context.Context, string) (string, bool) { return "k", true }}, later)
			if err != nil {
				t.Fatal(err)
			}
			unary := in.Unary()
			info := &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}
			for i := range 2 {
				func() {
					defer func() {
						if p := recover(); p == nil {
							t.Errorf("%s: call %d: no panic, want the %s function's", later.Name, i, later.Name)
						}
					}()
					_, _ = unary(context.Background(), nil, info, func(context.Context, any) (any, error) {
						t.Error("the handler ran")
						return nil, nil
					})
				}()
			}
			r, err := sem.Peek(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			if r.Remaining != 2 {
				t.Errorf("%d of 2 slots free after 2 calls whose later limit's %s panicked", r.Remaining, later.Name)
			}
		}
	})
}

// lateClient runs every call on the server, then, when an acquire's
// context has a deadline, waits for it and answers its error: the server
// took the slots, the interceptor never learned it (a reply later than
// the call's deadline).
type lateClient struct {
	ratelua.Client
	late *atomic.Int64 // the acquires answered late
}

func (c lateClient) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	err := c.Client.Run(context.WithoutCancel(ctx), call, reply)
	if _, ok := ctx.Deadline(); ok && call.Args[3] == "0" && call.Args[0] != "0" {
		c.late.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}
	return err
}

// TestInFlightDeadlineDuringAcquire: 3 calls with a 5 ms deadline that
// passes while their acquire runs leave both slots free afterwards (their
// leases released by id in the background), FailOpen or not, and a
// patient client then gets a slot (issue 30 row H3: 0 of 2 slots were
// left, and the patient client got ResourceExhausted for 30 s).
func TestInFlightDeadlineDuringAcquire(t *testing.T) {
	eachServer(t, func(t *testing.T, client ratelua.Client) {
		for _, failOpen := range []bool{false, true} {
			late := new(atomic.Int64)
			sem, err := ratelua.NewConcurrency(lateClient{client, late}, ratelua.Options{Prefix: fmt.Sprintf("%s-%v", t.Name(), failOpen), FailOpen: failOpen},
				ratelua.Slots{Max: 2, Lease: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			in, err := rategrpc.New(rategrpc.Options{}, rategrpc.Limit{Semaphore: sem, Name: "inflight"})
			if err != nil {
				t.Fatal(err)
			}
			ran := make(chan struct{}, 100)
			hc := healthServer(t, grpc.ChainUnaryInterceptor(in.Unary(), func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				ran <- struct{}{}
				return h(ctx, req)
			}))
			free := func() int64 {
				r, err := sem.Peek(context.Background(), "127.0.0.1")
				if err != nil {
					t.Fatal(err)
				}
				return r.Remaining
			}
			free() // loads the script, so that the acquires' EVALSHA runs
			// 3 calls whose acquire reaches the server (on a busy machine a
			// 5 ms deadline may pass before: then another call is made).
			for i := 0; late.Load() < 3; i++ {
				if i == 100 {
					t.Fatalf("FailOpen %v: %d of 100 calls with a 5 ms deadline reached the server", failOpen, late.Load())
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
				_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
				cancel()
				if err == nil {
					t.Fatalf("FailOpen %v: call %d with a 5 ms deadline answered", failOpen, i)
				}
			}
			deadline := time.Now().Add(20 * time.Second)
			for free() != 2 {
				if time.Now().After(deadline) {
					t.Fatalf("FailOpen %v: %d of 2 slots free 20 s after 3 calls whose deadline passed during the acquire", failOpen, free())
				}
				time.Sleep(5 * time.Millisecond)
			}
			if len(ran) != 0 {
				t.Errorf("FailOpen %v: %d handlers ran for calls whose acquire ended with the deadline", failOpen, len(ran))
			}
			if err := check(hc); err != nil {
				t.Fatalf("FailOpen %v: a patient client: %v", failOpen, err)
			}
		}
	})
}
