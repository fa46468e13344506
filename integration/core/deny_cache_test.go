package core

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/internal/limitertest"
	"github.com/ratelua/ratelua/testbench"
)

// TestDenyCacheOnServers: one client hammers one event key (a call every
// millisecond of its clock, now and then AllowN(2) or Peek) through a
// limiter of every script without the deny cache, then with it, on a
// node of its own. The server runs at least 90% fewer script calls with
// the cache (INFO commandstats), and every answer is the one the server
// gave without it.
func TestDenyCacheOnServers(t *testing.T) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			node := testbench.StartSingle(t, testbench.Options{Kind: kind})
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			h.Record(t, suite, "", harness.Single(node))
			const steps = 5000
			hammer := func(name string, opts ratelua.Options) ([]ratelua.Result, []bool, int64) {
				if _, err := node.Do(context.Background(), "CONFIG", "RESETSTAT"); err != nil {
					t.Fatal(err)
				}
				clock := limitertest.NewManualClock(time.Unix(1_800_000_000, 0))
				opts.Clock = clock.Now
				var rec limitertest.Recorder
				opts.Observe = rec.Observe
				limiters, err := limitertest.Mixed(ratelua.Rueidis(client), opts)
				if err != nil {
					t.Fatal(err)
				}
				l := limiters[name]
				results, local := make([]ratelua.Result, steps), make([]bool, steps)
				for i := range steps {
					clock.Advance(time.Millisecond)
					var err error
					switch {
					case i%97 == 0:
						results[i], err = l.AllowN(context.Background(), "hammer", 2)
					case i%89 == 0:
						results[i], err = l.Peek(context.Background(), "hammer")
					default:
						results[i], err = l.Allow(context.Background(), "hammer")
					}
					if err != nil {
						t.Fatalf("%s call %d: %v", name, i, err)
					}
					events := rec.Decisions()
					if len(events) != 1 {
						t.Fatalf("%s call %d: %d decision events", name, i, len(events))
					}
					local[i] = events[0].Local
				}
				return results, local, scriptCalls(t, node)
			}
			for _, name := range []string{ratelua.SlidingWindow, ratelua.AR1, ratelua.ZSetLog, ratelua.TokenBucket} {
				want, _, plainCalls := hammer(name, ratelua.Options{Prefix: "plain"})
				got, local, cachedCalls := hammer(name, ratelua.Options{Prefix: "cached", DenyCache: 1000})
				denied, answeredLocally := 0, 0
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s call %d: with the cache %+v (local %v), the server said %+v", name, i, got[i], local[i], want[i])
					}
					if !want[i].Allowed {
						denied++
					}
					if local[i] {
						answeredLocally++
					}
				}
				reduction := 100 * float64(plainCalls-cachedCalls) / float64(plainCalls)
				t.Logf("%s %-14s %d calls, %d denied: server ran %d script calls without the cache, %d with it (%.1f%% fewer); %d answered locally, all %d equal",
					kind, name, steps, denied, plainCalls, cachedCalls, reduction, answeredLocally, steps)
				if cachedCalls*10 > plainCalls {
					t.Errorf("%s: %d script calls with the cache against %d without: less than 90%% fewer", name, cachedCalls, plainCalls)
				}
			}
		})
	}
}

