package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/internal/keyslot"
	"github.com/ratelua/ratelua/testbench"
)

// env is what a case gets: the deployment, the adapter, a client of the
// adapter on the deployment, a key prefix of its own, and the deployment's
// stopped twin.
type env struct {
	d       deployment
	a       adapter
	client  ratelua.Client
	prefix  string
	stopped *stoppedTwin
}

// cases run, in this order, through every adapter on every deployment;
// the differential case (TestAdapters) makes one more.
var cases = []struct {
	name string
	run  func(t *testing.T, e env)
}{
	{"login", caseLogin},
	{"64-callers-admit-max", caseAtomic},
	{"noscript-after-script-flush", caseScriptFlush},
	{"noscript-after-failover", caseFailover},
	{"fcall-after-function-flush", caseFunctionFlush},
	{"resets", caseResets},
	{"concurrency-64-holders-10-slots", caseConcurrency},
	{"failopen-acl-denies-function", caseACL},
	{"failopen-oom", caseOOM},
	{"failopen-server-stopped", caseStopped},
}

// TestAdapters runs every case through every adapter on both families, a
// single node and a six-node cluster, then the differential case.
func TestAdapters(t *testing.T) {
	for _, kind := range harness.Families() {
		for _, topology := range []string{"single", "cluster"} {
			t.Run(string(kind)+"-"+topology, func(t *testing.T) {
				var d deployment
				if topology == "single" {
					d = single(h.Node(t, kind))
				} else {
					d = onCluster(h.Cluster(t, kind))
				}
				twin := newStoppedTwin(t, kind, topology)
				for _, a := range adapters {
					t.Run(a.name, func(t *testing.T) {
						for _, c := range cases {
							t.Run(c.name, func(t *testing.T) {
								count(t, adapterSuite(a), d, func(t *testing.T) {
									c.run(t, env{d: d, a: a, client: a.connect(t, d, connection{}),
										prefix: c.name + "-" + a.name, stopped: twin})
								})
							})
						}
					})
				}
				t.Run("differential", func(t *testing.T) { differential(t, d) })
			})
		}
	}
}

// caseLogin: the README's worked login case (a real Redis 7.0's replies),
// for every script, on a caller clock.
func caseLogin(t *testing.T, e env) {
	type step struct {
		n    int64 // 0 peeks, -1 resets
		at   int64
		want [5]int64
	}
	steps := map[string][]step{
		ratelua.SlidingWindow: {
			{1, 1000, [5]int64{1, 0, 0, 3200, 1}},
			{1, 1002, [5]int64{0, 0, 3, 3198, 1}},
			{0, 1004, [5]int64{0, 0, 1, 3196, 1}},
			{1, 1005, [5]int64{1, 0, 0, 3195, 1}},
			{-1, 1006, [5]int64{1, 1, 0, 0, 0}},
		},
		ratelua.ZSetLog: {
			{1, 1000, [5]int64{1, 0, 0, 3600, 1}},
			{1, 1002, [5]int64{0, 0, 3, 3598, 1}},
			{1, 1005, [5]int64{1, 0, 0, 3600, 1}},
			{-1, 1006, [5]int64{1, 1, 0, 0, 0}},
		},
		ratelua.TokenBucket: {
			{1, 1000, [5]int64{1, 0, 0, 720, 1}},
			{1, 1002, [5]int64{0, 0, 3, 718, 1}},
			{1, 1005, [5]int64{1, 0, 0, 1435, 1}},
			{-1, 1006, [5]int64{1, 1, 0, 0, 0}},
		},
		ratelua.AR1: {
			{1, 1000, [5]int64{1, 0, 0, 35000, 1}},
			{1, 1002, [5]int64{0, 0, 48, 34998, 1}},
			{1, 1005, [5]int64{0, 0, 45, 34995, 1}},
			{-1, 1006, [5]int64{1, 1, 0, 0, 0}},
		},
	}
	ctx := context.Background()
	var now int64
	limiters := login.Limiters(t, e.client, ratelua.Options{Prefix: e.prefix, Clock: func() time.Time { return time.Unix(now, 0) }})
	for _, name := range login.Scripts() {
		l := limiters[name]
		for i, st := range steps[name] {
			now = st.at
			var r ratelua.Result
			var err error
			switch {
			case st.n < 0:
				err = l.Reset(ctx, "203.0.113.7")
				if err == nil {
					r, err = l.Peek(ctx, "203.0.113.7") // a fresh key
				}
			case st.n == 0:
				r, err = l.Peek(ctx, "203.0.113.7")
			default:
				r, err = l.AllowN(ctx, "203.0.113.7", st.n)
			}
			if err != nil {
				t.Fatalf("%s step %d: %v", name, i, err)
			}
			w := st.want
			want := ratelua.Result{Allowed: w[0] == 1, Remaining: w[1], RetryAfter: time.Duration(w[2]) * time.Second,
				ResetAfter: time.Duration(w[3]) * time.Second, Limit: int(w[4]) - 1}
			if st.n < 0 {
				want.Limit = 0 // a fresh key's peek: the limit with the fewest remaining
			}
			if r != want {
				t.Errorf("%s step %d: %+v, want %+v", name, i, r, want)
			}
		}
	}
}

