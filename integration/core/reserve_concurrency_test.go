package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// reservePairs is how many reserve/settle pairs run at once.
const reservePairs = 64

// reserveRig calls one script version's reserve, settle and peek through
// the raw Client (ratelua.Rueidis and Run), at one fixed caller now, so
// that nothing refills between the calls and every level is exact.
type reserveRig struct {
	t      *testing.T
	client ratelua.Client
	raw    rueidis.Client // to read the state
	script string
	sha    string
	key    string
	limits []string // token_bucket: refill 1 token per 1 ms (reset_after in ms is the tokens missing); zset_log and sliding_window: windows of 10^8 ms
	caps   []int64  // capacities or maxima
}

const reserveNow = "1600000000000" // ms, a fixed past time

func (r *reserveRig) call(ctx context.Context, count int64, mode string) []int64 {
	reply := make([]int64, 5)
	args := append([]string{strconv.FormatInt(count, 10), "ms", reserveNow, mode}, r.limits...)
	if err := r.client.Run(ctx, ratelua.Call{Command: "EVALSHA", Script: r.sha, Key: r.key, Args: args}, reply); err != nil {
		r.t.Errorf("%s %v: %v", r.key, args, err)
	}
	return reply
}

// peek is a call of eventCount 0: the state's remaining and reset_after
// (the ms until every bucket is full: the tokens missing, 1 per ms).
func (r *reserveRig) peek(ctx context.Context) []int64 { return r.call(ctx, 0, "0") }

// TestReserveSettleConcurrent is the concurrency proof of reserve, then
// settle (issue 31), on Redis and Valkey, through the raw Client, with
// one limit and with two (another path of the script): 64 reserves at
// once that are never settled keep their estimates and never admit past
// a limit; 64 concurrent reserve/settle pairs with actual <= estimate
// give back exactly what was not used; with actual > estimate the debt is
// exactly the sum of the overruns, and a later call waits for it; a
// settle retried 3 times (at once) applies once.
func TestReserveSettleConcurrent(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		ctx := context.Background()
		rc := ratelua.Rueidis(client)
		if _, err := ratelua.NewRegistry().Load(ctx, rc); err != nil {
			t.Fatal(err)
		}
		for _, shape := range []struct {
			script, name string
			limits       []string
			caps         []int64
		}{
			// token_bucket: refill 1 token per ms.
			{ratelua.TokenBucket, "one limit", []string{"500", "1", "1"}, []int64{500}},
			{ratelua.TokenBucket, "two limits", []string{"500", "1", "1", "800", "1", "1"}, []int64{500, 800}},
			// zset_log: windows of 10^8 ms (nothing leaves them).
			{ratelua.ZSetLog, "one limit", []string{"500", "100000000"}, []int64{500}},
			{ratelua.ZSetLog, "two limits", []string{"500", "100000000", "800", "100000000"}, []int64{500, 800}},
			// sliding_window: windows of 10^8 ms in buckets of 10^5 ms
			// (every call at reserveNow is in one bucket, a bucket's start).
			{ratelua.SlidingWindow, "one limit", []string{"500", "100000000", "100000"}, []int64{500}},
			{ratelua.SlidingWindow, "two limits", []string{"500", "100000000", "100000", "800", "100000000", "100000"}, []int64{500, 800}},
		} {
			script, err := ratelua.NewRegistry().Latest(shape.script)
			if err != nil {
				t.Fatal(err)
			}
			t.Run(shape.script+"/"+shape.name, func(t *testing.T) {
				rig := func(phase string) *reserveRig {
					key := fmt.Sprintf("reserve:{%s-%s-%s-%s}:%s", s.Kind, shape.script, shape.name, phase, shape.script)
					if err := client.Do(ctx, client.B().Del().Key(key).Build()).Error(); err != nil {
						t.Fatal(err)
					}
					return &reserveRig{t: t, client: rc, raw: client, script: shape.script, sha: script.SHA1, key: key, limits: shape.limits, caps: shape.caps}
				}
				unsettled(t, ctx, rig("unsettled"))
				refunds(t, ctx, rig("refunds"))
				overruns(t, ctx, rig("overruns"))
			})
		}
	})
}

// each runs f(i) for i in [0, reservePairs) at once.
func each(f func(i int)) {
	var wg sync.WaitGroup
	for i := range reservePairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(i)
		}()
	}
	wg.Wait()
}

