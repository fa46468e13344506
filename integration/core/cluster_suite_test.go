package core

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/internal/keyslot"
	"github.com/ratelua/ratelua/testbench"
)

// TestClusterLimitersSpreadOverMasters: every limiter on event keys that
// land on all three masters decides exactly as on a single node.
func TestClusterLimitersSpreadOverMasters(t *testing.T) {
	onCluster(t, func(t *testing.T, client rueidis.Client, c *testbench.Cluster) {
		ctx := context.Background()
		at := time.Unix(1_800_000_000, 0)
		limiters := login.Limiters(t, ratelua.Rueidis(client), ratelua.Options{Prefix: "spread", Clock: func() time.Time { return at }})
		keys := make([]string, 300)
		masters := map[string]bool{}
		for i := range keys {
			keys[i] = "user-" + strconv.Itoa(i)
			m, err := c.MasterOf(ctx, int(keyslot.Slot(limiters[ratelua.SlidingWindow].Key(keys[i]))))
			if err != nil {
				t.Fatal(err)
			}
			masters[m.Addr] = true
		}
		if len(masters) != 3 {
			t.Fatalf("event keys on %d masters, want 3", len(masters))
		}
		for name, l := range limiters {
			requests := make([]ratelua.Request, len(keys))
			for i, k := range keys {
				requests[i] = ratelua.Request{Key: k, N: 1}
			}
			for round, wantAllowed := range []bool{true, false} {
				for i, o := range l.AllowBatch(ctx, requests) {
					if o.Err != nil || o.Result.Allowed != wantAllowed {
						t.Fatalf("%s round %d key %d: %+v", name, round, i, o)
					}
				}
			}
			if r, err := l.Peek(ctx, keys[7]); err != nil || r.Allowed {
				t.Errorf("%s Peek: %+v %v", name, r, err)
			}
			if err := l.ResetMany(ctx, keys); err != nil {
				t.Fatal(err)
			}
			if r, err := l.Allow(ctx, keys[7]); err != nil || !r.Allowed {
				t.Errorf("%s after ResetMany: %+v %v", name, r, err)
			}
		}
		report, err := ratelua.NewRegistry().Load(ctx, ratelua.Rueidis(client))
		if err != nil || len(report) < 3 {
			t.Errorf("Load on the cluster: %+v, %v", report, err)
		}
		t.Logf("Load reached %d nodes", len(report))
		fn, err := ratelua.LoadFunctions(ctx, ratelua.Rueidis(client), newestLibrary(t))
		if err != nil || len(fn) != 3 {
			t.Errorf("LoadFunctions on the masters: %+v, %v", fn, err)
		}
		// After ResetMany only keys[7] holds state, once per limiter; add
		// keys on every master and wipe them all.
		tb := limiters[ratelua.TokenBucket]
		requests := make([]ratelua.Request, len(keys))
		for i, k := range keys {
			requests[i] = ratelua.Request{Key: k, N: 1}
		}
		tb.AllowBatch(ctx, requests)
		n, err := ratelua.ResetPrefix(ctx, ratelua.Rueidis(client), "spread", false, nil)
		if err != nil || n != int64(len(keys))+3 {
			t.Errorf("ResetPrefix over 3 masters: %d deleted, %v; want %d", n, err, len(keys)+3)
		}
	})
}

func TestClusterAtomicity(t *testing.T) {
	onCluster(t, func(t *testing.T, client rueidis.Client, c *testbench.Cluster) { checkAtomicity(t, client) })
}

func TestClusterDifferential(t *testing.T) {
	onCluster(t, func(t *testing.T, client rueidis.Client, c *testbench.Cluster) {
		// The sequence sends raw EVALSHA: load the scripts on every node
		// first, whatever ran before.
		if _, err := ratelua.NewRegistry().Load(context.Background(), ratelua.Rueidis(client)); err != nil {
			t.Fatal(err)
		}
		differential(t, context.Background(), client, string(c.Kind)+"-cluster", 2000)
	})
}

// faultStats is what callers saw while a fault happened.
type faultStats struct {
	calls, errors, wrong int64
	recovery             time.Duration // from the fault to the last error
}

