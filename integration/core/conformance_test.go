package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/login"
	"github.com/ratelua/ratelua/testbench"
)

// The conformance test runs one scripted sequence of calls — every script,
// both modes, resets, peeks, the caller's clock and the server's — through
// the Go API and through the callers in examples/ (Python with redis-py,
// Node with ioredis), each on its own key prefix, and requires the same
// replies and the same final state from all of them.

// confCall is one call of a conformance sequence, in the callers' stdin
// format.
type confCall struct {
	Script  string   `json:"script"`
	Version int      `json:"version"`
	Key     string   `json:"key"`
	Args    []string `json:"args"`
}

// serverClock reports whether the call reads the server's clock (now "").
func (c confCall) serverClock() bool { return len(c.Args) > 2 && c.Args[2] == "" }

// confReply is one call's outcome: the five integers, or the error message
// less a leading "ERR ".
type confReply struct {
	Ints []int64
	Err  string
}

func (r confReply) String() string {
	if r.Ints == nil {
		return fmt.Sprintf("error %q", r.Err)
	}
	return fmt.Sprint(r.Ints)
}

// confTarget is where a conformance run goes.
type confTarget struct {
	// client runs the Go leg and reads the state; a cluster client for a
	// cluster.
	client rueidis.Client
	// addrs are the addresses the callers may dial; they are given the
	// first (for a cluster, any node: the client discovers the rest).
	addrs []string
	// cluster makes the callers connect as cluster clients (--cluster).
	cluster bool
}

// confCaller is a program that replays a sequence: it reads the calls as a
// JSON list on stdin and prints one JSON line per call.
type confCaller struct {
	name string
	// missing says why the caller cannot run here, or "".
	missing func() string
	// command runs the caller against addr.
	command func(ctx context.Context, addr string, cluster bool) *exec.Cmd
}

// confCallers are the callers in examples/, installed by
// .ci/install-callers.
var confCallers = []confCaller{
	{
		name: "python",
		missing: func() string {
			if out, err := exec.Command("/usr/bin/python3", "-c", "import redis, redis.cluster").CombinedOutput(); err != nil {
				return fmt.Sprintf("/usr/bin/python3 cannot import redis (apt-get install python3-redis, or bash .ci/install-callers): %v %s", err, bytes.TrimSpace(out))
			}
			return ""
		},
		command: func(ctx context.Context, addr string, cluster bool) *exec.Cmd {
			args := []string{"-B", filepath.Join(repoRoot, "examples", "python", "conformance.py"), "--addr", addr}
			if cluster {
				args = append(args, "--cluster")
			}
			return exec.CommandContext(ctx, "/usr/bin/python3", args...)
		},
	},
	{
		name: "node",
		missing: func() string {
			if _, err := exec.LookPath("node"); err != nil {
				return "node is not on PATH"
			}
			if _, err := os.Stat(filepath.Join(repoRoot, "examples", "node", "node_modules", "ioredis", "package.json")); err != nil {
				return "ioredis is not installed in examples/node (npm ci there, or bash .ci/install-callers)"
			}
			return ""
		},
		command: func(ctx context.Context, addr string, cluster bool) *exec.Cmd {
			args := []string{filepath.Join(repoRoot, "examples", "node", "conformance.js"), "--addr", addr}
			if cluster {
				args = append(args, "--cluster")
			}
			return exec.CommandContext(ctx, "node", args...)
		},
	},
}

// confLimiter is one limiter of the sequence.
type confLimiter struct {
	label string
	l     *ratelua.Limiter
	// tick is the time between two steps of the sequence on the caller's
	// clock; 0 for a limiter on the server's clock.
	tick time.Duration
}

// confStep is one call of every limiter: n events (0 a peek, -1 a reset)
// for event key number key, at tick number at of the caller's clock.
type confStep struct {
	at  int64
	key int
	n   int64
}

