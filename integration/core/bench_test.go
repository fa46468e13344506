package core

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/mock"
	"go.uber.org/mock/gomock"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/testbench"
)

// cannedClient answers every command with one canned reply, so that a
// benchmark measures only the client side of Allow: building the key and
// the arguments, running rueidis.Lua and decoding the reply.
type cannedClient struct {
	*mock.Client
	reply rueidis.RedisResult
}

func (c cannedClient) Do(context.Context, rueidis.Completed) rueidis.RedisResult { return c.reply }

func (c cannedClient) DoMulti(_ context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	out := make([]rueidis.RedisResult, len(cmds))
	for i := range out {
		out[i] = c.reply
	}
	return out
}

// BenchmarkAllowCanned: client-side ns/op and allocs/op of Allow.
func BenchmarkAllowCanned(b *testing.B) {
	client := cannedClient{Client: mock.NewClient(gomock.NewController(b)), reply: ints(1, 4, 0, 3600000, 2)}
	l, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{}, login.Windows()...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(ctx, "203.0.113.7"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAllowCannedObserved: Allow with a hook that counts the events
// (what a hook costs when set: two clock reads and the call).
func BenchmarkAllowCannedObserved(b *testing.B) {
	client := cannedClient{Client: mock.NewClient(gomock.NewController(b)), reply: ints(1, 4, 0, 3600000, 2)}
	var events int
	l, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{Observe: func(context.Context, ratelua.Event) { events++ }}, login.Windows()...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(ctx, "203.0.113.7"); err != nil {
			b.Fatal(err)
		}
	}
	if events == 0 {
		b.Fatal("the hook saw nothing")
	}
}

// BenchmarkAllowDenyCacheHit: Allow answered by the deny cache, no round
// trip.
func BenchmarkAllowDenyCacheHit(b *testing.B) {
	client := cannedClient{Client: mock.NewClient(gomock.NewController(b)), reply: ints(0, 0, 3600000, 3600000, 2)}
	l, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{DenyCache: 1000}, login.Windows()...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if r, err := l.Allow(ctx, "203.0.113.7"); err != nil || r.Allowed {
		b.Fatal(r, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if r, _ := l.Allow(ctx, "203.0.113.7"); r.Allowed {
			b.Fatal("allowed")
		}
	}
}

// BenchmarkAllowBatchCanned: client side of a 100-key batch, per batch.
func BenchmarkAllowBatchCanned(b *testing.B) {
	client := cannedClient{Client: mock.NewClient(gomock.NewController(b)), reply: ints(1, 4, 0, 3600000, 2)}
	l, _ := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{}, ratelua.PerSecond(10, 20))
	requests := make([]ratelua.Request, 100)
	for i := range requests {
		requests[i] = ratelua.Request{Key: "k" + strconv.Itoa(i), N: 1}
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l.AllowBatch(ctx, requests)
	}
}

// BenchmarkAllowServer: end-to-end decisions per second on the local
// servers, 10,000 event keys, parallel callers (rueidis auto-pipelines).
func BenchmarkAllowServer(b *testing.B) {
	for _, kind := range []string{"redis", "valkey"} {
		b.Run(kind, func(b *testing.B) {
			s := h.Node(b, testbench.Kind(kind))
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			builders := map[string]func() (*ratelua.Limiter, error){ratelua.SlidingWindow: func() (*ratelua.Limiter, error) {
				return ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{Prefix: "bench"}, ratelua.Window{Max: 100, Duration: time.Minute, Resolution: time.Second})
			}, ratelua.AR1: func() (*ratelua.Limiter, error) {
				return ratelua.NewAR1(ratelua.Rueidis(client), ratelua.Options{Prefix: "bench"}, ratelua.Decay{Max: 100, Factor: 1.1, Resolution: time.Second})
			}, ratelua.ZSetLog: func() (*ratelua.Limiter, error) {
				return ratelua.NewZSetLog(ratelua.Rueidis(client), ratelua.Options{Prefix: "bench"}, ratelua.Log{Max: 100, Window: time.Minute})
			}, ratelua.TokenBucket: func() (*ratelua.Limiter, error) {
				return ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "bench"}, ratelua.PerSecond(100, 100))
			},
			}
			for _, name := range []string{ratelua.SlidingWindow, ratelua.AR1, ratelua.ZSetLog, ratelua.TokenBucket} {
				b.Run(name, func(b *testing.B) {
					l, err := builders[name]()
					if err != nil {
						b.Fatal(err)
					}
					ctx := context.Background()
					b.SetParallelism(16)
					start := time.Now()
					b.RunParallel(func(pb *testing.PB) {
						i := 0
						for pb.Next() {
							i++
							if _, err := l.Allow(ctx, strconv.Itoa(i%10000)); err != nil {
								b.Error(err)
								return
							}
						}
					})
					b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
				})
			}
		})
	}
}
