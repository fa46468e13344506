package core

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/testbench"
)

// TestLimitersOnServers replays the hand-worked login cases (the same
// steps as the luatest tests) through the Go API on both servers.
func TestLimitersOnServers(t *testing.T) {
	steps := map[string][]step{ratelua.SlidingWindow: {
		{1, 1000, 0, ints64(1, 0, 0, 3200, 1)},
		{1, 1002, 0, ints64(0, 0, 3, 3198, 1)},
		{0, 1004, 0, ints64(0, 0, 1, 3196, 1)},
		{1, 1005, 0, ints64(1, 0, 0, 3195, 1)},
		{-1, 1006, 0, ints64(1, 1, 0, 0, 0)},
	}, ratelua.ZSetLog: {
		{1, 1000, 0, ints64(1, 0, 0, 3600, 1)},
		{1, 1002, 0, ints64(0, 0, 3, 3598, 1)},
		{1, 1005, 0, ints64(1, 0, 0, 3600, 1)},
	}, ratelua.TokenBucket: {
		{1, 1000, 0, ints64(1, 0, 0, 720, 1)},
		{1, 1002, 0, ints64(0, 0, 3, 718, 1)},
		{3, 1005, 0, ints64(0, 1, -1, 718-3, 1)},
	}, ratelua.AR1: {
		{1, 1000, 0, ints64(1, 0, 0, 35000, 1)},
		{1, 1002, 0, ints64(0, 0, 48, 34998, 1)},
	},
	}
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		var now int64
		limiters := login.Limiters(t, ratelua.Rueidis(client), ratelua.Options{Prefix: "steps", Clock: func() time.Time { return time.Unix(now, 0) }})
		for name, l := range limiters {
			for i, st := range steps[name] {
				now = st.now
				var r ratelua.Result
				var err error
				switch {
				case st.count < 0:
					err = l.Reset(ctx, "203.0.113.7")
					r = ratelua.Result{Allowed: true, Remaining: 1, Limit: -1}
				case st.count == 0:
					r, err = l.Peek(ctx, "203.0.113.7")
				default:
					r, err = l.AllowN(ctx, "203.0.113.7", st.count)
				}
				if err != nil {
					t.Fatalf("%s step %d: %v", name, i, err)
				}
				want := resultInSeconds(st.want)
				if r != want {
					t.Errorf("%s step %d: %+v, want %+v", name, i, r, want)
				}
			}
		}
	})
}

// TestConcurrentCallersAdmitExactlyMax: 64 goroutines on one event key
// admit exactly max, for every script, in both modes.
func TestConcurrentCallersAdmitExactlyMax(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) { checkAtomicity(t, client) })
}

// checkAtomicity: 64 goroutines x 4 calls on one event key admit exactly
// max (10) for every script in both modes, with no error.
func checkAtomicity(t *testing.T, client rueidis.Client) {
	{
		ctx := context.Background()
		at := time.Unix(1_800_000_000, 0)
		for _, countDenied := range []bool{false, true} {
			opts := ratelua.Options{Prefix: fmt.Sprintf("conc%v", countDenied), Clock: func() time.Time { return at }, CountDenied: countDenied}
			limiters := map[string]func() (*ratelua.Limiter, error){ratelua.SlidingWindow: func() (*ratelua.Limiter, error) {
				return ratelua.NewSlidingWindow(ratelua.Rueidis(client), opts, ratelua.PerWindow(10, time.Minute))
			}, ratelua.AR1: func() (*ratelua.Limiter, error) {
				return ratelua.NewAR1(ratelua.Rueidis(client), opts, ratelua.Decay{Max: 10, Factor: 1.5, Resolution: time.Minute})
			}, ratelua.ZSetLog: func() (*ratelua.Limiter, error) {
				return ratelua.NewZSetLog(ratelua.Rueidis(client), opts, ratelua.Log{Max: 10, Window: time.Minute})
			}, ratelua.TokenBucket: func() (*ratelua.Limiter, error) {
				return ratelua.NewTokenBucket(ratelua.Rueidis(client), opts, ratelua.Bucket{Capacity: 10, RefillAmount: 1, RefillInterval: time.Hour})
			},
			}
			for name, build := range limiters {
				l, err := build()
				if err != nil {
					t.Fatal(err)
				}
				var allowed, failed atomic.Int64
				var wg sync.WaitGroup
				for range 64 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 4 {
							r, err := l.Allow(ctx, "hot")
							if err != nil {
								failed.Add(1)
							}
							if r.Allowed {
								allowed.Add(1)
							}
						}
					}()
				}
				wg.Wait()
				if allowed.Load() != 10 || failed.Load() != 0 {
					t.Errorf("%s (count denied %v): %d admitted of 256, %d errors; want exactly 10 and none",
						name, countDenied, allowed.Load(), failed.Load())
				}
			}
		}
	}
}