var confSteps = []confStep{
	{0, 0, 1}, {2, 0, 1}, {2, 0, 0}, {3, 1, 1}, {5, 0, 1}, {5, 0, 2},
	{6, 0, 100}, // more than any limit's maximum: never (-1)
	{4, 0, 1},   // the caller's clock behind the state's last write
	{6, 1, 0}, {6, 2, 2}, {7, 0, -1}, {7, 0, 0}, {7, 0, 3}, {8, 0, 1}, {9, 1, 2}, {9, 2, 1},
	{1200, 0, 1}, {1210, 0, 2}, {1211, 0, 0}, {1211, 2, 0}, {7200, 0, 1}, {7201, 0, 0}, {7201, 1, 1},
}

// confEventKeys are the event keys; the second needs escaping in the hash
// tag and is not ASCII. Their tags are in slots 8508, 973 and 14867: one on
// each master of a three-master cluster with the usual even split.
var confEventKeys = []string{"203.0.113.7", "user{42}%/é", "198.51.100.1"}

// confEpoch is where the caller's clock starts.
var confEpoch = time.Unix(1_700_000_000, 0)

// confLimiters builds the sequence's limiters under prefix: every script
// in both modes with the login limits (1 per 5 s and 5 per hour, in ms) and
// with limits of a few hundred microseconds (in us) on a caller clock that
// reads *at, and with long limits on the server's clock, under which
// nothing expires or decays while a test runs. Every limiter has a limit of
// a minute or more, so that no state's TTL (reset_after) runs out in real
// time during a run. (The mode is not part of a state key: the two modes of
// one set of limits share their keys, and the mode 1 calls begin on the
// mode 0 calls' state.)
func confLimiters(t *testing.T, client rueidis.Client, prefix string, at *time.Time) []confLimiter {
	t.Helper()
	must := func(l *ratelua.Limiter, err error) *ratelua.Limiter {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	var out []confLimiter
	for _, countDenied := range []bool{false, true} {
		for _, kind := range []string{"login", "fine", "server clock"} {
			opts := ratelua.Options{Prefix: prefix, Clock: func() time.Time { return *at }, CountDenied: countDenied}
			var limiters []*ratelua.Limiter
			tick := time.Second
			switch kind {
			case "login":
				byName := login.Limiters(t, ratelua.Rueidis(client), opts)
				for _, name := range login.Scripts() {
					limiters = append(limiters, byName[name])
				}
			case "fine":
				tick = 250 * time.Microsecond
				limiters = []*ratelua.Limiter{
					must(ratelua.NewSlidingWindow(ratelua.Rueidis(client), opts, ratelua.Window{Max: 2, Duration: 2500 * time.Microsecond, Resolution: 500 * time.Microsecond}, ratelua.Window{Max: 4, Duration: 300 * time.Second, Resolution: 7 * time.Second})),
					must(ratelua.NewAR1(ratelua.Rueidis(client), opts, ratelua.Decay{Max: 3, Factor: 1.5, Resolution: 700 * time.Microsecond}, ratelua.Decay{Max: 8, Factor: 1.001, Resolution: time.Second})),
					must(ratelua.NewZSetLog(ratelua.Rueidis(client), opts, ratelua.Log{Max: 2, Window: 1500 * time.Microsecond}, ratelua.Log{Max: 6, Window: 10 * time.Minute})),
					must(ratelua.NewTokenBucket(ratelua.Rueidis(client), opts, ratelua.Bucket{Capacity: 3, RefillAmount: 2, RefillInterval: 1100 * time.Microsecond}, ratelua.Bucket{Capacity: 9, RefillAmount: 1, RefillInterval: time.Minute})),
				}
			default:
				opts.Clock, tick = nil, 0
				limiters = []*ratelua.Limiter{
					must(ratelua.NewSlidingWindow(ratelua.Rueidis(client), opts, ratelua.Window{Max: 3, Duration: time.Hour, Resolution: time.Second})),
					must(ratelua.NewAR1(ratelua.Rueidis(client), opts, ratelua.Decay{Max: 3, Factor: 2, Resolution: 1000 * time.Hour})),
					must(ratelua.NewZSetLog(ratelua.Rueidis(client), opts, ratelua.Log{Max: 3, Window: time.Hour})),
					must(ratelua.NewTokenBucket(ratelua.Rueidis(client), opts, ratelua.Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Hour})),
				}
			}
			for _, l := range limiters {
				out = append(out, confLimiter{
					label: fmt.Sprintf("%s %s mode %s (%s)", l.Script(), kind, l.Args(0)[3], l.Args(0)[1]),
					l:     l, tick: tick,
				})
			}
		}
	}
	return out
}