// caseAtomic: 64 goroutines x 4 calls on one event key admit exactly max
// (10) for every script, in both modes, with no error.
func caseAtomic(t *testing.T, e env) {
	ctx := context.Background()
	at := time.Unix(1_800_000_000, 0)
	for _, countDenied := range []bool{false, true} {
		opts := ratelua.Options{Prefix: fmt.Sprintf("%s-%v", e.prefix, countDenied), Clock: func() time.Time { return at }, CountDenied: countDenied}
		sw, err1 := ratelua.NewSlidingWindow(e.client, opts, ratelua.PerWindow(10, time.Minute))
		ar, err2 := ratelua.NewAR1(e.client, opts, ratelua.Decay{Max: 10, Factor: 1.5, Resolution: time.Minute})
		zl, err3 := ratelua.NewZSetLog(e.client, opts, ratelua.Log{Max: 10, Window: time.Minute})
		tb, err4 := ratelua.NewTokenBucket(e.client, opts, ratelua.Bucket{Capacity: 10, RefillAmount: 1, RefillInterval: time.Hour})
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatal(err)
		}
		for _, l := range []*ratelua.Limiter{sw, ar, zl, tb} {
			var allowed, failed atomic.Int64
			var firstErr atomic.Value
			var wg sync.WaitGroup
			for range 64 {
				wg.Go(func() {
					for range 4 {
						r, err := l.Allow(ctx, "hot")
						if err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, err)
						}
						if r.Allowed {
							allowed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if allowed.Load() != 10 || failed.Load() != 0 {
				t.Errorf("%s (count denied %v): %d admitted of 256, %d errors (%v); want exactly 10 and none",
					l.Script(), countDenied, allowed.Load(), failed.Load(), firstErr.Load())
			}
		}
	}
}

// bucket is a token bucket of 3, refilled one an hour, on a frozen caller
// clock: its Remaining counts the calls it admitted.
func bucket(t *testing.T, client ratelua.Client, prefix string, functions bool) *ratelua.Limiter {
	t.Helper()
	at := time.Unix(1_800_000_000, 0)
	l, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: prefix, Clock: func() time.Time { return at }, Functions: functions},
		ratelua.Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// allow calls l.Allow and fails the test unless it is allowed with
// remaining left.
func allow(t *testing.T, l *ratelua.Limiter, key string, remaining int64) {
	t.Helper()
	r, err := l.Allow(context.Background(), key)
	if err != nil || !r.Allowed || r.Remaining != remaining {
		t.Fatalf("Allow(%q): %+v, %v; want allowed with %d remaining", key, r, err, remaining)
	}
}

// requests are n requests for distinct event keys, spread over every
// master of a cluster.
func requests(n int) []ratelua.Request {
	out := make([]ratelua.Request, n)
	for i := range out {
		out[i] = ratelua.Request{Key: "user-" + strconv.Itoa(i), N: 1}
	}
	return out
}

// batch sends requests and fails the test on any error or a Remaining
// other than remaining.
func batch(t *testing.T, l *ratelua.Limiter, reqs []ratelua.Request, remaining int64) {
	t.Helper()
	for i, o := range l.AllowBatch(context.Background(), reqs) {
		if o.Err != nil || !o.Result.Allowed || o.Result.Remaining != remaining {
			t.Fatalf("batch request %d: %+v; want allowed with %d remaining", i, o, remaining)
		}
	}
}

// scriptCached asks n whether it has the script (SCRIPT EXISTS).
func scriptCached(t *testing.T, n *testbench.Node, sha string) bool {
	t.Helper()
	v, err := n.Do(context.Background(), "SCRIPT", "EXISTS", sha)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(v) == "[1]"
}

// caseScriptFlush: after SCRIPT FLUSH on every node the next call meets
// NOSCRIPT and loads the script with EVAL, for one call and for a batch
// over every master.
func caseScriptFlush(t *testing.T, e env) {
	l := bucket(t, e.client, e.prefix, false)
	sha := l.Script().SHA1
	each(t, e.d.nodes(), "SCRIPT", "FLUSH")
	allow(t, l, "k", 2)
	if owner := e.d.owner(t, l.Key("k")); !scriptCached(t, owner, sha) {
		t.Errorf("%s has not the script after the call: it was not loaded by EVAL", owner)
	}
	reqs := requests(120)
	batch(t, l, reqs, 2)
	each(t, e.d.nodes(), "SCRIPT", "FLUSH")
	batch(t, l, reqs, 1)
	for _, m := range e.d.masters() {
		if !scriptCached(t, m, sha) {
			t.Errorf("%s has not the script after the batch", m)
		}
	}
}

// caseFailover: a replica promoted by CLUSTER FAILOVER has never run the
// script (Redis 7 and Valkey 8 replicate a script's effects, not the
// script); the next call meets NOSCRIPT there, loads it, and finds the
// replicated state. A single node has no replica: it is restarted
// instead (SHUTDOWN SAVE, start), which empties its script cache and
// keeps its data, as a promoted replica would hold it.
func caseFailover(t *testing.T, e env) {
	ctx := context.Background()
	d, client := e.d, e.client
	if d.cluster == nil {
		d = single(testbench.StartSingle(t, testbench.Options{Kind: d.kind}))
		client = e.a.connect(t, d, connection{})
	}
	l := bucket(t, client, e.prefix, false)
	sha := l.Script().SHA1
	key := "k"
	if d.cluster != nil {
		key = shardKey(l, e.a.name)
	}
	each(t, d.nodes(), "SCRIPT", "FLUSH")
	allow(t, l, key, 2)
	old := d.owner(t, l.Key(key))
	var promoted *testbench.Node
	if d.cluster != nil {
		var err error
		if promoted, err = d.cluster.Failover(ctx, old); err != nil {
			t.Fatal(err)
		}
	} else {
		if err := old.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := old.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		promoted = old
	}
	if scriptCached(t, promoted, sha) {
		t.Fatalf("%s already has the script: the case would not meet NOSCRIPT", promoted)
	}
	if d.cluster == nil {
		// The restart closed the client's connections. go-redis checks a
		// pooled connection before using it; rueidis and valkey-go find a
		// dead one by sending on it, and do not resend a script call: each
		// of their connections may fail one call, as unavailability, which
		// records nothing.
		var failed []error
		for {
			r, err := l.Allow(ctx, key)
			if err == nil {
				if !r.Allowed || r.Remaining != 1 {
					t.Fatalf("after the restart and %d failed calls: %+v; want allowed with 1 remaining", len(failed), r)
				}
				break
			}
			if !errors.Is(err, ratelua.ErrUnavailable) || len(failed) == 16 {
				t.Fatalf("after the restart: %v (after %d failed calls: %v); want ErrUnavailable, a few times at most", err, len(failed), failed)
			}
			failed = append(failed, err)
		}
		if len(failed) > 0 {
			t.Logf("%d calls failed on connections that died with the server: %v", len(failed), failed)
		}
	} else {
		allow(t, l, key, 1)
	}
	if !scriptCached(t, promoted, sha) {
		t.Errorf("%s has not the script after the call", promoted)
	}
}

// shardKey is the event key caseFailover uses for the adapter named name
// on a cluster: the first of "k0", "k1", ... whose state key is in the
// adapter's own third of the slots (the shard of one master of the
// shared cluster), so that each adapter fails over a master of its own.
// The masters refuse their vote to a second failover of one shard within
// twice the node timeout: three adapters failing over one shard kept the
// third waiting 10 to 20 s.
func shardKey(l *ratelua.Limiter, name string) string {
	shard := 0
	for i, a := range adapters {
		if a.name == name {
			shard = i % 3
		}
	}
	for i := 0; ; i++ {
		key := "k" + strconv.Itoa(i)
		if int(keyslot.Slot(l.Key(key)))*3/testbench.Slots == shard {
			return key
		}
	}
}

// functionsLoaded reports whether n has the newest release's library.
func functionsLoaded(t *testing.T, n *testbench.Node) bool {
	t.Helper()
	lib, err := ratelua.ReleaseLibrary(0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := n.Do(context.Background(), "FUNCTION", "LIST", "LIBRARYNAME", lib.Name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(fmt.Sprint(v), lib.Name)
}

// caseFunctionFlush: after FUNCTION FLUSH a limiter with
// Options.Functions loads the library on every master and decides as
// EVALSHA does; again for a batch over every master.
func caseFunctionFlush(t *testing.T, e env) {
	ctx := context.Background()
	at := time.Unix(1_800_000_000, 0)
	limiter := func(prefix string, functions bool) *ratelua.Limiter {
		l, err := ratelua.NewSlidingWindow(e.client, ratelua.Options{Prefix: prefix, Clock: func() time.Time { return at }, Functions: functions},
			ratelua.Window{Max: 3, Duration: time.Minute, Resolution: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	viaEval, viaFunc := limiter(e.prefix+"-eval", false), limiter(e.prefix+"-fcall", true)
	each(t, e.d.masters(), "FUNCTION", "FLUSH")
	for i := range 5 {
		if i == 2 {
			each(t, e.d.masters(), "FUNCTION", "FLUSH")
		}
		a, err1 := viaEval.Allow(ctx, "k")
		b, err2 := viaFunc.Allow(ctx, "k")
		if err1 != nil || err2 != nil || a != b {
			t.Errorf("call %d: EVALSHA %+v %v, FCALL %+v %v", i, a, err1, b, err2)
		}
	}
	for _, m := range e.d.masters() {
		if !functionsLoaded(t, m) {
			t.Errorf("%s has not the library", m)
		}
	}
	each(t, e.d.masters(), "FUNCTION", "FLUSH")
	fb := bucket(t, e.client, e.prefix+"-batch", true)
	batch(t, fb, requests(120), 2)
}

// caseResets: Reset and ResetMany make keys fresh; ResetPrefix deletes
// exactly the prefix's state keys, not those of a longer sibling prefix
// or of the prefix followed by ":admin", nor other keys under the prefix.
func caseResets(t *testing.T, e env) {
	ctx := context.Background()
	p := e.prefix
	l := bucket(t, e.client, p, false)
	siblings := []*ratelua.Limiter{bucket(t, e.client, p+"x", false), bucket(t, e.client, p+":admin", false)}
	reqs := requests(300)
	batch(t, l, reqs, 2)
	for _, s := range siblings {
		batch(t, s, reqs[:20], 2)
	}
	others := []string{p + ":session:42", p + ":{user-1}:token_bucket:v2:notahash", p + ":{user-2}", p}
	for _, k := range others {
		if _, err := e.d.owner(t, k).Do(ctx, "SET", k, "x"); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Reset(ctx, "user-0"); err != nil {
		t.Fatal(err)
	}
	allow(t, l, "user-0", 2)
	if err := l.Reset(ctx, "user-0"); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 99)
	for i := range keys {
		keys[i] = reqs[1+i].Key
	}
	if err := l.ResetMany(ctx, keys); err != nil {
		t.Fatal(err)
	}
	batch(t, l, reqs[:100], 2) // fresh again: 100 keys hold state, and 200 from before
	n, err := ratelua.ResetPrefix(ctx, e.client, p, true, nil)
	if err != nil || n != 300 {
		t.Fatalf("ResetPrefix dry run: %d, %v; want 300", n, err)
	}
	n, err = ratelua.ResetPrefix(ctx, e.client, p, false, nil)
	if err != nil || n != 300 {
		t.Fatalf("ResetPrefix: %d, %v; want 300", n, err)
	}
	for _, r := range []ratelua.Request{reqs[0], reqs[150], reqs[299]} {
		allow(t, l, r.Key, 2)
	}
	for _, s := range siblings {
		if r, err := s.Peek(ctx, reqs[3].Key); err != nil || r.Remaining != 2 {
			t.Errorf("ResetPrefix(%q) touched %q: %+v %v", p, s.Key(""), r, err)
		}
	}
	for _, k := range others {
		if v, err := e.d.owner(t, k).Do(ctx, "EXISTS", k); err != nil || v != int64(1) {
			t.Errorf("ResetPrefix(%q) deleted %q (%v %v)", p, k, v, err)
		}
	}
}

// caseACL: a user denied the FUNCTION command, after FUNCTION FLUSH: the
// library load a FailOpen limiter with Functions needs is refused
// (NOPERM), the server answered, so the limiter denies with ErrScript.
func caseACL(t *testing.T, e env) {
	ctx := context.Background()
	user, password := "ratelua-nofn-"+e.a.name, "pw-"+e.a.name
	each(t, e.d.nodes(), "ACL", "SETUSER", user, "reset", "on", ">"+password, "~*", "&*", "+@all", "-function")
	t.Cleanup(func() { each(t, e.d.nodes(), "ACL", "DELUSER", user) })
	each(t, e.d.masters(), "FUNCTION", "FLUSH")
	client := e.a.connect(t, e.d, connection{user: user, password: password})
	l, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: e.prefix, Functions: true, FailOpen: true}, ratelua.PerSecond(1, 5))
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Allow(ctx, "k")
	if r.Allowed || !errors.Is(err, ratelua.ErrScript) || errors.Is(err, ratelua.ErrUnavailable) || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("FailOpen, FUNCTION denied: %+v, %v; want denied with ErrScript (NOPERM)", r, err)
	}
}

// caseOOM: maxmemory 1 with noeviction: the script's write is refused
// (OOM), the server answered, so a FailOpen limiter denies with ErrScript.
func caseOOM(t *testing.T, e env) {
	ctx := context.Background()
	l, err := ratelua.NewTokenBucket(e.client, ratelua.Options{Prefix: e.prefix, FailOpen: true}, ratelua.PerSecond(1, 5))
	if err != nil {
		t.Fatal(err)
	}
	allow(t, l, "warm", 4) // connected, script cached
	masters := e.d.masters()
	each(t, masters, "CONFIG", "SET", "maxmemory-policy", "noeviction")
	each(t, masters, "CONFIG", "SET", "maxmemory", "1")
	t.Cleanup(func() { each(t, masters, "CONFIG", "SET", "maxmemory", "0") })
	for _, key := range []string{"warm", "new"} {
		r, err := l.Allow(ctx, key)
		if r.Allowed || !errors.Is(err, ratelua.ErrScript) || errors.Is(err, ratelua.ErrUnavailable) || !strings.Contains(err.Error(), "OOM") {
			t.Errorf("FailOpen, out of memory, key %q: %+v, %v; want denied with ErrScript (OOM)", key, r, err)
		}
	}
}

// caseStopped: the deployment's twin is stopped: a call cannot be sent,
// so a fail-closed limiter denies and a FailOpen one admits, both with
// ErrUnavailable.
func caseStopped(t *testing.T, e env) {
	limiters, ok := e.stopped.limiters[e.a.name]
	if !ok {
		t.Fatalf("no limiters of %s on the stopped twin: %v", e.a.name, e.stopped.err)
	}
	for _, l := range limiters {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := l.limiter.Allow(ctx, "k")
		cancel()
		t.Logf("FailOpen %v: %v", l.failOpen, err)
		if r.Allowed != l.failOpen || !errors.Is(err, ratelua.ErrUnavailable) {
			t.Errorf("FailOpen %v, server stopped: %+v, %v; want allowed %v with ErrUnavailable", l.failOpen, r, err, l.failOpen)
		}
	}
}

// stoppedTwin is a deployment of its own (a single node or a six-node
// cluster) that every adapter connected to while it ran, and that is
// stopped before the cases use it.
type stoppedTwin struct {
	limiters map[string][]stoppedLimiter
	err      error
}

type stoppedLimiter struct {
	limiter  *ratelua.Limiter
	failOpen bool
}

// newStoppedTwin starts the twin, connects every adapter to it, builds a
// fail-closed and a FailOpen limiter per adapter that each admit once,
// and stops every node.
func newStoppedTwin(t *testing.T, kind testbench.Kind, topology string) *stoppedTwin {
	t.Helper()
	twin := &stoppedTwin{limiters: map[string][]stoppedLimiter{}}
	var d deployment
	var stop func() error
	if topology == "single" {
		n := testbench.StartSingle(t, testbench.Options{Kind: kind})
		d, stop = single(n), n.Stop
	} else {
		c := testbench.Start(t, testbench.Options{Kind: kind, Config: harness.ClusterConfig()})
		// Stop, not Close: a stopped node keeps its port claimed until the
		// cluster is closed at the test's end, so no other bench (another
		// package's cluster, started meanwhile) can answer on its address.
		d, stop = onCluster(c), func() error {
			var errs []error
			for _, n := range c.Nodes {
				errs = append(errs, n.Stop())
			}
			return errors.Join(errs...)
		}
	}
	for _, a := range adapters {
		client := a.connect(t, d, connection{noRetry: true})
		for _, failOpen := range []bool{false, true} {
			l, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "stopped", FailOpen: failOpen}, ratelua.PerSecond(1, 5))
			if err == nil {
				_, err = l.Allow(context.Background(), "k")
			}
			if err != nil {
				twin.err = fmt.Errorf("%s: %w", a.name, err)
				continue
			}
			twin.limiters[a.name] = append(twin.limiters[a.name], stoppedLimiter{l, failOpen})
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return twin
}
