package core

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/internal/keyslot"
	"github.com/ratelua/ratelua/internal/limitertest"
	"github.com/ratelua/ratelua/testbench"
)

type outageTally struct {
	fallback  map[string]int // decisions by the fallback
	admitted  map[string]int // of them admitted
	server    map[string]int // decisions by the server (bystander keys)
	errors    int            // unanswered before the fallback began (denied)
	serverErr int            // error replies
	other     int            // admitted otherwise: must stay 0
	enter     int
	leave     int
}

func newOutageTally() *outageTally {
	return &outageTally{fallback: map[string]int{}, admitted: map[string]int{}, server: map[string]int{}}
}

// The deadlines of outageTally's calls: a call to a server that is away
// gives up after outageDeadline (any deadline would do: the fallback
// begins FallbackAfter after the first unanswered call); a call that must
// be answered (a bystander on a live master, a key whose server is back)
// has answerDeadline, well above any stall of a loaded machine, so that a
// slow answer is never taken for an outage.
const (
	outageDeadline = 300 * time.Millisecond
	answerDeadline = 10 * time.Second
)

// call makes one Allow of key with outageDeadline and tallies it.
func (o *outageTally) call(t *testing.T, l *ratelua.Limiter, rec *limitertest.Recorder, key string) ratelua.Event {
	t.Helper()
	return o.callWithin(t, l, rec, key, outageDeadline)
}

// callWithin makes one Allow of key with a deadline and tallies it.
func (o *outageTally) callWithin(t *testing.T, l *ratelua.Limiter, rec *limitertest.Recorder, key string, deadline time.Duration) ratelua.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	r, err := l.Allow(ctx, key)
	cancel()
	var decision ratelua.Event
	for _, e := range rec.Take() {
		switch e.Kind {
		case ratelua.KindFallbackEnter:
			o.enter++
		case ratelua.KindFallbackLeave:
			o.leave++
		case ratelua.KindLoad:
		default:
			decision = e
		}
	}
	switch decision.Kind {
	case ratelua.KindFallback:
		o.fallback[key]++
		if r.Allowed {
			o.admitted[key]++
		}
		if err != nil {
			t.Fatalf("a fallback decision with an error: %v", err)
		}
	case ratelua.KindError:
		if !noAnswer(err) {
			o.serverErr++
		} else {
			o.errors++
		}
		if r.Allowed {
			o.other++
		}
	case ratelua.KindAllowed, ratelua.KindDenied:
		o.server[key]++
	default:
		t.Fatalf("decision %+v, %+v, %v", decision, r, err)
	}
	return decision
}

// check requires that each key was admitted exactly min(decisions, share)
// times by the fallback (the clock is frozen: nothing refills), and never
// otherwise, and logs the figures.
func (o *outageTally) check(t *testing.T, what string, keys []string, share int) {
	t.Helper()
	total, admitted := 0, 0
	for _, k := range keys {
		total += o.fallback[k]
		admitted += o.admitted[k]
		if want := min(o.fallback[k], share); o.admitted[k] != want {
			t.Errorf("%s: key %s: %d admitted by the fallback in %d decisions, want %d (share %d)", what, k, o.admitted[k], o.fallback[k], want, share)
		}
	}
	if o.other != 0 {
		t.Errorf("%s: %d calls admitted without an answer outside the fallback", what, o.other)
	}
	if total == 0 {
		t.Errorf("%s: the fallback decided nothing", what)
	}
	t.Logf("%s: %d unanswered calls denied before the fallback, %d fallback decisions on %d keys, %d admitted (share %d per key, at most %d)",
		what, o.errors, total, len(keys), admitted, share, share*len(keys))
}

