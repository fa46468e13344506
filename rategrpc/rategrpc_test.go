package rategrpc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"github.com/redis/rueidis"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rategrpc"
	"github.com/ratelua/ratelua/testbench"
)

// servers are the redis-server and valkey-server this package's tests
// start for themselves.
var (
	servers    = map[testbench.Kind]*testbench.Node{}
	serverErrs = map[testbench.Kind]error{}
)

func TestMain(m *testing.M) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		n, err := testbench.StartNode(context.Background(), testbench.Options{Kind: kind})
		if err != nil {
			serverErrs[kind] = err
			continue
		}
		servers[kind] = n
	}
	code := m.Run()
	for _, n := range servers {
		n.Close()
	}
	os.Exit(code)
}

// eachServer runs f on a client of each server; a missing server skips,
// or fails under CI=true.
func eachServer(t *testing.T, f func(t *testing.T, client ratelua.Client)) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			n := servers[kind]
			if n == nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s server required under CI=true: %v", kind, serverErrs[kind])
				}
				t.Skipf("no %s server: %v", kind, serverErrs[kind])
			}
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{n.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			f(t, ratelua.Rueidis(c))
		})
	}
}

// testClock is a caller clock the test moves.
type testClock struct{ ms atomic.Int64 }

func (c *testClock) now() time.Time { return time.UnixMilli(c.ms.Load()) }
func (c *testClock) at(d time.Duration) {
	c.ms.Store(time.Unix(1_800_000_000, 0).Add(d).UnixMilli())
}

// healthServer serves the gRPC health service (unary Check, streaming
// Watch) behind opts on a loopback TCP listener and returns a client.
func healthServer(t *testing.T, opts ...grpc.ServerOption) healthpb.HealthClient {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return healthpb.NewHealthClient(conn)
}

// check makes a unary call.
func check(client healthpb.HealthClient, md ...string) error {
	ctx := metadata.AppendToOutgoingContext(context.Background(), md...)
	_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// watch opens a server stream and reads its first message.
func watch(client healthpb.HealthClient) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

// exhausted checks that err is ResourceExhausted with a RetryInfo of
// retry (none when retry < 0) and a QuotaFailure naming policy.
func exhausted(t *testing.T, what string, err error, retry time.Duration, policy string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != codes.ResourceExhausted {
		t.Fatalf("%s: %v, want ResourceExhausted", what, err)
	}
	var gotRetry *errdetails.RetryInfo
	var gotQuota *errdetails.QuotaFailure
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			gotRetry = d
		case *errdetails.QuotaFailure:
			gotQuota = d
		}
	}
	switch {
	case retry < 0 && gotRetry != nil:
		t.Errorf("%s: RetryInfo %v on a call that can never pass", what, gotRetry)
	case retry >= 0 && (gotRetry == nil || gotRetry.GetRetryDelay().AsDuration() != retry):
		t.Errorf("%s: RetryInfo %v, want a retry delay of %v", what, gotRetry, retry)
	}
	if gotQuota == nil || len(gotQuota.Violations) != 1 || gotQuota.Violations[0].Subject != "policy:"+policy {
		t.Errorf("%s: QuotaFailure %v, want policy:%s", what, gotQuota, policy)
	}
}

// TestInterceptors: a real gRPC server and client on loopback: a per-peer
// limit on every call, a per-API-key limit on Check only, a cost above the
// quota; unary and streaming calls fail with ResourceExhausted and a
// RetryInfo of the limiter's wait.
func TestInterceptors(t *testing.T) {
	eachServer(t, func(t *testing.T, client ratelua.Client) {
		clock := &testClock{}
		clock.at(0)
		opts := ratelua.Options{Prefix: t.Name(), Clock: clock.now}
		perPeer, err1 := ratelua.NewSlidingWindow(client, opts,
			ratelua.Window{Max: 3, Duration: 10 * time.Second, Resolution: time.Second},
			ratelua.Window{Max: 5, Duration: time.Hour, Resolution: time.Minute})
		perKey, err2 := ratelua.NewTokenBucket(client, opts, ratelua.Bucket{Capacity: 4, RefillAmount: 1, RefillInterval: 2 * time.Second})
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		in, err := rategrpc.New(rategrpc.Options{},
			rategrpc.Limit{Limiter: perPeer, Name: "peer"},
			rategrpc.Limit{Limiter: perKey, Name: "key", Methods: []string{"/grpc.health.v1.Health/Check"}, Key: rategrpc.ByMetadata("X-Api-Key"),
				Cost: func(ctx context.Context, _ string) int64 {
					md, _ := metadata.FromIncomingContext(ctx)
					if len(md.Get("x-cost")) > 0 {
						var n int64
						fmt.Sscan(md.Get("x-cost")[0], &n)
						return n
					}
					return 1
				}})
		if err != nil {
			t.Fatal(err)
		}
		hc := healthServer(t, grpc.ChainUnaryInterceptor(in.Unary()), grpc.ChainStreamInterceptor(in.Stream()))

		// The API key's bucket holds 4: a cost of 5 can never pass, and
		// once k1 spent 4 it waits 2 s for a token. The peer limit comes
		// first and counts each of these three calls.
		if err := check(hc, "x-api-key", "k1", "x-cost", "4"); err != nil {
			t.Fatalf("first Check: %v", err)
		}
		exhausted(t, "Check costing 5", check(hc, "x-api-key", "k2", "x-cost", "5"), -1, "key")
		exhausted(t, "Check on an empty bucket", check(hc, "x-api-key", "k1"), 2*time.Second, "key")
		// The peer has made 3 calls in 10 s: a stream is denied too, for
		// the 10 s window to pass the first second's bucket.
		clock.at(1500 * time.Millisecond)
		exhausted(t, "Watch", watch(hc), 8500*time.Millisecond, "peer-10s")
		exhausted(t, "Check without a key", check(hc), 8500*time.Millisecond, "peer-10s")
		clock.at(10 * time.Second)
		if err := watch(hc); err != nil {
			t.Fatalf("Watch after 10 s: %v", err)
		}
		if err := check(hc); err != nil {
			t.Fatalf("Check after 10 s: %v", err)
		}
		// Five in the hour: the hour's limit decides now.
		clock.at(20 * time.Second)
		exhausted(t, "a sixth call", watch(hc), time.Hour-20*time.Second, "peer-1h")
	})
}