// underFault keeps 8 callers deciding 3,000 event keys (token buckets of 3,
// caller clock frozen so nothing refills) while fault runs, and counts the
// errors they see and the wrong decisions: a key admitted more than 3 times.
func underFault(t *testing.T, client rueidis.Client, prefix string, functions bool, fault func()) faultStats {
	t.Helper()
	at := time.Unix(1_800_000_000, 0)
	l, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: prefix, Clock: func() time.Time { return at }, Functions: functions}, ratelua.Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	const keys = 3000
	var admitted [keys]atomic.Int64
	var stats faultStats
	var lastErr atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; ; i += 8 {
				select {
				case <-stop:
					return
				default:
				}
				// A deadline well above any stall of a loaded machine: the
				// faults that must cause no error (flush, migration) are
				// judged on the client's handling, not on the machine.
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				r, err := l.Allow(ctx, strconv.Itoa(i%keys))
				cancel()
				atomic.AddInt64(&stats.calls, 1)
				if err != nil {
					atomic.AddInt64(&stats.errors, 1)
					lastErr.Store(time.Now().UnixNano())
					continue
				}
				if r.Allowed {
					admitted[i%keys].Add(1)
				}
			}
		}()
	}
	// The callers are deciding before the fault, and keep deciding after
	// it: at least a second and 500 more calls (counted, not slept: a
	// loaded machine makes fewer calls in a second).
	callsReach := func(what string, n int64, atLeast time.Duration) {
		t.Helper()
		start := time.Now()
		for atomic.LoadInt64(&stats.calls) < n || time.Since(start) < atLeast {
			if time.Since(start) > time.Minute {
				close(stop)
				wg.Wait()
				t.Fatalf("%s: %d calls in a minute, want %d", what, atomic.LoadInt64(&stats.calls), n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	callsReach("before the fault", 200, 0)
	began := time.Now()
	fault()
	callsReach("after the fault", atomic.LoadInt64(&stats.calls)+500, time.Second)
	close(stop)
	wg.Wait()
	for i := range admitted {
		if admitted[i].Load() > 3 {
			stats.wrong++
		}
	}
	if last := lastErr.Load(); last > began.UnixNano() {
		stats.recovery = time.Duration(last - began.UnixNano())
	}
	return stats
}

// TestClusterFaults injects each fault into a dedicated six-node cluster
// while callers keep deciding, and reports the errors callers saw and the
// wrong decisions (which must be zero).
func TestClusterFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("long: faults on a six-node cluster")
	}
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			c := testbench.Start(t, testbench.Options{Kind: kind})
			client := clusterClient(t, c)
			ctx := context.Background()
			if _, err := ratelua.LoadFunctions(ctx, ratelua.Rueidis(client), newestLibrary(t)); err != nil {
				t.Fatal(err)
			}
			report := func(name string, s faultStats) {
				h.Record(t, suite, name, harness.OnCluster(c))
				t.Logf("%-32s %6d calls, %4d errors, %d wrong decisions, errors until +%v",
					name, s.calls, s.errors, s.wrong, s.recovery.Round(time.Millisecond))
				if s.wrong != 0 {
					t.Errorf("%s: %d wrong decisions", name, s.wrong)
				}
			}
			noErrors := func(name string, s faultStats) {
				if s.errors != 0 {
					t.Errorf("%s: %d errors, want none", name, s.errors)
				}
			}
			s := underFault(t, client, "flush", false, func() {
				if err := c.FlushScripts(ctx); err != nil {
					t.Fatal(err)
				}
			})
			report("SCRIPT FLUSH on all nodes", s)
			noErrors("SCRIPT FLUSH", s)

			kill := func(prefix string, functions bool) faultStats {
				return underFault(t, client, prefix, functions, func() {
					victim := c.Masters()[0]
					if err := victim.Kill(); err != nil {
						t.Fatal(err)
					}
					wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
					defer cancel()
					if err := c.WaitHealthy(wctx); err != nil {
						t.Fatalf("no failover: %v", err)
					}
					if err := victim.Restart(wctx); err != nil {
						t.Fatal(err)
					}
					if err := c.WaitHealthy(wctx); err != nil {
						t.Fatal(err)
					}
				})
			}
			report("master killed (EVALSHA)", kill("kill", false))
			report("master killed (FCALL)", kill("killfn", true))

			report("master paused 500ms, resumed", underFault(t, client, "pause", false, func() {
				victim := c.Masters()[1]
				if err := victim.Pause(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(500 * time.Millisecond)
				if err := victim.Resume(); err != nil {
					t.Fatal(err)
				}
			}))

			at := time.Unix(1_800_000_000, 0)
			probe, _ := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "migrate", Clock: func() time.Time { return at }}, ratelua.Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Hour})
			slot := int(keyslot.Slot(probe.Key("0")))
			s = underFault(t, client, "migrate", false, func() {
				from, err := c.MasterOf(ctx, slot)
				if err != nil {
					t.Fatal(err)
				}
				for _, to := range c.Masters() {
					if to.Addr != from.Addr {
						if err := c.MigrateSlot(ctx, slot, to); err != nil {
							t.Fatal(err)
						}
						break
					}
				}
			})
			report("slot with live keys migrated", s)
			noErrors("slot migration", s)

			report("whole cluster restarted", underFault(t, client, "restart", false, func() {
				rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				defer cancel()
				if err := c.Restart(rctx); err != nil {
					t.Fatal(err)
				}
			}))
		})
	}
}