// confSequence builds the calls of the sequence under prefix with
// Limiter.Key and Limiter.Args, and labels them for messages. The calls
// are the same whatever the prefix, but for the keys.
func confSequence(t *testing.T, client rueidis.Client, prefix string) (calls []confCall, labels []string, bad []bool) {
	t.Helper()
	var at time.Time
	for _, cl := range confLimiters(t, client, prefix, &at) {
		add := func(label, eventKey string, args []string, isBad bool) {
			s := cl.l.Script()
			calls = append(calls, confCall{Script: s.Name, Version: s.Version, Key: cl.l.Key(eventKey), Args: args})
			labels = append(labels, cl.label+": "+label)
			bad = append(bad, isBad)
		}
		for i, st := range confSteps {
			at = confEpoch.Add(time.Duration(st.at) * cl.tick)
			add(fmt.Sprintf("step %d (n %d at tick %d, key %d)", i, st.n, st.at, st.key), confEventKeys[st.key], cl.l.Args(st.n), false)
			if i == 3 {
				// Bad arguments: an error reply that writes nothing.
				args := cl.l.Args(1)
				args[1] = "sec"
				add("unit 'sec'", confEventKeys[0], args, true)
				args = cl.l.Args(1)
				args[3] = "2"
				add("mode '2'", confEventKeys[0], args, true)
			}
		}
	}
	c, l, b := confConcurrency(t, client, prefix)
	return append(calls, c...), append(labels, l...), append(bad, b...)
}

