package reference

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratelua/ratelua/testbench"
)

// loadResult is one load run's throughput and latency.
type loadResult struct {
	rps      float64
	p50, p99 time.Duration
	errors   int
}

// load drives s with clients concurrent callers for d, each request
// holding descriptors descriptors over 1,000 user keys (and, past the
// first, paths), and measures every call.
func load(s *service, clients, descriptors int, d time.Duration) loadResult {
	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 5))
			var mine []time.Duration
			bad := 0
			for time.Now().Before(stop) {
				req := &pb.RateLimitRequest{Domain: "bench"}
				for i := range descriptors {
					key := "user"
					if i > 0 {
						key = "path"
					}
					req.Descriptors = append(req.Descriptors, &rlpb.RateLimitDescriptor{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: key, Value: strconv.Itoa(r.IntN(1000))}}})
				}
				start := time.Now()
				_, err := s.client.ShouldRateLimit(context.Background(), req)
				mine = append(mine, time.Since(start))
				if err != nil {
					bad++
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	return loadResult{
		rps:    float64(len(lat)) / d.Seconds(),
		p50:    lat[len(lat)/2],
		p99:    lat[len(lat)*99/100],
		errors: errs,
	}
}

// BenchmarkAgainstReference drives envoyproxy/ratelimit and ratelua-rls
// (each on its own redis-server) with the same gRPC load: RLS_BENCH_CLIENTS
// concurrent callers (default 1, 8 and 32), 1 and 5 descriptors per
// request over 1,000 keys, RLS_BENCH_SECONDS each (default 5); ratelua-rls
// once with the reference's configuration and once deciding three sliding
// windows per rule. It reports requests per second and p50/p99 latency of
// each, and ours as ratios to the reference's. Run it with make bench-rls
// (-benchtime=1x: one measured run); RLS_BENCH_STATSD=1 turns statsd on
// in every service.
func BenchmarkAgainstReference(b *testing.B) {
	bins, err := binaries()
	if err != nil {
		b.Fatal(err)
	}
	secs := 5
	if v, err := strconv.Atoi(os.Getenv("RLS_BENCH_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	clientCounts := []int{1, 8, 32}
	if v, err := strconv.Atoi(os.Getenv("RLS_BENCH_CLIENTS")); err == nil && v > 0 {
		clientCounts = []int{v}
	}
	// RLS_BENCH_STATSD=1 runs both services with statsd on (the
	// reference's default), to a UDP sink of the bench that drops what it
	// reads.
	var extra []string
	if os.Getenv("RLS_BENCH_STATSD") == "1" {
		sink, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { sink.Close() })
		go func() {
			buf := make([]byte, 65536)
			for {
				if _, _, err := sink.ReadFrom(buf); err != nil {
					return
				}
			}
		}()
		port := sink.LocalAddr().(*net.UDPAddr).Port
		extra = []string{"USE_STATSD=true", "STATSD_HOST=127.0.0.1", fmt.Sprintf("STATSD_PORT=%d", port)}
		fmt.Println("statsd on (USE_STATSD=true) in every service, to a sink on port", port)
	}
	refRedis := testbench.StartSingle(b, testbench.Options{Kind: testbench.Redis})
	ourRedis := testbench.StartSingle(b, testbench.Options{Kind: testbench.Redis})
	extRedis := testbench.StartSingle(b, testbench.Options{Kind: testbench.Redis})
	ref := startService(b, "reference", bins["reference"], "testdata/bench", refRedis.Addr, false, extra...)
	ours := startService(b, "ratelua-rls", bins["ratelua-rls"], "testdata/bench", ourRedis.Addr, false, extra...)
	ext := startService(b, "ratelua-rls-sliding", bins["ratelua-rls"], "testdata/benchext", extRedis.Addr, false, extra...)
	// RLS_BENCH_BEFORE names another ratelua-rls binary (e.g. the last
	// release's) measured in the same run on the reference's configs, so
	// that a change is shown before and after side by side.
	var before *service
	if path := os.Getenv("RLS_BENCH_BEFORE"); path != "" {
		beforeRedis := testbench.StartSingle(b, testbench.Options{Kind: testbench.Redis})
		before = startService(b, "ratelua-rls-before", path, "testdata/bench", beforeRedis.Addr, false, extra...)
	}
	d := time.Duration(secs) * time.Second
	for range b.N {
		for _, clients := range clientCounts {
			for _, descriptors := range []int{1, 5} {
				// Warm up each (connections, scripts), then measure.
				for _, s := range []*service{ref, ours, ext} {
					load(s, clients, descriptors, 300*time.Millisecond)
				}
				r := load(ref, clients, descriptors, d)
				o := load(ours, clients, descriptors, d)
				e := load(ext, clients, descriptors, d)
				line := fmt.Sprintf("clients=%d descriptors=%d | reference %.0f rps p50 %v p99 %v | ratelua-rls %.0f rps (x%.2f) p50 %v (x%.2f) p99 %v (x%.2f) | sliding x3 %.0f rps (x%.2f) p99 %v (x%.2f) | errors %d/%d/%d | p99 below Envoy's 20 ms by %v",
					clients, descriptors, r.rps, r.p50, r.p99,
					o.rps, o.rps/r.rps, o.p50, float64(o.p50)/float64(r.p50), o.p99, float64(o.p99)/float64(r.p99),
					e.rps, e.rps/r.rps, e.p99, float64(e.p99)/float64(r.p99),
					r.errors, o.errors, e.errors, 20*time.Millisecond-max(o.p99, e.p99))
				if before != nil {
					load(before, clients, descriptors, 300*time.Millisecond)
					p := load(before, clients, descriptors, d)
					line += fmt.Sprintf(" | before (RLS_BENCH_BEFORE) %.0f rps p99 %v: ratelua-rls now x%.2f rps, p99 x%.2f",
						p.rps, p.p99, o.rps/p.rps, float64(o.p99)/float64(p.p99))
				}
				fmt.Println(line)
				reportCases(line)
			}
		}
	}
}
