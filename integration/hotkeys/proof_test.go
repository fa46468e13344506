package hotkeys

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/harness"
)

// The fleet: 4 worker processes of 32 goroutines on one hot key for 20 s
// (issue 32). For the first 10 s each goroutine pauses 5 ms after a
// decision (at most 25,600 decisions a second in all, under the
// per-second bucket: batches of hundreds), then none (far over it: the
// buckets run dry and batches shrink to nothing).
const (
	fleetWorkers    = 4
	fleetGoroutines = 32
	fleetDuration   = 20 * time.Second
	fleetPacedFor   = 10 * time.Second
	fleetPace       = 5 * time.Millisecond
	fleetLifetime   = 100 * time.Millisecond
)

// fleetBuckets are the limits: a day's bucket first (it refills less than
// a unit in the test: its state is the units debited), one of 50,000 a
// second and one of 300,000 a minute.
var fleetBuckets = []ratelua.Bucket{
	{Capacity: 10_000_000, RefillAmount: 1, RefillInterval: 24 * time.Hour},
	{Capacity: 50_000, RefillAmount: 50_000, RefillInterval: time.Second},
	{Capacity: 300_000, RefillAmount: 300_000, RefillInterval: time.Minute},
}

// target is a server the fleet runs on.
type target struct {
	name   string
	addrs  []string
	server harness.Server
}

// eachTarget runs f on the single node and the six-node cluster of both
// families, in parallel. A missing server skips, except under CI=true.
func eachTarget(t *testing.T, clusters bool, f func(t *testing.T, tg target)) {
	for _, kind := range harness.Families() {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			n := h.Node(t, kind)
			tg := target{name: string(kind), addrs: []string{n.Addr}, server: harness.Single(n)}
			h.Record(t, suite, "", tg.server)
			f(t, tg)
		})
		if !clusters {
			continue
		}
		t.Run(string(kind)+"-cluster", func(t *testing.T) {
			t.Parallel()
			c := h.Cluster(t, kind)
			tg := target{name: string(kind) + "-cluster", addrs: c.Addrs(), server: harness.OnCluster(c)}
			h.Record(t, suite, "", tg.server)
			f(t, tg)
		})
	}
}

// startWorker starts a worker process of cfg, its stderr kept in a file
// of dir.
func startWorker(t *testing.T, cfg workerConfig, dir string, i int) *exec.Cmd {
	t.Helper()
	text, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.Create(filepath.Join(dir, fmt.Sprintf("stderr-%d", i)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stderr.Close() })
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerEnv+"="+string(text))
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker %d: %v", i, err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

// waitWorker waits for worker i to end and fails t unless it exited 0.
func waitWorker(t *testing.T, cmd *exec.Cmd, dir string, i int) {
	t.Helper()
	if err := cmd.Wait(); err != nil {
		out, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("stderr-%d", i)))
		t.Fatalf("worker %d: %v\n%s", i, err, out)
	}
}

// fleetConfig is the configuration of worker i of a fleet on tg.
func fleetConfig(tg target, prefix, key, dir string, i int) workerConfig {
	return workerConfig{
		Addrs: tg.addrs, Prefix: prefix, Key: key, Buckets: fleetBuckets,
		Goroutines: fleetGoroutines, Duration: fleetDuration,
		Pace: fleetPace, PacedFor: fleetPacedFor, Lifetime: fleetLifetime,
		DenyCache: 1000, Log: filepath.Join(dir, fmt.Sprintf("log-%d", i)),
	}
}

// stateClient is a client of tg and a limiter of the fleet's limits with
// prefix, to read the state.
func stateClient(t *testing.T, tg target, prefix string) (rueidis.Client, *ratelua.Limiter) {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: tg.addrs, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	l, err := ratelua.NewTokenBucket(ratelua.Rueidis(client), ratelua.Options{Prefix: prefix}, fleetBuckets...)
	if err != nil {
		t.Fatal(err)
	}
	return client, l
}