// untilServerAnswers calls every key until each is decided by the server
// again, and requires the fallback's end in the events.
func (o *outageTally) untilServerAnswers(t *testing.T, l *ratelua.Limiter, rec *limitertest.Recorder, keys []string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	calls := 0
	for _, k := range keys {
		for {
			if time.Now().After(deadline) {
				t.Fatalf("the server never answered for %s again", k)
			}
			calls++
			if e := o.callWithin(t, l, rec, k, answerDeadline); (e.Kind == ratelua.KindAllowed || e.Kind == ratelua.KindDenied) && !e.Local {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if o.enter > 0 {
		t.Logf("server back after %d calls: %d error replies meanwhile; fallback switches: %d in, %d out", calls, o.serverErr, o.enter, o.leave)
	}
}

// fallbackLimiter is a sliding window of 40 per hour (a frozen clock:
// nothing leaves the window), failing closed, with a quarter of it as the
// fallback after 500 ms without answers.
func fallbackLimiter(t *testing.T, client rueidis.Client, prefix string, rec *limitertest.Recorder) *ratelua.Limiter {
	t.Helper()
	at := time.Unix(1_800_000_000, 0)
	l, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{
		Prefix: prefix, Clock: func() time.Time { return at },
		Fallback: 0.25, FallbackAfter: 500 * time.Millisecond, Observe: rec.Observe,
	}, ratelua.Window{Max: 40, Duration: time.Hour, Resolution: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// duringOutage calls the keys round robin until every key has had at
// least calls fallback decisions.
func (o *outageTally) duringOutage(t *testing.T, l *ratelua.Limiter, rec *limitertest.Recorder, keys []string, calls int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		done := true
		for _, k := range keys {
			if o.fallback[k] < calls {
				done = false
			}
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fallback decided %v in 60 s", o.fallback)
		}
		for _, k := range keys {
			o.call(t, l, rec, k)
		}
	}
}

// TestFallbackThroughOutages: a real single node stopped then restarted,
// then paused then resumed: the limiter falls back after 500 ms without
// answers, admits exactly its share per key (a quarter of 40) and nothing
// else while the server is away, and leaves the fallback when the server
// answers. The fallback's state spans both outages: keys that used their
// share in the first get nothing in the second.
func TestFallbackThroughOutages(t *testing.T) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			node := testbench.StartSingle(t, testbench.Options{Kind: kind})
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			h.Record(t, suite, "", harness.Single(node))
			var rec limitertest.Recorder
			l := fallbackLimiter(t, client, "outage", &rec)
			first := []string{"a", "b", "c", "d"}
			second := []string{"e", "f", "g", "h"}
			warm := newOutageTally()
			warm.untilServerAnswers(t, l, &rec, append(first, second...))

			stopped := newOutageTally()
			if err := node.Stop(); err != nil {
				t.Fatal(err)
			}
			stopped.duringOutage(t, l, &rec, first, 20)
			stopped.check(t, "stopped", first, 10)
			if err := node.Restart(context.Background()); err != nil {
				t.Fatal(err)
			}
			stopped.untilServerAnswers(t, l, &rec, first)
			if stopped.enter != 1 || stopped.leave != 1 {
				t.Errorf("stopped: %d switches in, %d out; want 1 and 1", stopped.enter, stopped.leave)
			}

			paused := newOutageTally()
			if err := node.Pause(); err != nil {
				t.Fatal(err)
			}
			paused.duringOutage(t, l, &rec, append(first, second...), 12)
			paused.check(t, "paused (new keys)", second, 10)
			for _, k := range first {
				if paused.admitted[k] != 0 {
					t.Errorf("paused: key %s admitted %d more after its share in the first outage", k, paused.admitted[k])
				}
			}
			if err := node.Resume(); err != nil {
				t.Fatal(err)
			}
			paused.untilServerAnswers(t, l, &rec, first)
			if paused.enter != 1 || paused.leave != 1 {
				t.Errorf("paused: %d switches in, %d out; want 1 and 1", paused.enter, paused.leave)
			}
		})
	}
}