// TestBatchSurvivesScriptFlush: SCRIPT FLUSH empties the cache; the next
// batch meets NOSCRIPT on every entry and retries them with EVAL; a flush
// running concurrently with large batches costs no error either.
func TestBatchSurvivesScriptFlush(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		l, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "flush"}, ratelua.Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		requests := make([]ratelua.Request, 200)
		for i := range requests {
			requests[i] = ratelua.Request{Key: "k" + strconv.Itoa(i), N: 1}
		}
		for round := range 4 {
			if err := client.Do(ctx, client.B().ScriptFlush().Build()).Error(); err != nil {
				t.Fatal(err)
			}
			for i, o := range l.AllowBatch(ctx, requests) {
				if o.Err != nil || o.Result.Allowed != (round < 3) || o.Result.Remaining != int64(max(0, 2-round)) {
					t.Fatalf("round %d request %d: %+v", round, i, o)
				}
			}
		}
		// Flushes racing with batches.
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-stop:
					return
				default:
					client.Do(ctx, client.B().ScriptFlush().Build())
					time.Sleep(time.Millisecond)
				}
			}
		}()
		for range 20 {
			for i, o := range l.AllowBatch(ctx, requests) {
				if o.Err != nil {
					t.Errorf("request %d under concurrent flushes: %v", i, o.Err)
				}
			}
		}
		close(stop)
		<-done
		if err := l.ResetMany(ctx, []string{"k1", "k2"}); err != nil {
			t.Fatal(err)
		}
		if r, err := l.Peek(ctx, "k1"); err != nil || r.Remaining != 3 {
			t.Errorf("after ResetMany: %+v, %v", r, err)
		}
	})
}

// TestServerAndCallerClocksAgree: a limiter on the server's clock and one on
// the caller's clock decide the same sequence alike.
func TestServerAndCallerClocksAgree(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		server, _ := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{Prefix: "srvclock"}, ratelua.Window{Max: 3, Duration: time.Hour, Resolution: time.Minute})
		caller, _ := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{Prefix: "callerclock", Clock: time.Now}, ratelua.Window{Max: 3, Duration: time.Hour, Resolution: time.Minute})
		for i := range 5 {
			a, err1 := server.Allow(ctx, "k")
			b, err2 := caller.Allow(ctx, "k")
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if a.Allowed != b.Allowed || a.Remaining != b.Remaining || a.Limit != b.Limit {
				t.Errorf("call %d: server clock %+v, caller clock %+v", i, a, b)
			}
			if d := a.ResetAfter - b.ResetAfter; d < -time.Second || d > time.Second {
				t.Errorf("call %d: ResetAfter %v vs %v", i, a.ResetAfter, b.ResetAfter)
			}
		}
	})
}

// TestResetIsSeenByRawEVALSHA: Reset from Go is the contract's negative
// eventCount; a raw EVALSHA peek (eventCount 0) sees a fresh key.
func TestResetIsSeenByRawEVALSHA(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		l, _ := ratelua.NewZSetLog(ratelua.Rueidis(client), ratelua.Options{Prefix: "raw"}, ratelua.Log{Max: 2, Window: time.Hour})
		if _, err := l.AllowN(ctx, "k", 2); err != nil {
			t.Fatal(err)
		}
		raw := func() []int64 {
			args := l.Args(0) // eventCount 0 in the limiter's unit
			args[2] = ""      // on the server's clock
			got, err := client.Do(ctx, client.B().Evalsha().Sha1(l.Script().SHA1).Numkeys(1).Key(l.Key("k")).Arg(args...).Build()).AsIntSlice()
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		if got := raw(); got[0] != 0 || got[1] != 0 {
			t.Fatalf("before reset, raw peek: %v", got)
		}
		if err := l.Reset(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		if got := raw(); !equalInts(got, ints64(1, 2, 0, 0, 1)) {
			t.Errorf("after Reset, raw peek: %v, want a fresh key", got)
		}
	})
}

