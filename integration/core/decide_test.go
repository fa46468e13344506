package core

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/testbench"
)

// TestDecideOnServers: ratelua.Decide across the four scripts' limiters
// (with a deny cache, dry-run and a hook on some) and event keys on every
// master decides each check as its limiter's AllowN or Peek does on the
// same server, after SCRIPT FLUSH too; and a check's At is the time of
// its decision for a limiter on the server's clock.
func TestDecideOnServers(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, _ *testbench.Node) { decideOnServer(t, client) })
	onCluster(t, func(t *testing.T, client rueidis.Client, _ *testbench.Cluster) { decideOnServer(t, client) })
}

func decideOnServer(t *testing.T, client rueidis.Client) {
	ctx := context.Background()
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	at := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return at }
	events := map[string]int{}
	set := func(prefix string) []*ratelua.Limiter {
		byName := login.Limiters(t, ratelua.Rueidis(client), ratelua.Options{Prefix: prefix + run, Clock: clock})
		opts := ratelua.Options{Prefix: prefix + run, Clock: clock, DenyCache: 100, Observe: func(_ context.Context, e ratelua.Event) {
			if prefix == "decide-b" {
				events[e.Kind]++
			}
		}}
		deny, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), opts, ratelua.Window{Max: 2, Duration: 10 * time.Second, Resolution: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		opts = ratelua.Options{Prefix: prefix + run, Clock: clock, DryRun: true}
		dry, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), opts, ratelua.Bucket{Capacity: 2, RefillAmount: 1, RefillInterval: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return []*ratelua.Limiter{byName[ratelua.SlidingWindow], byName[ratelua.AR1], byName[ratelua.ZSetLog], byName[ratelua.TokenBucket], deny, dry}
	}
	single, batched := set("decide-a"), set("decide-b")
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = "user-" + strconv.Itoa(i)
	}
	var allowed, denied, local, dryDenied int
	for round := range 5 {
		if round%2 == 0 {
			if err := client.Do(ctx, client.B().ScriptFlush().Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		var checks []ratelua.Check
		for i, k := range keys {
			for j, l := range batched {
				checks = append(checks, ratelua.Check{Limiter: l, Key: k, N: int64((i + j + round) % 3)})
			}
		}
		out := ratelua.Decide(ctx, ratelua.Rueidis(client), checks)
		for i, c := range checks {
			l := single[i%len(single)]
			var r ratelua.Result
			var err error
			if c.N == 0 {
				r, err = l.Peek(ctx, c.Key)
			} else {
				r, err = l.AllowN(ctx, c.Key, c.N)
			}
			o := out[i]
			if err != nil || o.Err != nil || o.Result != r {
				t.Fatalf("round %d check %d (%s, %s, %d): Decide %+v (%v), AllowN %+v (%v)", round, i, l.Script(), c.Key, c.N, o.Result, o.Err, r, err)
			}
			switch {
			case o.Result.DryRunDenied:
				dryDenied++
			case o.Result.Allowed:
				allowed++
			default:
				denied++
			}
			if o.Local {
				local++
			}
		}
		at = at.Add(3 * time.Second)
	}
	if allowed == 0 || denied == 0 || local == 0 || dryDenied == 0 || events[ratelua.KindDenied] == 0 {
		t.Errorf("allowed %d, denied %d, local %d, dry-run denied %d, events %v: want each above 0", allowed, denied, local, dryDenied, events)
	}

	// At on a limiter that reads the server's clock.
	server, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{Prefix: "decide-at" + run}, ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Unix(1_900_000_000, 0)
	var got []bool
	for _, d := range []time.Duration{0, 4 * time.Second, 5 * time.Second, 5 * time.Second} {
		o := ratelua.Decide(ctx, ratelua.Rueidis(client), []ratelua.Check{{Limiter: server, Key: "k", N: 1, At: base.Add(d)}})[0]
		if o.Err != nil {
			t.Fatal(o.Err)
		}
		got = append(got, o.Result.Allowed)
	}
	if want := []bool{true, false, true, false}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("at +0, +4 s, +5 s, +5 s: allowed %v, want %v", got, want)
	}
}