// TestClusterFallbackThroughOutages: on a six-node cluster, a master
// paused (until it is resumed) and then a master stopped (until it is
// restarted): keys of that master fall back and each gets at most its
// share, keys of the other masters are still decided by their servers
// throughout, and the server decides again after the failover.
func TestClusterFallbackThroughOutages(t *testing.T) {
	if testing.Short() {
		t.Skip("long: outages on a six-node cluster")
	}
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			// No replica takes over until the test says so, and the other
			// masters serve while one is away: each outage lasts as long as
			// the test needs, however slow the machine (with automatic
			// failover after the 1 s node timeout, a loaded machine could
			// see the replica answer before the fallback had decided).
			c := testbench.Start(t, testbench.Options{Kind: kind, Config: []string{
				"cluster-replica-no-failover yes",
				"cluster-require-full-coverage no",
				"cluster-replica-validity-factor 0",
			}})
			client := clusterClient(t, c)
			ctx := context.Background()
			h.Record(t, suite, "", harness.OnCluster(c))
			var rec limitertest.Recorder
			l := fallbackLimiter(t, client, "cluster-outage", &rec)
			victim := c.Masters()[0]
			// Keys on the victim, and bystanders on the other masters.
			var onVictim, bystanders []string
			for i := 0; len(onVictim) < 8 || len(bystanders) < 4; i++ {
				k := "user-" + strconv.Itoa(i)
				m, err := c.MasterOf(ctx, int(keyslot.Slot(l.Key(k))))
				if err != nil {
					t.Fatal(err)
				}
				if m.Addr == victim.Addr && len(onVictim) < 8 {
					onVictim = append(onVictim, k)
				} else if m.Addr != victim.Addr && len(bystanders) < 4 {
					bystanders = append(bystanders, k)
				}
			}
			first, second := onVictim[:4], onVictim[4:]
			warm := newOutageTally()
			warm.untilServerAnswers(t, l, &rec, append(onVictim, bystanders...))

			paused := newOutageTally()
			if err := victim.Pause(); err != nil {
				t.Fatal(err)
			}
			paused.duringOutage(t, l, &rec, first, 20)
			for _, k := range bystanders {
				if e := paused.callWithin(t, l, &rec, k, answerDeadline); e.Kind == ratelua.KindFallback {
					t.Errorf("bystander %s on a live master decided by the fallback", k)
				}
			}
			paused.check(t, "master paused", first, 10)
			if err := victim.Resume(); err != nil {
				t.Fatal(err)
			}
			paused.untilServerAnswers(t, l, &rec, first)
			// The master holds what the fallback admitted (issue 20, row
			// 14): each key's events at least those the server admitted
			// and the fallback's 10 (calls that timed out may have been
			// recorded too).
			for _, k := range first {
				r, err := l.Peek(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				if held := warm.server[k] + paused.server[k] + paused.admitted[k]; r.Remaining > int64(40-held) {
					t.Errorf("key %s after the paused master answered: %d remaining, want at most 40 - %d (the server's %d and the fallback's %d)", k, r.Remaining, held, warm.server[k]+paused.server[k], paused.admitted[k])
				}
			}
			rec.Take()
			wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			if err := c.WaitHealthy(wctx); err != nil {
				t.Fatal(err)
			}

			stopped := newOutageTally()
			master, err := c.MasterOf(ctx, int(keyslot.Slot(l.Key(second[0]))))
			if err != nil {
				t.Fatal(err)
			}
			if err := master.Stop(); err != nil {
				t.Fatal(err)
			}
			stopped.duringOutage(t, l, &rec, second, 20)
			for _, k := range bystanders {
				if e := stopped.callWithin(t, l, &rec, k, answerDeadline); e.Kind == ratelua.KindFallback {
					t.Errorf("bystander %s on a live master decided by the fallback", k)
				}
			}
			stopped.check(t, "master stopped", second, 10)
			// Now the cluster fails the master over; the server decides again.
			allowFailover(t, c)
			stopped.untilServerAnswers(t, l, &rec, second)
			if err := master.Restart(wctx); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitHealthy(wctx); err != nil {
				t.Fatal(err)
			}
			for name, o := range map[string]*outageTally{"paused": paused, "stopped": stopped} {
				if o.enter == 0 || o.leave == 0 {
					t.Errorf("%s: %d switches in, %d out", name, o.enter, o.leave)
				}
				for _, k := range bystanders {
					if o.fallback[k] != 0 {
						t.Errorf("%s: bystander %s decided by the fallback %d times", name, k, o.fallback[k])
					}
				}
			}
		})
	}
}

