package rategrpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rategrpc"
)

// callStream is a server stream of a call that only has a context.
type callStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s callStream) Context() context.Context { return s.ctx }

// TestReserveSettles: a unary call reserves its estimate and the cost its
// handler reports is settled when it returns, or panics; a stream holds
// its estimate while it runs and is settled when it ends; a call that a
// later limit denies gives its reservation back; Interceptor.Limit skips
// the Reserve; a Reserve on a script without reservations is refused.
func TestReserveSettles(t *testing.T) {
	eachServer(t, func(t *testing.T, client ratelua.Client) {
		ctx := context.Background()
		at := time.Unix(1_700_000_000, 0)
		tokens, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: t.Name(), Clock: func() time.Time { return at }},
			ratelua.Bucket{Capacity: 100, RefillAmount: 100, RefillInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		left := func() int64 {
			r, err := tokens.Peek(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			return r.Remaining
		}
		key := func(context.Context, string) (string, bool) { return "k", true }
		in, err := rategrpc.New(rategrpc.Options{}, rategrpc.Limit{Limiter: tokens, Name: "tokens", Key: key,
			Reserve: func(context.Context, string) int64 { return 30 }})
		if err != nil {
			t.Fatal(err)
		}
		unary := in.Unary()
		info := &grpc.UnaryServerInfo{FullMethod: "/llm.Model/Complete"}
		var during int64
		if _, err := unary(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
			during = left()
			if !rategrpc.Settle(ctx, 4) {
				t.Error("Settle: no reservation on the call")
			}
			return nil, nil
		}); err != nil || during != 70 || left() != 96 {
			t.Fatalf("a unary call reporting 4: %v, %d left while it ran, %d after, want 70 and 96", err, during, left())
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the handler's panic did not go on")
				}
			}()
			unary(ctx, nil, info, func(ctx context.Context, _ any) (any, error) {
				rategrpc.Settle(ctx, 5)
				panic("boom")
			})
		}()
		if n := left(); n != 91 {
			t.Fatalf("%d left after a panic that reported 5, want 91", n)
		}
		// A stream: settled at its end.
		stream := in.Stream()
		opened, end := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- stream(nil, callStream{ctx: ctx}, &grpc.StreamServerInfo{FullMethod: "/llm.Model/Stream"}, func(_ any, ss grpc.ServerStream) error {
				close(opened)
				<-end
				rategrpc.Settle(ss.Context(), 10)
				return nil
			})
		}()
		<-opened
		if n := left(); n != 61 {
			t.Fatalf("%d left while the stream runs, want 61", n)
		}
		close(end)
		if err := <-done; err != nil || left() != 81 {
			t.Fatalf("the stream ended: %v, %d left, want 81", err, left())
		}
		if err := in.Limit(ctx); err != nil || left() != 81 {
			t.Fatalf("Limit: %v, %d left, want the Reserve skipped", err, left())
		}
		// A later limit denies: the reservation goes back.
		other, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: t.Name() + "-other", Clock: func() time.Time { return at }},
			ratelua.Bucket{Capacity: 1, RefillAmount: 1, RefillInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Allow(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		in2, err := rategrpc.New(rategrpc.Options{},
			rategrpc.Limit{Limiter: tokens, Name: "tokens", Key: key, Reserve: func(context.Context, string) int64 { return 30 }},
			rategrpc.Limit{Limiter: other, Name: "calls", Key: key})
		if err != nil {
			t.Fatal(err)
		}
		_, err = in2.Unary()(ctx, nil, info, func(context.Context, any) (any, error) { t.Error("the handler ran"); return nil, nil })
		if status.Code(err) != codes.ResourceExhausted || left() != 81 {
			t.Fatalf("denied by a later limit: %v, %d left, want 81", err, left())
		}
		ar, err := ratelua.NewAR1(client, ratelua.Options{}, ratelua.Decay{Max: 5, Factor: 2, Resolution: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rategrpc.New(rategrpc.Options{}, rategrpc.Limit{Limiter: ar, Name: "w", Reserve: func(context.Context, string) int64 { return 1 }}); !errors.Is(err, rategrpc.ErrInvalidConfig) {
			t.Errorf("a Reserve on ar1: %v", err)
		}
	})
}

// TestReserveSettlesOnHangUp: a Watch stream whose client hangs up ends,
// and the cost reported when its handler returns is settled.
func TestReserveSettlesOnHangUp(t *testing.T) {
	eachServer(t, func(t *testing.T, client ratelua.Client) {
		at := time.Unix(1_700_000_000, 0)
		tokens, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: t.Name(), Clock: func() time.Time { return at }},
			ratelua.Bucket{Capacity: 100, RefillAmount: 100, RefillInterval: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		left := func() int64 {
			r, err := tokens.Peek(context.Background(), "k")
			if err != nil {
				t.Fatal(err)
			}
			return r.Remaining
		}
		in, err := rategrpc.New(rategrpc.Options{}, rategrpc.Limit{Limiter: tokens, Name: "tokens",
			Key:     func(context.Context, string) (string, bool) { return "k", true },
			Reserve: func(context.Context, string) int64 { return 40 }})
		if err != nil {
			t.Fatal(err)
		}
		// After rategrpc's interceptor: reports 7 when the handler returns.
		report := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
			err := handler(srv, ss)
			rategrpc.Settle(ss.Context(), 7)
			return err
		}
		hc := healthServer(t, grpc.ChainStreamInterceptor(in.Stream(), report))
		ctx, cancel := context.WithCancel(context.Background())
		stream, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
		if n := left(); n != 60 {
			t.Fatalf("%d left while the stream is open, want 60", n)
		}
		cancel()
		deadline := time.Now().Add(10 * time.Second)
		for left() != 93 {
			if time.Now().After(deadline) {
				t.Fatalf("%d left 10 s after the client hung up, want 93 (the 7 reported settled)", left())
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}