// confConcurrency is the concurrency script's part of the sequence: a
// semaphore of 2 slots with leases of 30 s on the caller's clock (ms) on
// the first two event keys, and one of 3 slots with leases of an hour on
// the server's clock on the third: acquires, a decision, renewals and
// releases of held and lost leases, leases of 2 slots, more than max, a
// reset, and bad arguments.
func confConcurrency(t *testing.T, client rueidis.Client, prefix string) (calls []confCall, labels []string, bad []bool) {
	t.Helper()
	var at time.Time
	caller, err1 := ratelua.NewConcurrency(ratelua.Rueidis(client), ratelua.Options{Prefix: prefix, Clock: func() time.Time { return at }},
		ratelua.Slots{Max: 2, Lease: 30 * time.Second})
	server, err2 := ratelua.NewConcurrency(ratelua.Rueidis(client), ratelua.Options{Prefix: prefix},
		ratelua.Slots{Max: 3, Lease: time.Hour})
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	type step struct {
		tick int64  // seconds on the caller's clock
		key  int    // event key
		n    int64  // eventCount: slots
		mode string // "0", "renew", "release"
		id   int64  // the lease, in modes renew and release
		bad  string // the argument to spoil: "mode", "id"
	}
	run := func(s *ratelua.Semaphore, label string, steps []step) {
		for i, st := range steps {
			at = confEpoch.Add(time.Duration(st.tick) * time.Second)
			args := s.Args(st.n)
			if st.mode != "0" {
				args[3] = st.mode
				args = append(args, strconv.FormatInt(st.id, 10))
			}
			switch st.bad {
			case "mode":
				args[3] = "Renew"
			case "id":
				args[len(args)-1] = "0"
			}
			script := s.Script()
			calls = append(calls, confCall{Script: script.Name, Version: script.Version, Key: s.Key(confEventKeys[st.key]), Args: args})
			labels = append(labels, fmt.Sprintf("%s %s step %d (%s %d, lease %d, tick %d, key %d)", script, label, i, st.mode, st.n, st.id, st.tick, st.key))
			bad = append(bad, st.bad != "")
		}
	}
	run(caller, "caller clock", []step{
		{0, 0, 1, "0", 0, ""}, {1, 0, 1, "0", 0, ""}, {2, 0, 1, "0", 0, ""}, {2, 0, 0, "0", 0, ""},
		{3, 0, 1, "renew", 1, ""}, {4, 0, 1, "release", 2, ""}, {4, 0, 1, "release", 2, ""},
		{5, 0, 2, "0", 0, ""}, {5, 0, 3, "0", 0, ""}, {5, 0, 1, "renew", 1, "mode"}, {5, 0, 1, "release", 1, "id"},
		{6, 0, 1, "release", 1, ""}, {6, 0, 2, "0", 0, ""}, {7, 0, 2, "renew", 3, ""}, {7, 0, 1, "release", 3, ""},
		{8, 0, -1, "0", 0, ""}, {8, 0, 2, "renew", 3, ""}, {9, 0, 1, "0", 0, ""},
		{0, 1, 1, "0", 0, ""}, {40, 1, 1, "renew", 1, ""}, {40, 1, 2, "0", 0, ""}, {41, 1, 2, "release", 2, ""},
	})
	run(server, "server clock", []step{
		{0, 2, 2, "0", 0, ""}, {0, 2, 1, "0", 0, ""}, {0, 2, 1, "0", 0, ""}, {0, 2, 0, "0", 0, ""},
		{0, 2, 2, "renew", 1, ""}, {0, 2, 1, "release", 2, ""}, {0, 2, 1, "0", 0, ""},
	})
	// The server-clock steps read TIME: their now is "".
	for i := range calls {
		if strings.Contains(labels[i], "server clock") && calls[i].Args[2] != "" {
			t.Fatalf("%s: now %q on the server's clock", labels[i], calls[i].Args[2])
		}
	}
	return calls, labels, bad
}

// confGo runs calls through the Go API: the registry's EVALSHA (EVAL on
// NOSCRIPT), exactly as a limiter sends them.
func confGo(t *testing.T, ctx context.Context, client rueidis.Client, calls []confCall) []confReply {
	t.Helper()
	registry := ratelua.NewRegistry()
	out := make([]confReply, len(calls))
	for i, c := range calls {
		s, err := registry.Lookup(c.Script, c.Version)
		if err != nil {
			t.Fatal(err)
		}
		ints := make([]int64, 5)
		if err := s.Run(ctx, ratelua.Rueidis(client), c.Key, c.Args, ints); err != nil {
			var se *ratelua.ServerError
			if !errors.As(err, &se) {
				t.Fatalf("call %d: %v", i, err)
			}
			out[i] = confReply{Err: strings.TrimPrefix(se.Message, "ERR ")}
			continue
		}
		out[i] = confReply{Ints: ints}
	}
	return out
}

// confRun runs calls through a caller program.
func confRun(t *testing.T, ctx context.Context, c confCaller, target confTarget, calls []confCall) []confReply {
	t.Helper()
	input, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := c.command(ctx, target.addrs[0], target.cluster)
	cmd.Stdin = bytes.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstderr:\n%s", cmd, err, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	if len(lines) != len(calls) {
		t.Fatalf("%s printed %d lines for %d calls\nstderr:\n%s", c.name, len(lines), len(calls), stderr.String())
	}
	out := make([]confReply, len(calls))
	for i, line := range lines {
		var e struct {
			Error *string `json:"error"`
		}
		switch {
		case strings.HasPrefix(line, "["):
			if err := json.Unmarshal([]byte(line), &out[i].Ints); err != nil || len(out[i].Ints) != 5 {
				t.Fatalf("%s line %d %q: want five integers (%v)", c.name, i+1, line, err)
			}
		case json.Unmarshal([]byte(line), &e) == nil && e.Error != nil:
			out[i].Err = *e.Error
		default:
			t.Fatalf("%s line %d: %q is neither five integers nor {\"error\": ...}", c.name, i+1, line)
		}
	}
	return out
}