// allowFailover lets every replica of c take over its master again
// (cluster-replica-no-failover no).
func allowFailover(t *testing.T, c *testbench.Cluster) {
	t.Helper()
	for _, r := range c.Replicas() {
		if _, err := r.Do(context.Background(), "CONFIG", "SET", "cluster-replica-no-failover", "no"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFallbackRecordedAfterOutage: on both servers, what the fallback
// admitted is recorded on the server once it answers again, so that the
// window holds it (issue 20, row 14: a 10-per-minute limit admitted
// 10 + 5 + 10 in one minute across a restart). A sliding window of 10 per
// minute (a frozen clock) with Fallback 0.5: with the server's state kept
// (stopped with a save, restarted), 4 before the outage and 5 by the
// fallback leave 1 to the server after it; with the state lost (killed,
// restarted), the 10 before are forgotten and the 5 by the fallback leave
// 5, not 10.
func TestFallbackRecordedAfterOutage(t *testing.T) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			node := testbench.StartSingle(t, testbench.Options{Kind: kind})
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			h.Record(t, suite, "", harness.Single(node))
			at := time.Unix(1_800_000_000, 0)
			for _, c := range []struct {
				name   string
				before int
				outage func() error
				after  int
			}{
				{"stopped", 4, node.Stop, 1},
				{"killed", 10, node.Kill, 5},
			} {
				var rec limitertest.Recorder
				l, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{
					Prefix: "recorded-" + c.name, Clock: func() time.Time { return at },
					Fallback: 0.5, FallbackAfter: 300 * time.Millisecond, Observe: rec.Observe,
				}, ratelua.Window{Max: 10, Duration: time.Minute, Resolution: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				// Without a deadline where the server is up: a call that
				// timed out might still be recorded, and the counts must
				// be exact.
				allow := func(i int) bool {
					r, err := l.Allow(context.Background(), "k")
					if err != nil {
						t.Fatalf("%s: call %d with the server up: %v", c.name, i, err)
					}
					rec.Take()
					return r.Allowed
				}
				o := newOutageTally()
				for i := range c.before {
					if !allow(i) {
						t.Fatalf("%s: call %d before the outage denied", c.name, i)
					}
				}
				if err := c.outage(); err != nil {
					t.Fatal(err)
				}
				o.duringOutage(t, l, &rec, []string{"k"}, 12)
				o.check(t, c.name, []string{"k"}, 5)
				if err := node.Restart(context.Background()); err != nil {
					t.Fatal(err)
				}
				// Until the server decides (the call that ends the
				// fallback), then 9 more calls.
				deadline := time.Now().Add(60 * time.Second)
				after := 0
				for {
					if time.Now().After(deadline) {
						t.Fatalf("%s: the server never answered again", c.name)
					}
					// A long deadline: the answer that ends the fallback
					// (after a NOSCRIPT and its EVAL) must not be lost.
					e := o.callWithin(t, l, &rec, "k", answerDeadline)
					if (e.Kind == ratelua.KindAllowed || e.Kind == ratelua.KindDenied) && !e.Local {
						if e.Result.Allowed {
							after++
						}
						break
					}
					if e.Result.Allowed && e.Kind == ratelua.KindFallback {
						t.Errorf("%s: the fallback admitted past its share", c.name)
					}
					time.Sleep(20 * time.Millisecond)
				}
				for i := range 9 {
					if allow(i) {
						after++
					}
				}
				t.Logf("%s: %d admitted before the outage, %d by the fallback, %d by the server after it", c.name, c.before, o.admitted["k"], after)
				if after != c.after {
					t.Errorf("%s: the server admitted %d after the outage, want %d: %d in the minute against a limit of 10", c.name, after, c.after, c.before+o.admitted["k"]+after)
				}
			}
		})
	}
}

// TestFallbackNeverForErrorReplies: error replies (here NOPERM: a user who
// may not run scripts) never enter the fallback, however many: the server
// answered.
func TestFallbackNeverForErrorReplies(t *testing.T) {
	eachServer(t, func(t *testing.T, _ rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		if _, err := s.Do(ctx, "ACL", "SETUSER", "noscript-fb", "on", ">pw", "~*", "+@all", "-@scripting"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Do(ctx, "ACL", "DELUSER", "noscript-fb") })
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true, Username: "noscript-fb", Password: "pw"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(client.Close)
		var rec limitertest.Recorder
		l, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: "fb-noperm", Fallback: 1, Observe: rec.Observe}, ratelua.PerSecond(100, 100))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			r, err := l.Allow(ctx, "k")
			if r.Allowed || !errors.Is(err, ratelua.ErrScript) {
				t.Fatalf("call %d: %+v, %v; want denied with ErrScript", i, r, err)
			}
		}
		if c := limitertest.Kinds(rec.Take()); c[ratelua.KindFallback] != 0 || c[ratelua.KindFallbackEnter] != 0 || c[ratelua.KindError] != 20 {
			t.Errorf("events %v; want 20 errors and no fallback", c)
		}
	})
}
