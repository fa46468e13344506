package rategrpc_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/ratelimit"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rategrpc"
)

// TestRetryInfoThroughGoGRPCMiddleware: go-grpc-middleware's ratelimit
// interceptors answer with a status of their own; the denial's RetryInfo
// and QuotaFailure still reach the client, unary and stream.
func TestRetryInfoThroughGoGRPCMiddleware(t *testing.T) {
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
		hc := healthServer(t, grpc.ChainUnaryInterceptor(ratelimit.UnaryServerInterceptor(in)), grpc.ChainStreamInterceptor(ratelimit.StreamServerInterceptor(in)))
		if err := check(hc); err != nil {
			t.Fatalf("first Check: %v", err)
		}
		if err := watch(hc); err != nil {
			t.Fatalf("first Watch: %v", err)
		}
		exhausted(t, "second Check", check(hc), time.Minute, "per-method")
		exhausted(t, "second Watch", watch(hc), time.Minute, "per-method")
	})
}

// TestClientBehindTrustedProxies: behind a trusted proxy (the test's
// client, on loopback) the key is the rightmost untrusted address of the
// x-forwarded-for metadata (or forwarded, strictly parsed), with the rules
// ratehttp uses; from an untrusted peer the metadata is ignored.
func TestClientBehindTrustedProxies(t *testing.T) {
	eachServer(t, func(t *testing.T, client ratelua.Client) {
		for _, tt := range []struct {
			name    string
			opts    rategrpc.Options
			md      []string
			wantKey string
		}{
			{"trusted, x-forwarded-for", rategrpc.Options{TrustedProxies: []string{"127.0.0.1"}},
				[]string{"x-forwarded-for", "6.6.6.6, 198.51.100.7"}, "198.51.100.7"},
			{"trusted, two metadata values", rategrpc.Options{TrustedProxies: []string{"127.0.0.0/8"}},
				[]string{"x-forwarded-for", "6.6.6.6", "x-forwarded-for", "198.51.100.7, 127.0.0.2"}, "198.51.100.7"},
			{"trusted, forwarded", rategrpc.Options{TrustedProxies: []string{"127.0.0.1"}, ProxyHeader: "Forwarded"},
				[]string{"forwarded", `for=6.6.6.6, for="[2001:db8:1::7]:443"`}, "2001:db8:1::/64"},
			{"trusted, forwarded with an unbalanced quote", rategrpc.Options{TrustedProxies: []string{"127.0.0.1"}, ProxyHeader: "Forwarded"},
				[]string{"forwarded", `for=9.9.9.9;x=", for=1.2.3.4`}, "127.0.0.1"},
			{"untrusted peer", rategrpc.Options{TrustedProxies: []string{"10.0.0.0/8"}},
				[]string{"x-forwarded-for", "198.51.100.7"}, "127.0.0.1"},
			{"no proxy trusted", rategrpc.Options{},
				[]string{"x-forwarded-for", "198.51.100.7"}, "127.0.0.1"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				l, err := ratelua.NewZSetLog(client, ratelua.Options{Prefix: prefixOf(t)}, ratelua.Log{Max: 1, Window: time.Hour})
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var keys []string
				var in *rategrpc.Interceptor
				probe := rategrpc.Limit{Limiter: l, Name: "probe", Key: func(ctx context.Context, _ string) (string, bool) {
					mu.Lock()
					keys = append(keys, in.ClientKey(ctx))
					mu.Unlock()
					return "", false
				}}
				in, err = rategrpc.New(tt.opts, probe, rategrpc.Limit{Limiter: l, Name: "client"})
				if err != nil {
					t.Fatal(err)
				}
				hc := healthServer(t, grpc.ChainUnaryInterceptor(in.Unary()))
				if err := check(hc, tt.md...); err != nil {
					t.Fatalf("first call: %v", err)
				}
				// The same client, whatever it writes to the left, is
				// denied: 1 per hour.
				again := append([]string{}, tt.md...)
				again[1] = "5.5.5.5, " + again[1]
				if tt.md[0] == "forwarded" {
					again[1] = "for=5.5.5.5, " + tt.md[1]
				}
				if st, _ := status.FromError(check(hc, again...)); st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), `policy "client"`) {
					t.Errorf("second call: %v, want ResourceExhausted by policy client", st)
				}
				mu.Lock()
				defer mu.Unlock()
				if len(keys) != 2 || keys[0] != tt.wantKey || keys[1] != tt.wantKey {
					t.Errorf("keys %v, want %s twice", keys, tt.wantKey)
				}
			})
		}
	})
}

// prefixOf is a key prefix of t's own.
func prefixOf(t *testing.T) string {
	return "edge-" + time.Now().Format("150405.000000") + "-" + t.Name()
}