// unsettled: 64 reserves at once, never settled, of estimates summing past
// the smallest capacity: the admitted ones sum to at most it, the state
// keeps exactly their estimates, and every denied one asked for more than
// was left at the end (no reserve was denied that fitted).
func unsettled(t *testing.T, ctx context.Context, r *reserveRig) {
	estimates, replies := make([]int64, reservePairs), make([][]int64, reservePairs)
	each(func(i int) {
		estimates[i] = 1 + int64(i%20)
		replies[i] = r.call(ctx, estimates[i], fmt.Sprintf("reserve:%d:600000", 1+i))
	})
	var admitted int64
	denied := 0
	for i, reply := range replies {
		if reply[0] == 1 {
			admitted += estimates[i]
		} else {
			denied++
		}
	}
	left := r.caps[0] - admitted
	peek := r.peek(ctx)
	reset := admitted // token_bucket: the tokens missing, 1 per ms
	switch r.script {
	case ratelua.ZSetLog:
		// zset_log v7 holds a reservation's units until it is settled:
		// counted until its expiry (600000 ms) and a window after it.
		reset = 600_000 + 100_000_000
	case ratelua.SlidingWindow:
		// The window from the bucket of the reservations' expiry (v7,
		// issue 32: held until then), 600 000 ms on, a bucket's start.
		reset = 100_000_000 + 600_000
	}
	if admitted > r.caps[0] || peek[1] != left || peek[3] != reset {
		t.Fatalf("unsettled: %d admitted of capacity %d, peek %v, want %d left", admitted, r.caps[0], peek, left)
	}
	if denied == 0 {
		t.Fatalf("unsettled: no reserve denied: the estimates (sum %d) must pass the capacity %d", sum(estimates), r.caps[0])
	}
	for i, reply := range replies {
		if reply[0] == 0 && estimates[i] <= left {
			t.Fatalf("unsettled: reserve %d of %d denied (%v), but %d are left", i+1, estimates[i], reply, left)
		}
	}
}

// refunds: 64 reserve/settle pairs at once with random actual <= estimate:
// the state ends with exactly the actual costs of the admitted ones
// taken.
func refunds(t *testing.T, ctx context.Context, r *reserveRig) {
	actual, admitted := make([]int64, reservePairs), make([]bool, reservePairs)
	each(func(i int) {
		rng := rand.New(rand.NewPCG(uint64(i), 31))
		estimate := 1 + rng.Int64N(15)
		id := fmt.Sprintf("%d", 1000+i)
		if reply := r.call(ctx, estimate, "reserve:"+id+":600000"); reply[0] == 1 {
			admitted[i] = true
			actual[i] = rng.Int64N(estimate + 1)
			if reply := r.call(ctx, actual[i], "settle:"+id); reply[4] < 1 {
				t.Errorf("refunds: settle %s answered %v, want applied", id, reply)
			}
		}
	})
	var used int64
	for i := range actual {
		if admitted[i] {
			used += actual[i]
		}
	}
	if peek := r.peek(ctx); peek[1] != r.caps[0]-used {
		t.Fatalf("refunds: peek %v after the settles, want %d left (capacity %d less the %d used)", peek, r.caps[0]-used, r.caps[0], used)
	}
	if n := count(admitted); n < reservePairs/2 {
		t.Fatalf("refunds: only %d reserves admitted", n)
	}
}

