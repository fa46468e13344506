package middleware

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/ratehttp"
	"github.com/ratelua/ratelua/testbench"
)

// cannedClient answers every command with one canned reply, so that the
// benchmark measures the client side only (as the root package's
// BenchmarkAllowCanned does).
type cannedClient struct {
	*mock.Client
	reply rueidis.RedisResult
}

func (c cannedClient) Do(context.Context, rueidis.Completed) rueidis.RedisResult { return c.reply }

func canned(b *testing.B) *ratelua.Limiter {
	msgs := make([]rueidis.RedisMessage, 5)
	for i, x := range []int64{1, 4, 0, 3600000, 2} {
		msgs[i] = mock.RedisInt64(x)
	}
	client := cannedClient{Client: mock.NewClient(gomock.NewController(b)), reply: mock.Result(mock.RedisArray(msgs...))}
	l, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{}, login.Windows()...)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// discard is a ResponseWriter that keeps its header map between requests,
// as a server's connection does not: what the benchmark counts is the
// middleware's work, not the recorder's.
type discard struct{ h http.Header }

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkMiddlewareCanned: the middleware's own cost per request next to
// a bare Allow, both on a canned reply (the login case's two limits): the
// client address, the call, the RateLimit-Policy and RateLimit fields.
func BenchmarkMiddlewareCanned(b *testing.B) {
	l := canned(b)
	ctx := context.Background()
	b.Run("Allow", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := l.Allow(ctx, "203.0.113.7"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Middleware", func(b *testing.B) {
		mw, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Limiter: l, Name: "login"})
		if err != nil {
			b.Fatal(err)
		}
		h := mw.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		r := httptest.NewRequest("POST", "/login", nil)
		r.RemoteAddr = "203.0.113.7:41000"
		w := &discard{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			clear(w.h)
			h.ServeHTTP(w, r)
		}
		if w.h.Get("RateLimit") != `"login-1h";r=4;t=3600` {
			b.Fatalf("RateLimit %q", w.h.Get("RateLimit"))
		}
	})
}

// BenchmarkHTTPServer: requests per second through a real HTTP server
// (loopback TCP, keep-alive, 32 parallel clients) with and without the
// middleware, on a real redis-server: a token bucket per X-Client key out
// of 10,000.
func BenchmarkHTTPServer(b *testing.B) {
	n := h.Node(b, testbench.Redis)
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{n.Addr}, DisableCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	l, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "bench-http"}, ratelua.PerSecond(1_000_000, 1_000_000))
	if err != nil {
		b.Fatal(err)
	}
	mw, err := ratehttp.New(ratehttp.Options{}, ratehttp.Limit{Limiter: l, Name: "api", Key: ratehttp.ByHeader("X-Client")})
	if err != nil {
		b.Fatal(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello\n") })
	for _, tt := range []struct {
		name string
		h    http.Handler
	}{{"bare", hello}, {"ratehttp", mw.Handler(hello)}} {
		b.Run(tt.name, func(b *testing.B) {
			srv := httptest.NewServer(tt.h)
			defer srv.Close()
			transport := &http.Transport{MaxIdleConnsPerHost: 64}
			defer transport.CloseIdleConnections()
			hc := &http.Client{Transport: transport}
			var seq atomic.Int64
			b.SetParallelism(16) // x GOMAXPROCS clients
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req, _ := http.NewRequest("GET", srv.URL, nil)
					req.Header.Set("X-Client", strconv.FormatInt(seq.Add(1)%10_000, 10))
					resp, err := hc.Do(req)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Errorf("status %d", resp.StatusCode)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}