// endedLogs reads the logs of n workers that closed (each wrote its end
// line, with as many admissions as its log holds), and their end lines
// summed.
func endedLogs(t *testing.T, dir string, n int) ([]workerLog, endLine) {
	t.Helper()
	logs := make([]workerLog, n)
	var sum endLine
	for i := range logs {
		w, err := readLog(filepath.Join(dir, fmt.Sprintf("log-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		if !w.ended || int64(len(w.admits)) != w.end.admitted {
			t.Fatalf("worker %d: its log has %d admissions, its end line %+v (ended %v)", i, len(w.admits), w.end, w.ended)
		}
		logs[i] = w
		sum.decisions += w.end.decisions
		sum.admitted += w.end.admitted
		sum.calls += w.end.calls
		sum.local += w.end.local
		sum.pacedDecisions += w.end.pacedDecisions
		sum.pacedCalls += w.end.pacedCalls
	}
	return logs, sum
}

// slackOf is the longest admitted Allow plus the longest reserve: a
// batch's units are debited up to that long before its Lifetime starts,
// and its give-back reaches the server up to that long after it ends.
func slackOf(logs []workerLog) time.Duration {
	var allow, reserve int64
	for _, w := range logs {
		allow = max(allow, w.end.maxAllow)
		for _, r := range w.reserves {
			reserve = max(reserve, r.latency)
		}
	}
	return time.Duration(allow + reserve)
}

// TestHotKeysFleet is the proof of issue 32: 4 processes x 32 goroutines
// on one hot key for 20 s, on redis-server and valkey-server, single and
// six-node cluster, with a day's, a second's and a minute's bucket.
// Checked from the log of every admission: (a) in any window of W, the
// admissions are at most what each bucket debits over W (and one
// millisecond, the limiter's unit): v7 holds a batch's units until it is
// settled, so a unit admitted late in its batch is never counted out of a
// window that admitted it (before that rule a strict 1 s window saw up to
// 1.3% more than its bound); (b) after every worker's Close, the day bucket's state on the
// server is exactly the units admitted; (c) at most 0.1 server calls per
// decision over the whole run, and while the key is under its limits
// (the first 10 s; after them the buckets are dry).
func TestHotKeysFleet(t *testing.T) {
	eachTarget(t, true, func(t *testing.T, tg target) {
		dir := t.TempDir()
		prefix, key := "hotfleet", fmt.Sprintf("fleet-%s-%d", tg.name, time.Now().UnixNano())
		var cmds []*exec.Cmd
		for i := range fleetWorkers {
			cmds = append(cmds, startWorker(t, fleetConfig(tg, prefix, key, dir, i), dir, i))
		}
		for i, cmd := range cmds {
			waitWorker(t, cmd, dir, i)
		}
		logs, sum := endedLogs(t, dir, fleetWorkers)
		decisions, admitted, calls, local := sum.decisions, sum.admitted, sum.calls, sum.local
		pacedDecisions, pacedCalls := sum.pacedDecisions, sum.pacedCalls
		var reserves int64
		for _, w := range logs {
			reserves += int64(len(w.reserves))
		}
		admits := sortedAdmits(logs)
		slack := slackOf(logs)
		t.Logf("%s: %d decisions, %d admitted, %d from batches, %d server calls (%d batches reserved), slack %v; paced (under the limits): %d decisions, %d calls, %.4f per decision; unpaced (the buckets dry): %d decisions, %d calls, %.4f per decision",
			tg.name, decisions, admitted, local, calls, reserves, slack,
			pacedDecisions, pacedCalls, float64(pacedCalls)/float64(pacedDecisions),
			decisions-pacedDecisions, calls-pacedCalls, float64(calls-pacedCalls)/float64(decisions-pacedDecisions))
		// (a) the windows.
		for _, f := range checkWindows(admits, fleetBuckets, time.Millisecond) {
			t.Log(f)
			if float64(f.surely) > f.bound {
				t.Errorf("over the limit: %v", f)
			}
		}
		// (b) the server's state after Close.
		client, l := stateClient(t, tg, prefix)
		got, err := consumed(context.Background(), client, l, key, 0, fleetBuckets[0])
		if err != nil {
			t.Fatal(err)
		}
		if got != admitted {
			t.Errorf("after every worker's Close the day bucket has taken %d units, the workers admitted %d", got, admitted)
		}
		// (c) server calls per decision, over the whole run and while the
		// key is under its limits. (Once a bucket is dry each batch
		// shrinks to 1, as the rules say, and each process holds the
		// server's denial of the hot key for a Lifetime.)
		if per := float64(calls) / float64(decisions); per > 0.1 {
			t.Errorf("%d server calls for %d decisions: %.3f per decision, want at most 0.1", calls, decisions, per)
		}
		if per := float64(pacedCalls) / float64(pacedDecisions); per > 0.1 {
			t.Errorf("%d server calls for %d decisions under the limits: %.3f per decision, want at most 0.1", pacedCalls, pacedDecisions, per)
		}
		if local < admitted/2 {
			t.Errorf("only %d of %d admissions came from batches", local, admitted)
		}
	})
}

// TestHotKeysSIGKILL: on both servers and their clusters, one of 4
// workers is SIGKILLed mid-run, while it holds batches. The units it lost (the server's day bucket less every
// admission logged) are shown, are at least 0 (no unit was admitted twice:
// every admission was debited) and at most the units of the batches it
// reserved within a Lifetime (+ twice the slack) of its death, the only
// ones that could still hold units; so the server's state is the
// admissions plus at most the killed worker's batches.
func TestHotKeysSIGKILL(t *testing.T) {
	eachTarget(t, true, func(t *testing.T, tg target) {
		dir := t.TempDir()
		prefix, key := "hotkill", fmt.Sprintf("kill-%s-%d", tg.name, time.Now().UnixNano())
		var cmds []*exec.Cmd
		for i := range fleetWorkers {
			cfg := fleetConfig(tg, prefix, key, dir, i)
			cfg.Duration, cfg.PacedFor = 8*time.Second, 8*time.Second
			cfg.Stream = i == 0
			cmds = append(cmds, startWorker(t, cfg, dir, i))
		}
		// Kill worker 0 once it has reserved 10 batches (paced: it holds
		// one nearly all the time).
		victim := filepath.Join(dir, "log-0")
		exited := make(chan error, 1)
		go func() { exited <- cmds[0].Wait() }()
		for {
			w, err := readLog(victim)
			if err != nil && !errors.Is(err, fs.ErrNotExist) && !strings.Contains(err.Error(), "malformed") {
				t.Fatal(err)
			}
			if len(w.reserves) >= 10 {
				break
			}
			select {
			case err := <-exited:
				out, _ := os.ReadFile(filepath.Join(dir, "stderr-0"))
				t.Fatalf("worker 0 ended (%v) before it reserved 10 batches: %d\n%s", err, len(w.reserves), out)
			case <-time.After(10 * time.Millisecond): // polls the log; no ordering rests on it
			}
		}
		killed := time.Now()
		if err := cmds[0].Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := <-exited; err == nil {
			t.Fatal("worker 0 exited 0 after SIGKILL")
		}
		for i, cmd := range cmds[1:] {
			waitWorker(t, cmd, dir, i+1)
		}
		logs := make([]workerLog, fleetWorkers)
		for i := range logs {
			w, err := readLog(filepath.Join(dir, fmt.Sprintf("log-%d", i)))
			if err != nil {
				t.Fatal(err)
			}
			logs[i] = w
		}
		if logs[0].ended {
			t.Fatal("worker 0 wrote its end line: it was not killed mid-run")
		}
		admitted := int64(0)
		for _, w := range logs {
			admitted += int64(len(w.admits))
		}
		slack := slackOf(logs)
		// A batch admits for Lifetime from its R line (written before the
		// batch serves), and its give-back takes a round trip more: only
		// those reserved within Lifetime + 2 x slack of the kill can hold
		// units.
		var held int64
		since := fleetLifetime + 2*slack
		for _, r := range logs[0].reserves {
			if r.at >= killed.Add(-since).UnixNano() {
				held += r.units
			}
		}
		client, l := stateClient(t, tg, prefix)
		got, err := consumed(context.Background(), client, l, key, 0, fleetBuckets[0])
		if err != nil {
			t.Fatal(err)
		}
		lost := got - admitted
		t.Logf("%s: the killed worker reserved %d batches; the server's day bucket took %d units, %d were admitted: %d lost with the killed worker (its batches of the last %v held at most %d)",
			tg.name, len(logs[0].reserves), got, admitted, lost, since, held)
		if lost < 0 {
			t.Errorf("%d units admitted that the server did not debit", -lost)
		}
		if lost > held {
			t.Errorf("%d units lost, more than the %d the killed worker's batches could hold", lost, held)
		}
	})
}

// windowFleets are the window scripts' fleets: sliding_window with a
// second's window of 100 ms buckets and ten seconds' of 1 s buckets, and
// zset_log with a second's log. Their maxima are above what the paced
// phase asks (2 x 16 goroutines pausing 5 ms: at most 6,400 a second)
// and far below what the unpaced phase asks.
var windowFleets = []struct {
	name    string
	windows []ratelua.Window
	logs    []ratelua.Log
}{
	{name: "sliding_window", windows: []ratelua.Window{
		{Max: 20_000, Duration: time.Second, Resolution: 100 * time.Millisecond},
		{Max: 60_000, Duration: 10 * time.Second, Resolution: time.Second},
	}},
	{name: "zset_log", logs: []ratelua.Log{{Max: 10_000, Window: time.Second}}},
}

// TestHotKeysWindowFleet is the fleet proof on the window scripts, on a
// single node of both servers: 2 processes x 16 goroutines on one hot key
// for 10 s (5 s paced, then unpaced). Checked from the log of every
// admission: every window the script counts holds at most its Max
// admissions (sliding_window: every run of its buckets; zset_log: any span
// of its window less one unit), although a batch's units are admitted up
// to a Lifetime after its reserve; and at most 0.1 server calls per
// decision.
func TestHotKeysWindowFleet(t *testing.T) {
	eachTarget(t, false, func(t *testing.T, tg target) {
		for _, fleet := range windowFleets {
			t.Run(fleet.name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				prefix, key := "hotwin", fmt.Sprintf("%s-%s-%d", fleet.name, tg.name, time.Now().UnixNano())
				const workers = 2
				var cmds []*exec.Cmd
				for i := range workers {
					cfg := fleetConfig(tg, prefix, key, dir, i)
					cfg.Buckets, cfg.Windows, cfg.Logs = nil, fleet.windows, fleet.logs
					cfg.Goroutines, cfg.Duration, cfg.PacedFor = 16, 10*time.Second, 5*time.Second
					cmds = append(cmds, startWorker(t, cfg, dir, i))
				}
				for i, cmd := range cmds {
					waitWorker(t, cmd, dir, i)
				}
				logs, sum := endedLogs(t, dir, workers)
				decisions, admitted, calls, local := sum.decisions, sum.admitted, sum.calls, sum.local
				t.Logf("%s %s: %d decisions, %d admitted, %d from batches, %d server calls (%.4f per decision)",
					tg.name, fleet.name, decisions, admitted, local, calls, float64(calls)/float64(decisions))
				admits := sortedAdmits(logs)
				findings := checkSlidingWindows(admits, fleet.windows)
				if fleet.logs != nil {
					findings = checkLogs(admits, fleet.logs, time.Millisecond)
				}
				for _, f := range findings {
					t.Log(f)
					if float64(f.surely) > f.bound {
						t.Errorf("over the limit: %v", f)
					}
				}
				if per := float64(calls) / float64(decisions); per > 0.1 {
					t.Errorf("%d server calls for %d decisions: %.3f per decision, want at most 0.1", calls, decisions, per)
				}
				if local < admitted/2 {
					t.Errorf("only %d of %d admissions came from batches", local, admitted)
				}
			})
		}
	})
}