// overruns: 64 reserve/settle pairs at once with actual > estimate, each
// settle retried 3 times at once: each applies once, the buckets end in
// debt by exactly the overruns beyond what was left, and a later call
// waits until it is paid off (1 token per ms).
func overruns(t *testing.T, ctx context.Context, r *reserveRig) {
	estimates, overruns := make([]int64, reservePairs), make([]int64, reservePairs)
	each(func(i int) {
		rng := rand.New(rand.NewPCG(uint64(i), 32))
		estimates[i], overruns[i] = 1+rng.Int64N(5), 1+rng.Int64N(12)
		if reply := r.call(ctx, estimates[i], fmt.Sprintf("reserve:%d:600000", 5000+i)); reply[0] != 1 {
			t.Errorf("overruns: reserve %d of %d denied: %v", 5000+i, estimates[i], reply)
		}
	})
	each(func(i int) {
		applied := make([]int64, 3)
		var wg sync.WaitGroup
		for k := range applied {
			wg.Add(1)
			go func() {
				defer wg.Done()
				applied[k] = r.call(ctx, estimates[i]+overruns[i], fmt.Sprintf("settle:%d", 5000+i))[4]
			}()
		}
		wg.Wait()
		if n := count([]bool{applied[0] >= 1, applied[1] >= 1, applied[2] >= 1}); n != 1 {
			t.Errorf("overruns: settle %d retried 3 times at once applied %d times (limit_index %v)", 5000+i, n, applied)
		}
	})
	actuals := sum(estimates) + sum(overruns)
	if r.script == ratelua.SlidingWindow {
		// The one bucket holds exactly the actual costs ("m": the first
		// limit's ring total, written by the last settle), in debt past
		// max: a peek and a reserve wait until it leaves the window.
		meta, err := r.raw.Do(ctx, r.raw.B().Hget().Key(r.key).Field("m").Build()).ToString()
		words := strings.Fields(meta)
		if err != nil || len(words) < 9 || words[6] != strconv.FormatInt(actuals, 10) {
			t.Fatalf("overruns: state m %q (%v), want the first ring's total %d (the %d estimates and %d overruns)", meta, err, actuals, sum(estimates), sum(overruns))
		}
		if actuals <= r.caps[0] {
			t.Fatalf("overruns: the test must end past max: %d events", actuals)
		}
		want := []int64{0, 0, 100_000_000, 100_000_000, 1}
		if peek := r.peek(ctx); fmt.Sprint(peek) != fmt.Sprint(want) {
			t.Fatalf("overruns: peek %v, want %v", peek, want)
		}
		r.later(ctx, 100_000_000)
		return
	}
	if r.script == ratelua.ZSetLog {
		// The log holds exactly the actual costs, in debt past max: a peek
		// and a reserve wait until they leave the window (all at now).
		n, err := r.raw.Do(ctx, r.raw.B().Zcount().Key(r.key).Min("0").Max("+inf").Build()).AsInt64()
		if err != nil || n != actuals {
			t.Fatalf("overruns: the log holds %d events (%v), want the %d estimates and %d overruns", n, err, sum(estimates), sum(overruns))
		}
		if actuals <= r.caps[0] {
			t.Fatalf("overruns: the test must end past max: %d events", actuals)
		}
		want := []int64{0, 0, 100_000_000, 100_000_000, 1}
		if peek := r.peek(ctx); fmt.Sprint(peek) != fmt.Sprint(want) {
			t.Fatalf("overruns: peek %v, want %v", peek, want)
		}
		r.later(ctx, 100_000_000)
		return
	}
	// Every bucket is down by the actual costs: the emptiest, the first,
	// is at capacity - actuals < 0, in debt; full again after
	// actuals ms (1 token per ms), and one more token after
	// actuals - capacity + 1 ms.
	level := r.caps[0] - actuals
	if level >= 0 || level < -r.caps[0] {
		t.Fatalf("overruns: the test must end in debt within -capacity: level %d", level)
	}
	peek := r.peek(ctx)
	want := []int64{0, 0, 1 - level, actuals, 1}
	if fmt.Sprint(peek) != fmt.Sprint(want) {
		t.Fatalf("overruns: peek %v, want %v (estimates %d, overruns %d: debt %d)", peek, want, sum(estimates), sum(overruns), -level)
	}
	r.later(ctx, 1-level)
}

// later checks that a reserve of 1 at now is denied for wait, and admitted
// at now + wait (a caller clock: nothing is timed).
func (r *reserveRig) later(ctx context.Context, wait int64) {
	if reply := r.call(ctx, 1, "reserve:9000:600000"); reply[0] != 0 || reply[2] != wait {
		r.t.Fatalf("overruns: a reserve in debt answered %v, want denied for %d ms", reply, wait)
	}
	at, _ := strconv.ParseInt(reserveNow, 10, 64)
	reply := make([]int64, 5)
	args := append([]string{"1", "ms", strconv.FormatInt(at+wait, 10), "reserve:9000:600000"}, r.limits...)
	if err := r.client.Run(ctx, ratelua.Call{Command: "EVALSHA", Script: r.sha, Key: r.key, Args: args}, reply); err != nil || reply[0] != 1 {
		r.t.Fatalf("overruns: a reserve once the debt is paid off answered %v %v, want admitted", reply, err)
	}
}

func sum(xs []int64) (s int64) {
	for _, x := range xs {
		s += x
	}
	return s
}

func count(bs []bool) (n int) {
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