// confState is a key's final state: its type and contents, and whether it
// has a TTL.
type confState struct {
	Type     string
	Contents any
	TTL      bool
}

// confStates reads the state of every key the calls touch, in order of
// first use.
func confStates(t *testing.T, ctx context.Context, client rueidis.Client, calls []confCall) []confState {
	t.Helper()
	var out []confState
	for _, key := range confKeys(calls) {
		kind, contents, err := realState(ctx, client, key)
		if err != nil {
			t.Fatalf("state of %q: %v", key, err)
		}
		pttl, err := client.Do(ctx, client.B().Pttl().Key(key).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, confState{Type: kind, Contents: contents, TTL: pttl > 0})
	}
	return out
}

// confKeys are the keys of calls in order of first use.
func confKeys(calls []confCall) []string {
	var keys []string
	seen := map[string]bool{}
	for _, c := range calls {
		if !seen[c.Key] {
			seen[c.Key] = true
			keys = append(keys, c.Key)
		}
	}
	return keys
}

// confShape is what two states on the server's clock must share, their
// times and what follows from them set aside: the type; for a string
// (ar1, token_bucket) its number of words and the limits' signature (the
// second word; from v3 the limits text before "|"), or that it is one
// integer or '<boundary>:<count>' (v6 with one limit); for a hash
// (sliding_window) the signature (from v3 the limits text, field "l") and
// the number of words of field "m" and that every other field is a bucket "<i>.<n>" (how
// many buckets the events fill depends on where the server's clock crossed
// a bucket boundary); for a sorted set (zset_log) the number of members.
func confShape(s confState) string {
	words := func(v string) string {
		if limits, rest, ok := strings.Cut(v, "|"); ok {
			// v3: the limits text, then the time and a number per limit.
			return fmt.Sprintf("limits %q, %d words", limits, len(strings.Fields(rest)))
		}
		if _, err := strconv.ParseInt(v, 10, 64); err == nil {
			// v6 with one limit: token_bucket's now * refill_amount +
			// deficit, or ar1's boundary * 2^20 + a whole count.
			return "one integer"
		}
		if b, c, ok := strings.Cut(v, ":"); ok && !strings.Contains(v, " ") && strings.Trim(b, "0123456789") == "" && c != "" {
			// v6 ar1 with one limit: '<boundary>:<count>'.
			return "boundary:count"
		}
		w := strings.Fields(v)
		if len(w) < 2 {
			return fmt.Sprintf("%q", v)
		}
		if len(w) == 2 || len(w) == 3 && (w[2] == "s" || w[2] == "us") {
			// v5 token_bucket and ar1 with one limit: the time, one number
			// and the unit unless ms (v1 and v2 have a signature and at
			// least one number after the time).
			return fmt.Sprintf("time and a number, %d words", len(w))
		}
		return fmt.Sprintf("%d words, signature %s", len(w), w[1])
	}
	shape := ""
	switch v := s.Contents.(type) {
	case nil:
	case string:
		shape = words(v)
	case map[string]string:
		shape = "m: " + words(v["m"])
		if limits, ok := v["l"]; ok {
			// v3: the limits text in field "l", the time and three
			// numbers per limit in "m".
			shape = fmt.Sprintf("l: %q, m: %d words", limits, len(strings.Fields(v["m"])))
		}
		for f := range v {
			if i, n, ok := strings.Cut(f, "."); f != "m" && f != "l" && (!ok || strings.Trim(i, "0123456789") != "" || strings.Trim(n, "0123456789") != "") {
				shape += fmt.Sprintf(", field %q", f)
			}
		}
	default:
		shape = fmt.Sprintf("%d members", reflect.ValueOf(v).Len())
	}
	return fmt.Sprintf("%s (%s), TTL %v", s.Type, shape, s.TTL)
}