// TestLoadAndResetPrefix: Load puts every script on the node; ResetPrefix
// deletes every key under the prefix and nothing else.
func TestLoadAndResetPrefix(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		client.Do(ctx, client.B().ScriptFlush().Build())
		report, err := ratelua.NewRegistry().Load(ctx, ratelua.Rueidis(client))
		if err != nil || len(report) != 1 || report[s.Addr] != nil {
			t.Fatalf("Load: %+v, %v", report, err)
		}
		for _, sc := range ratelua.Scripts() {
			exists, err := client.Do(ctx, client.B().ScriptExists().Sha1(sc.SHA1).Build()).AsIntSlice()
			if err != nil || exists[0] != 1 {
				t.Errorf("%s not loaded: %v %v", sc, exists, err)
			}
		}
		l, _ := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "wipe"}, ratelua.PerSecond(1, 5))
		keep, _ := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "wipe2"}, ratelua.PerSecond(1, 5))
		requests := make([]ratelua.Request, 1200)
		for i := range requests {
			requests[i] = ratelua.Request{Key: strconv.Itoa(i), N: 1}
		}
		l.AllowBatch(ctx, requests)
		keep.AllowBatch(ctx, requests[:10])
		var calls int
		n, err := ratelua.ResetPrefix(ctx, ratelua.Rueidis(client), "wipe", false, func(int64) { calls++ })
		if err != nil || n != 1200 || calls < 2 {
			t.Fatalf("ResetPrefix: %d deleted, %d progress calls, %v", n, calls, err)
		}
		if r, _ := keep.Peek(ctx, "1"); r.Remaining != 4 {
			t.Errorf("ResetPrefix(wipe) touched wipe2: %+v", r)
		}
		if r, _ := l.Peek(ctx, "1"); r.Remaining != 5 {
			t.Errorf("a wiped key is not fresh: %+v", r)
		}
	})
}

// TestFailOpenAndClosed: with the server gone, a fail-closed limiter denies
// and a fail-open one admits; both report ErrUnavailable.
func TestFailOpenAndClosed(t *testing.T) {
	eachServer(t, func(t *testing.T, _ rueidis.Client, shared *testbench.Node) {
		s := testbench.StartSingle(t, testbench.Options{Kind: shared.Kind})
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true, DisableRetry: true})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		closed, _ := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{}, ratelua.PerSecond(1, 1))
		open, _ := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{FailOpen: true}, ratelua.PerSecond(1, 1))
		if r, err := closed.Allow(context.Background(), "k"); err != nil || !r.Allowed {
			t.Fatalf("while up: %+v, %v", r, err)
		}
		s.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if r, err := closed.Allow(ctx, "k"); r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("fail closed: %+v, %v", r, err)
		}
		if r, err := open.Allow(ctx, "k"); !r.Allowed || !errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("fail open: %+v, %v", r, err)
		}
	})
}

// TestFunctionsOnServers: with Options.Functions a limiter calls FCALL; the
// library is loaded on first use and again after FUNCTION FLUSH, and the
// decisions are the EVALSHA ones.
func TestFunctionsOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		client.Do(ctx, client.B().FunctionFlush().Build())
		at := time.Unix(1_800_000_000, 0)
		opts := ratelua.Options{Prefix: "fn", Clock: func() time.Time { return at }}
		viaEval, _ := ratelua.NewSlidingWindow(ratelua.Rueidis(client), opts, ratelua.Window{Max: 3, Duration: time.Minute, Resolution: time.Second})
		opts.Prefix, opts.Functions = "fn2", true
		viaFunc, _ := ratelua.NewSlidingWindow(ratelua.Rueidis(client), opts, ratelua.Window{Max: 3, Duration: time.Minute, Resolution: time.Second})
		for i := range 5 {
			if i == 2 {
				client.Do(ctx, client.B().FunctionFlush().Build())
			}
			a, err1 := viaEval.Allow(ctx, "k")
			b, err2 := viaFunc.Allow(ctx, "k")
			if err1 != nil || err2 != nil || a != b {
				t.Errorf("call %d: EVALSHA %+v %v, FCALL %+v %v", i, a, err1, b, err2)
			}
		}
		out := viaFunc.AllowBatch(ctx, []ratelua.Request{{Key: "x", N: 1}, {Key: "y", N: 2}})
		if out[0].Err != nil || out[1].Err != nil || out[1].Result.Remaining != 1 {
			t.Errorf("FCALL batch: %+v", out)
		}
		report, err := ratelua.LoadFunctions(ctx, ratelua.Rueidis(client), newestLibrary(t))
		if err != nil || len(report) != 1 {
			t.Errorf("LoadFunctions: %+v, %v", report, err)
		}
	})
}