// TestDenyCacheOnTheServersClock: the deny cache of a limiter without a
// Clock, on the server's clock (the server reads TIME and rounds it down to
// the millisecond, after the call began on this machine's clock, which is
// the same clock). Per trial, on a fresh key of a log of 1 per 50 ms: an
// admitted call, then a denied one begun late in a millisecond (so that
// the server's rounding matters most), a call midway answered from the
// cache, and a call once the server's retry time has surely passed (the
// denial's latest possible millisecond plus its RetryAfter): that one
// must go to the server, which admits it. A cache that kept the server's
// wait from the process's reading (no slack for the rounding) or any
// longer answers it locally.
func TestDenyCacheOnTheServersClock(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		ctx := context.Background()
		var rec limitertest.Recorder
		const window = 50 * time.Millisecond
		l, err := ratelua.NewZSetLog(ratelua.Rueidis(client), ratelua.Options{Prefix: "deny-server-clock", DenyCache: 100, Observe: rec.Observe},
			ratelua.Log{Max: 1, Window: window})
		if err != nil {
			t.Fatal(err)
		}
		call := func(key string) (ratelua.Result, ratelua.Event, time.Time, time.Time) {
			t.Helper()
			began := time.Now()
			r, err := l.Allow(ctx, key)
			ended := time.Now()
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			events := rec.Decisions()
			if len(events) != 1 {
				t.Fatalf("%s: %d decision events", key, len(events))
			}
			return r, events[0], began, ended
		}
		millis := func(at time.Time) time.Time { return at.Truncate(time.Millisecond) }
		trials, local := 0, 0
		for i := 0; trials < 40; i++ {
			if i == 400 {
				t.Fatalf("%d trials of 400 kept their order on a loaded machine, want 40", trials)
			}
			key := "k" + strconv.Itoa(i)
			if r, _, _, _ := call(key); !r.Allowed {
				t.Fatalf("%s: the first call was denied: %+v", key, r)
			}
			for time.Since(millis(time.Now())) < 600*time.Microsecond {
				// late in a millisecond
			}
			denied, e, began, ended := call(key)
			if denied.Allowed {
				continue // the machine stalled past the window: not a trial
			}
			if e.Local || denied.RetryAfter <= 0 {
				t.Fatalf("%s: the first denial %+v (local %v) is not the server's, with a wait", key, denied, e.Local)
			}
			// The server decided in a millisecond of [began, ended] and
			// admits RetryAfter after it.
			admitsBy := millis(ended).Add(denied.RetryAfter)
			if mid := millis(began).Add(denied.RetryAfter / 2); time.Now().Before(mid) {
				time.Sleep(time.Until(mid))
				r, e, _, done := call(key)
				if r.Allowed && done.Before(millis(began).Add(denied.RetryAfter)) {
					t.Fatalf("%s: admitted before the server's retry time: %+v (local %v)", key, r, e.Local)
				}
				if r.Allowed {
					continue // the machine stalled past the retry time: not a trial
				}
				if e.Local {
					local++
				}
			}
			for time.Now().Before(admitsBy) {
				// busy: the call must follow the server's time closely
			}
			trials++
			r, e, at, _ := call(key)
			if e.Local || !r.Allowed {
				t.Fatalf("%s: the server denied in [+0, +%v] and said retry in %v; at +%v the limiter answered %+v, locally %v: want the server's admission",
					key, ended.Sub(began), denied.RetryAfter, at.Sub(began), r, e.Local)
			}
		}
		t.Logf("%d trials: each denial's retry time kept by the cache, not past it; %d midway calls answered locally", trials, local)
		if local == 0 {
			t.Error("no call was answered from the cache: the server-clock path of the deny cache never ran")
		}
	})
}

// TestDenyCacheInFlightOnServers: on both servers, a denial the server
// gave while a Reset, a ResetMany or an admission ran through the same
// Limiter, reaching the limiter after it, is not cached: the next request
// is the server's to decide (issue 20, rows 3 and 6).
func TestDenyCacheInFlightOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		limitertest.DenyCacheInFlight(t, ratelua.Rueidis(client), "inflight")
	})
}

// TestDenyCacheMixedOnServers: on both servers, requests of 1, 2 and 3
// events on one key through a limiter with the deny cache get the answers
// a limiter without it gets (issue 20, row 6: after an admission of a
// smaller request, cached AllowN(2) denials had a stale RetryAfter).
func TestDenyCacheMixedOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) {
		prefix := fmt.Sprintf("mixed%d", time.Now().UnixNano())
		local, compared := limitertest.DenyCacheMixedAgainstServer(t, ratelua.Rueidis(client), ratelua.Rueidis(client), prefix, 1500)
		t.Logf("%d of %d decisions answered locally, every one the server's", local, compared)
		if local == 0 {
			t.Error("nothing was answered locally: the sequence tests nothing")
		}
	})
}

// outageTally counts, per event key, what a limiter decided during an
// outage, from its events.