// confDelete deletes the keys of calls, one by one (a cluster client
// routes each).
func confDelete(t *testing.T, ctx context.Context, client rueidis.Client, calls []confCall) {
	t.Helper()
	for _, key := range confKeys(calls) {
		if err := client.Do(ctx, client.B().Del().Key(key).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
}

// confFlushScripts empties the script cache of every node, so that a leg
// meets NOSCRIPT and takes its caller's fallback.
func confFlushScripts(t *testing.T, ctx context.Context, client rueidis.Client) {
	t.Helper()
	for addr, node := range client.Nodes() {
		if err := node.Do(ctx, node.B().ScriptFlush().Build()).Error(); err != nil {
			t.Fatalf("SCRIPT FLUSH on %s: %v", addr, err)
		}
	}
}

// confScriptsLoaded fails unless every script of calls is in the script
// cache of some node again: the caller's NOSCRIPT fallback loaded it.
func confScriptsLoaded(t *testing.T, ctx context.Context, client rueidis.Client, calls []confCall) {
	t.Helper()
	registry := ratelua.NewRegistry()
	seen := map[string]bool{}
	for _, c := range calls {
		s, err := registry.Lookup(c.Script, c.Version)
		if err != nil || seen[s.SHA1] {
			continue
		}
		seen[s.SHA1] = true
		loaded := false
		for _, node := range client.Nodes() {
			exists, err := node.Do(ctx, node.B().ScriptExists().Sha1(s.SHA1).Build()).AsIntSlice()
			loaded = loaded || err == nil && len(exists) == 1 && exists[0] == 1
		}
		if !loaded {
			t.Errorf("%s is in no node's script cache after the run: the NOSCRIPT fallback did not load it", s)
		}
	}
}

// confUnit is the size of the reply's time unit of a call.
func confUnit(c confCall) time.Duration {
	switch c.Args[1] {
	case "s":
		return time.Second
	case "us":
		return time.Microsecond
	}
	return time.Millisecond
}

// checkConformance runs the sequence through the Go API and then through
// every caller on target, and compares every reply and the final state of
// every key with the Go leg's: exactly on the caller's clock; on the
// server's clock allowed, remaining and limit_index exactly, retry_after
// and reset_after within the time elapsed since the Go leg began (ar1's
// decay and sliding_window's buckets follow the server's clock, not the
// call), and the states by shape.
func checkConformance(t *testing.T, target confTarget) {
	ctx := context.Background()
	goStart := time.Now()
	goCalls, labels, bad := confSequence(t, target.client, "conf-go")
	confDelete(t, ctx, target.client, goCalls)
	confFlushScripts(t, ctx, target.client)
	want := confGo(t, ctx, target.client, goCalls)
	wantStates := confStates(t, ctx, target.client, goCalls)
	var errs, serverCalls int
	for i, r := range want {
		if (r.Ints == nil) != bad[i] || bad[i] && !strings.HasPrefix(r.Err, "ratelua: ARGV[") {
			t.Errorf("Go leg, call %d, %s: %s", i, labels[i], r)
		}
		if r.Ints == nil {
			errs++
		}
		if goCalls[i].serverClock() {
			serverCalls++
		}
	}
	t.Logf("%d calls (%d error replies, %d on the server's clock) on %d keys", len(goCalls), errs, serverCalls, len(wantStates))

	for _, caller := range confCallers {
		t.Run(caller.name, func(t *testing.T) {
			if why := caller.missing(); why != "" {
				if os.Getenv("CI") == "true" {
					t.Fatalf("%s caller required under CI=true: %s", caller.name, why)
				}
				t.Skipf("%s caller: %s", caller.name, why)
			}
			calls, _, _ := confSequence(t, target.client, "conf-"+caller.name)
			confDelete(t, ctx, target.client, calls)
			for i := range calls {
				if !reflect.DeepEqual(calls[i].Args, goCalls[i].Args) {
					t.Fatalf("call %d: args %v, the Go leg's %v", i, calls[i].Args, goCalls[i].Args)
				}
			}
			confFlushScripts(t, ctx, target.client)
			got := confRun(t, ctx, caller, target, calls)
			confScriptsLoaded(t, ctx, target.client, calls)
			// The server's clock moved on between the legs.
			elapsed := time.Since(goStart)
			failures := 0
			fail := func(format string, a ...any) {
				t.Helper()
				if failures++; failures <= 20 {
					t.Errorf(format, a...)
				}
			}
			for i, g := range got {
				w := want[i]
				if !calls[i].serverClock() || w.Ints == nil || g.Ints == nil {
					if !reflect.DeepEqual(g, w) {
						fail("call %d, %s: %s %s, Go %s", i, labels[i], caller.name, g, w)
					}
					continue
				}
				tol := int64((elapsed+time.Second)/confUnit(calls[i])) + 1
				for j, name := range []string{"allowed", "remaining", "retry_after", "reset_after", "limit_index"} {
					d := g.Ints[j] - w.Ints[j]
					exact := j != 2 && j != 3 || g.Ints[j] < 0 || w.Ints[j] < 0
					if exact && d != 0 || !exact && (d < -tol || d > tol) {
						fail("call %d, %s: %s differs: %s %s, Go %s (tolerance %d %s)", i, labels[i], name, caller.name, g, w, tol, calls[i].Args[1])
					}
				}
			}
			states := confStates(t, ctx, target.client, calls)
			keys := confKeys(calls)
			server := map[string]bool{}
			for _, c := range calls {
				server[c.Key] = c.serverClock()
			}
			for i, s := range states {
				w := wantStates[i]
				if server[keys[i]] {
					if confShape(s) != confShape(w) {
						fail("state of %q: %s, Go's %s", keys[i], confShape(s), confShape(w))
					}
				} else if !reflect.DeepEqual(s, w) {
					fail("state of %q: %+v, Go's %+v", keys[i], s, w)
				}
			}
			if failures > 20 {
				t.Errorf("... and %d more differences", failures-20)
			}
			if failures == 0 {
				t.Logf("%s: %d replies and %d states as Go's; server-clock durations within %v", caller.name, len(got), len(states), elapsed+time.Second)
			}
		})
	}
}

// TestConformance: the Go API, the Python caller (redis-py) and the Node
// caller (ioredis) in examples/ answer one sequence of calls alike and
// leave the same state, on both servers.
func TestConformance(t *testing.T) {
	eachServer(t, func(t *testing.T, client rueidis.Client, s *testbench.Node) {
		checkConformance(t, confTarget{client: client, addrs: []string{s.Addr}})
	})
}

// TestConformanceSnippets: the snippets in examples/*/README.md are the
// files the conformance callers run.
func TestConformanceSnippets(t *testing.T) {
	for _, c := range []struct{ dir, file, lang string }{{"python", "snippet.py", "python"}, {"node", "snippet.js", "js"}} {
		snippet, err := os.ReadFile(filepath.Join(repoRoot, "examples", c.dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		readme, err := os.ReadFile(filepath.Join(repoRoot, "examples", c.dir, "README.md"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(readme, []byte("```"+c.lang+"\n"+string(snippet)+"```\n")) {
			t.Errorf("examples/%s/README.md does not show %s verbatim in a ```%s block", c.dir, c.file, c.lang)
		}
	}
}

// TestClusterConformance: Go, Python and Node agree on the six-node
// clusters too.
func TestClusterConformance(t *testing.T) {
	onCluster(t, func(t *testing.T, client rueidis.Client, c *testbench.Cluster) {
		checkConformance(t, confTarget{client: client, addrs: c.Addrs(), cluster: true})
	})
}
