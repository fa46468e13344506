package testbench

import (
	"context"
	"testing"
	"time"
)

// The benchmarks time what a test waits for, on each provider and server
// family side by side: a node's start, a six-node cluster's start, a
// master's crash until its replica serves its slots, and a graceful
// failover. A sub-benchmark is <provider>/<kind>; "docker" runs the image
// of RATELUA_DOCKER_IMAGE (or the official images) and skips without an
// engine or image (fails under CI=true). Each operation takes seconds, so
// give a count:
//
//	go test -run '^$' -bench . -benchtime 5x ./testbench/
//
// ns/op is the mean; the ms/... metrics say the same in milliseconds.

// benchProviders are the providers compared, by sub-benchmark name.
func benchProviders() []struct {
	name string
	prov Provider
} {
	return []struct {
		name string
		prov Provider
	}{{"processes", Processes()}, {"docker", Docker("")}}
}

// eachProvider runs f as a sub-benchmark for every provider and kind that
// can run here.
func eachProvider(b *testing.B, f func(b *testing.B, opts Options)) {
	for _, p := range benchProviders() {
		b.Run(p.name, func(b *testing.B) {
			for _, kind := range kinds {
				b.Run(string(kind), func(b *testing.B) {
					ctx, cancel := context.WithTimeout(b.Context(), checkTimeout)
					err := p.prov.Check(ctx, kind)
					cancel()
					if err != nil {
						unavailable(b, err)
						return
					}
					f(b, Options{Kind: kind, Provider: p.prov})
				})
			}
		})
	}
}

// reportMS adds d (the total of b.N operations) as milliseconds per
// operation under unit.
func reportMS(b *testing.B, d time.Duration, unit string) {
	b.ReportMetric(float64(d.Microseconds())/1000/float64(b.N), unit)
}

// BenchmarkNodeStart times StartNode: from launching a single node until it
// answers PING and INFO as itself. Close is not timed.
func BenchmarkNodeStart(b *testing.B) {
	eachProvider(b, func(b *testing.B, opts Options) {
		var total time.Duration
		b.StopTimer()
		b.ResetTimer()
		for range b.N {
			b.StartTimer()
			start := time.Now()
			n, err := StartNode(b.Context(), opts)
			total += time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if err := n.Close(); err != nil {
				b.Fatal(err)
			}
		}
		reportMS(b, total, "ms/start")
	})
}

// BenchmarkClusterStart times StartCluster of 3 masters and 3 replicas:
// from launching the nodes until WaitHealthy passes. Close is not timed.
func BenchmarkClusterStart(b *testing.B) {
	eachProvider(b, func(b *testing.B, opts Options) {
		var total time.Duration
		b.StopTimer()
		b.ResetTimer()
		for range b.N {
			b.StartTimer()
			start := time.Now()
			c, err := StartCluster(b.Context(), opts)
			total += time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Close(); err != nil {
				b.Fatal(err)
			}
		}
		reportMS(b, total, "ms/healthy")
	})
}

// benchCluster starts a six-node cluster for b, outside the timer.
func benchCluster(b *testing.B, opts Options) *Cluster {
	b.Helper()
	b.StopTimer()
	c, err := StartCluster(b.Context(), opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkFailoverKill times a crash: from Kill of the master of slot 0
// until another node serves slot 0 (ns/op, ms/promoted), and until the
// cluster is healthy again without it (ms/healthy). The killed node's
// Restart as a replica and the wait for health are not timed.
func BenchmarkFailoverKill(b *testing.B) {
	eachProvider(b, func(b *testing.B, opts Options) {
		c := benchCluster(b, opts)
		ctx := b.Context()
		var promoted, healthy time.Duration
		b.StopTimer()
		b.ResetTimer()
		for range b.N {
			old, err := c.MasterOf(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			if err := old.Kill(); err != nil {
				b.Fatal(err)
			}
			for {
				if m, _ := c.MasterOf(ctx, 0); m != nil && m != old {
					break
				}
				if time.Since(start) > defaultWaitTimeout {
					b.Fatalf("no replica of %v took over within %v", old, defaultWaitTimeout)
				}
				time.Sleep(10 * time.Millisecond)
			}
			promoted += time.Since(start)
			b.StopTimer()
			if err := c.WaitHealthy(ctx); err != nil {
				b.Fatal(err)
			}
			healthy += time.Since(start)
			if err := old.Restart(ctx); err != nil {
				b.Fatal(err)
			}
			if err := c.WaitHealthy(ctx); err != nil {
				b.Fatal(err)
			}
		}
		reportMS(b, promoted, "ms/promoted")
		reportMS(b, healthy, "ms/healthy")
	})
}

// BenchmarkFailoverGraceful times Cluster.Failover of the master of slot 0
// (CLUSTER FAILOVER on its replica): until the roles have swapped and the
// cluster is healthy.
func BenchmarkFailoverGraceful(b *testing.B) {
	eachProvider(b, func(b *testing.B, opts Options) {
		c := benchCluster(b, opts)
		ctx := b.Context()
		var total time.Duration
		b.StopTimer()
		b.ResetTimer()
		for range b.N {
			old, err := c.MasterOf(ctx, 0)
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			start := time.Now()
			_, err = c.Failover(ctx, old)
			total += time.Since(start)
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
		}
		reportMS(b, total, "ms/failover")
	})
}