// TestGoGRPCMiddleware: an Interceptor is the Limiter of go-grpc-middleware's
// ratelimit interceptors, unary and stream.
func TestGoGRPCMiddleware(t *testing.T) {
	eachServer(t, func(t *testing.T, client ratelua.Client) {
		clock := &testClock{}
		clock.at(0)
		l, err := ratelua.NewZSetLog(client, ratelua.Options{Prefix: t.Name(), Clock: clock.now}, ratelua.Log{Max: 1, Window: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		in, err := rategrpc.New(rategrpc.Options{}, rategrpc.Limit{Limiter: l, Name: "per-method", Key: rategrpc.ByMethod()})
		if err != nil {
			t.Fatal(err)
		}
		var _ ratelimit.Limiter = in
		hc := healthServer(t, grpc.ChainUnaryInterceptor(ratelimit.UnaryServerInterceptor(in)), grpc.ChainStreamInterceptor(ratelimit.StreamServerInterceptor(in)))
		if err := check(hc); err != nil {
			t.Fatalf("first Check: %v", err)
		}
		if err := watch(hc); err != nil {
			t.Fatalf("first Watch (another method, another key): %v", err)
		}
		for what, err := range map[string]error{"Check": check(hc), "Watch": watch(hc)} {
			if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), `policy "per-method": retry in 1m0s`) {
				t.Errorf("second %s: %v, want ResourceExhausted quoting the policy and the wait", what, err)
			}
		}
	})
}

// unreachable is a Client whose server never answers.
type unreachable struct{}

func (unreachable) Run(context.Context, ratelua.Call, []int64) error { return syscall.ECONNREFUSED }

// TestNoAnswer: without an answer a fail-closed limiter fails the call
// with Unavailable and a FailOpen one lets it through; OnError sees both.
func TestNoAnswer(t *testing.T) {
	var seen atomic.Int64
	for _, failOpen := range []bool{false, true} {
		l, err := ratelua.NewTokenBucket(unreachable{}, ratelua.Options{FailOpen: failOpen}, ratelua.PerSecond(1, 1))
		if err != nil {
			t.Fatal(err)
		}
		in, err := rategrpc.New(rategrpc.Options{OnError: func(_ context.Context, method string, err error) {
			if method == "/grpc.health.v1.Health/Check" && errors.Is(err, ratelua.ErrUnavailable) {
				seen.Add(1)
			}
		}}, rategrpc.Limit{Limiter: l, Name: "api"})
		if err != nil {
			t.Fatal(err)
		}
		hc := healthServer(t, grpc.ChainUnaryInterceptor(in.Unary()))
		err = check(hc)
		if want := map[bool]codes.Code{false: codes.Unavailable, true: codes.OK}[failOpen]; status.Code(err) != want {
			t.Errorf("fail open %v: %v, want %v", failOpen, err, want)
		}
	}
	if seen.Load() != 2 {
		t.Errorf("OnError saw %d errors, want 2", seen.Load())
	}
}

// TestBadConfiguration: New names what it refuses.
func TestBadConfiguration(t *testing.T) {
	l, err := ratelua.NewTokenBucket(unreachable{}, ratelua.Options{}, ratelua.PerSecond(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		opts   rategrpc.Options
		limits []rategrpc.Limit
		want   string
	}{
		{rategrpc.Options{}, nil, "no limit"},
		{rategrpc.Options{}, []rategrpc.Limit{{Name: "x"}}, "limit 0 has no Limiter"},
		{rategrpc.Options{}, []rategrpc.Limit{{Limiter: l}}, "limit 0 has no Name"},
		{rategrpc.Options{}, []rategrpc.Limit{{Limiter: l, Name: "x", Methods: []string{"grpc.health.v1.Health/Check"}}}, `method "grpc.health.v1.Health/Check" must start with '/'`},
		{rategrpc.Options{IPv6Prefix: 129}, []rategrpc.Limit{{Limiter: l, Name: "x"}}, "IPv6Prefix must be 1 to 128 (0 means 64), got 129"},
	} {
		in, err := rategrpc.New(tt.opts, tt.limits...)
		if in != nil || !errors.Is(err, rategrpc.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New: %v, %v; want an ErrInvalidConfig saying %s", in, err, tt.want)
		}
	}
}
