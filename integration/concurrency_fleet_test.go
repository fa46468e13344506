package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/testbench"
)

// The fleet proof of the concurrency script: processes of this test binary
// (TestConcurrencyFleetWorker, re-executed with fleetRole set) contend for
// the slots of one key on a real server or cluster, each goroutine writing
// down when it held a slot by the machine's clock: from the moment Acquire
// returned its lease to the moment before it called Release. Those
// intervals lie inside the server's leases, so if more than max of them
// overlap at some instant, more than max holders ran at once. The parent
// sweeps the intervals of every process.

// The worker's settings, from the parent, in its environment.
const (
	fleetRole     = "RATELUA_FLEET_ROLE"     // "contend" or "hold"
	fleetAddrs    = "RATELUA_FLEET_ADDRS"    // the servers, comma-separated
	fleetPrefix   = "RATELUA_FLEET_PREFIX"   // the Semaphore's prefix
	fleetMax      = "RATELUA_FLEET_MAX"      // Slots.Max
	fleetLease    = "RATELUA_FLEET_LEASE"    // Slots.Lease
	fleetRenew    = "RATELUA_FLEET_RENEW"    // Slots.Renew (contend)
	fleetFor      = "RATELUA_FLEET_FOR"      // how long to contend
	fleetHolders  = "RATELUA_FLEET_HOLDERS"  // goroutines (contend) or leases (hold)
	fleetLongHold = "RATELUA_FLEET_LONGHOLD" // the longest hold (contend)
)

// fleetKey is the event key every process contends for.
const fleetKey = "upstream"

// fleetSuite is the suite the fleet tests' cases are counted in: a single
// node and the shared cluster of each family (TestConcurrencyFleet), and
// a dedicated cluster per fault (TestConcurrencyFailover).
const fleetSuite = "concurrency fleet"

// TestConcurrencyFleetWorker is one process of the fleet tests; run alone,
// it has nothing to do.
func TestConcurrencyFleetWorker(t *testing.T) {
	role := os.Getenv(fleetRole)
	if role == "" {
		t.Skip("a worker process of TestConcurrencyFleet, started by it")
	}
	env := func(name string) string { return os.Getenv(name) }
	duration := func(name string) time.Duration {
		d, err := time.ParseDuration(env(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	number := func(name string) int {
		n, err := strconv.Atoi(env(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: strings.Split(env(fleetAddrs), ","), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	slots := ratelua.Slots{Max: int64(number(fleetMax)), Lease: duration(fleetLease)}
	if role == "contend" {
		slots.Renew = duration(fleetRenew)
	}
	sem, err := ratelua.NewConcurrency(ratelua.Rueidis(client), ratelua.Options{Prefix: env(fleetPrefix)}, slots)
	if err != nil {
		t.Fatal(err)
	}
	switch role {
	case "contend":
		fleetContend(sem, number(fleetHolders), duration(fleetFor), duration(fleetLongHold))
	case "hold":
		fleetHold(t, sem, number(fleetHolders))
	}
}

// fleetContend runs holders goroutines for d: each acquires a slot, holds
// it (1 to 20 ms, or one time in ten up to longest, stopping early if the
// lease is lost), releases it, and tries again; a denied one waits 1 to 10
// ms (at most its RetryAfter). It prints the intervals it held ("fleet I
// <start> <end> <lost>", Unix ns) and a summary ("fleet S <acquired>
// <denied> <errors> <lost>").
func fleetContend(sem *ratelua.Semaphore, holders int, d, longest time.Duration) {
	var mu sync.Mutex
	var lines []string
	var acquired, denied, failed, lost int
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			for time.Now().Before(end) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				lease, res, err := sem.Acquire(ctx, fleetKey)
				cancel()
				if err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if lease == nil {
					mu.Lock()
					denied++
					mu.Unlock()
					time.Sleep(min(res.RetryAfter, time.Duration(1+r.IntN(10))*time.Millisecond))
					continue
				}
				start := time.Now()
				hold := time.Duration(1+r.IntN(20)) * time.Millisecond
				if r.IntN(10) == 0 {
					hold = time.Duration(r.Int64N(int64(longest)))
				}
				select {
				case <-time.After(hold):
				case <-lease.Lost():
				}
				stop := time.Now()
				ctx, cancel = context.WithTimeout(context.Background(), time.Second)
				err = lease.Release(ctx)
				cancel()
				wasLost := errors.Is(err, ratelua.ErrLeaseLost)
				mu.Lock()
				acquired++
				if wasLost {
					lost++
				} else if err != nil {
					failed++
				}
				lines = append(lines, fmt.Sprintf("fleet I %d %d %t", start.UnixNano(), stop.UnixNano(), wasLost))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	w := bufio.NewWriter(os.Stdout)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "fleet S %d %d %d %d\n", acquired, denied, failed, lost)
	w.Flush()
}

// fleetHold acquires n slots and renews them every 300 ms until it is
// killed, printing "fleet R <sent> <answered>" (Unix ns) after each round
// of renewals: the leases end Slots.Lease after a time between the two.
func fleetHold(t *testing.T, sem *ratelua.Semaphore, n int) {
	ctx := context.Background()
	var leases []*ratelua.Lease
	sent := time.Now()
	for range n {
		lease, _, err := sem.Acquire(ctx, fleetKey)
		if err != nil || lease == nil {
			t.Fatalf("hold: %v, %v", lease, err)
		}
		leases = append(leases, lease)
	}
	for {
		fmt.Printf("fleet R %d %d\n", sent.UnixNano(), time.Now().UnixNano())
		time.Sleep(300 * time.Millisecond)
		sent = time.Now()
		for _, l := range leases {
			if err := l.Renew(ctx); err != nil {
				t.Fatalf("hold: renew: %v", err)
			}
		}
	}
}

// fleetWorker is a started worker process.
type fleetWorker struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan error
}

// startFleetWorker starts a worker with the settings in env.
func startFleetWorker(t *testing.T, env map[string]string) *fleetWorker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrencyFleetWorker$", "-test.count=1")
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &fleetWorker{cmd: cmd, lines: make(chan string, 1<<16), done: make(chan error, 1)}
	go func() {
		scan := bufio.NewScanner(stdout)
		for scan.Scan() {
			if line := scan.Text(); strings.HasPrefix(line, "fleet ") {
				w.lines <- line
			}
		}
		io.Copy(io.Discard, stdout)
		close(w.lines)
		err := cmd.Wait()
		if err != nil && stderr.Len() > 0 {
			err = fmt.Errorf("%w: %s", err, lastLines([]byte(stderr.String()), 10))
		}
		w.done <- err
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	})
	return w
}

// fleetTally is what the processes of a contention run saw.
type fleetTally struct {
	intervals                      [][2]int64
	acquired, denied, errors, lost int
}

// collect reads every worker's output until it exits.
func (f *fleetTally) collect(t *testing.T, workers []*fleetWorker) {
	t.Helper()
	for _, w := range workers {
		for line := range w.lines {
			fields := strings.Fields(line)
			switch {
			case fields[1] == "I" && len(fields) == 5:
				a, _ := strconv.ParseInt(fields[2], 10, 64)
				b, _ := strconv.ParseInt(fields[3], 10, 64)
				f.intervals = append(f.intervals, [2]int64{a, b})
			case fields[1] == "S" && len(fields) == 6:
				n := make([]int, 4)
				for i := range n {
					n[i], _ = strconv.Atoi(fields[2+i])
				}
				f.acquired += n[0]
				f.denied += n[1]
				f.errors += n[2]
				f.lost += n[3]
			default:
				t.Fatalf("worker printed %q", line)
			}
		}
		if err := <-w.done; err != nil {
			t.Fatalf("worker: %v", err)
		}
	}
}

// fleetSweep is the overlap of the intervals: the most held at one
// instant, how many intervals began while max or more were held (grants
// beyond max), the time with more than max held, and the last instant
// with more than max held (0 if none).
type fleetSweep struct {
	most, beyond int
	over         time.Duration
	lastOver     int64
}

func sweep(intervals [][2]int64, limit int) fleetSweep {
	type event struct {
		at    int64
		delta int
	}
	events := make([]event, 0, 2*len(intervals))
	for _, iv := range intervals {
		events = append(events, event{iv[0], 1}, event{iv[1], -1})
	}
	// At one instant a start counts before an end: both were held.
	slices.SortFunc(events, func(a, b event) int {
		if a.at != b.at {
			return int(min(max(a.at-b.at, -1), 1))
		}
		return b.delta - a.delta
	})
	var s fleetSweep
	held := 0
	var overSince int64
	overNow := false
	for _, e := range events {
		if e.delta > 0 && held >= limit {
			s.beyond++
		}
		held += e.delta
		if held > s.most {
			s.most = held
		}
		switch {
		case held > limit && !overNow:
			overSince, overNow = e.at, true
		case held <= limit && overNow:
			s.over += time.Duration(e.at - overSince)
			s.lastOver, overNow = e.at, false
		}
	}
	return s
}

// TestFleetSweep: the sweep counts what overlaps, and sees an excess.
func TestFleetSweep(t *testing.T) {
	// 3 held at 10 (one starts as one ends) and from 12 to 13.
	s := sweep([][2]int64{{0, 10}, {5, 15}, {10, 20}, {12, 13}}, 2)
	if s.most != 3 || s.beyond != 2 || s.over != time.Nanosecond || s.lastOver != 13 {
		t.Errorf("sweep %+v, want most 3, 2 beyond, over 1 ns until 13", s)
	}
	if s := sweep([][2]int64{{0, 10}, {10, 20}}, 1); s.most != 2 {
		t.Errorf("an interval starting where another ends: %+v, want both held", s)
	}
}

// fleetEnv is a worker's settings for a contention run.
func fleetEnv(d deployment, prefix string, max int, lease time.Duration, run time.Duration) map[string]string {
	return map[string]string{
		fleetRole: "contend", fleetAddrs: strings.Join(d.addrs(), ","), fleetPrefix: prefix,
		fleetMax: strconv.Itoa(max), fleetLease: lease.String(), fleetRenew: (lease / 3).String(),
		fleetFor: run.String(), fleetHolders: "16", fleetLongHold: (lease / 2).String(),
	}
}

// contend runs 4 worker processes of 16 goroutines on d for run, with
// during(start) called from the parent while they run, and tallies them.
func contend(t *testing.T, d deployment, prefix string, lease, run time.Duration, during func()) fleetTally {
	t.Helper()
	var workers []*fleetWorker
	for range 4 {
		workers = append(workers, startFleetWorker(t, fleetEnv(d, prefix, 10, lease, run)))
	}
	if during != nil {
		during()
	}
	var f fleetTally
	f.collect(t, workers)
	return f
}

// TestConcurrencyFleet: on redis-server and valkey-server, a single node
// and a six-node cluster, 64 holders in 4 processes contend for 10 slots
// and never more than 10 hold one at once; the slots of a SIGKILLed holder
// come back after its lease, within a second, and not before; a single
// node paused for less than a lease loses and doubles nothing. A master
// killed in a dedicated cluster is measured and reported (see
// TestConcurrencyFailover).
func TestConcurrencyFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("long: processes contending on real servers")
	}
	for _, kind := range harness.Families() {
		for _, topology := range []string{"single", "cluster"} {
			t.Run(string(kind)+"/"+topology, func(t *testing.T) {
				var d deployment
				if topology == "single" {
					d = single(h.Node(t, kind))
				} else {
					d = onCluster(h.Cluster(t, kind))
				}
				h.Record(t, fleetSuite, "", d.server())
				prefix := "fleet-" + strconv.FormatInt(time.Now().UnixNano(), 36)
				f := contend(t, d, prefix+"-run", 2*time.Second, 3*time.Second, nil)
				s := sweep(f.intervals, 10)
				t.Logf("contention: %d acquired, %d denied, %d errors, %d lost; at most %d held at once, %d grants beyond 10",
					f.acquired, f.denied, f.errors, f.lost, s.most, s.beyond)
				if s.most > 10 || s.beyond > 0 {
					t.Errorf("%d held at once, %d grants beyond 10 (%v over): want at most 10", s.most, s.beyond, s.over)
				}
				if s.most < 8 || f.denied == 0 {
					t.Errorf("at most %d held at once, %d denied: the holders did not contend", s.most, f.denied)
				}
				if f.errors != 0 || f.lost != 0 {
					t.Errorf("%d errors, %d leases lost, want none", f.errors, f.lost)
				}
				killedHolder(t, d, prefix+"-kill")
				if topology == "single" {
					pausedServer(t, d, prefix+"-pause")
				}
			})
		}
	}
}

// killedHolder SIGKILLs a process that holds 4 of 10 slots and renews
// them: they must stay held until their lease (1.5 s) after its last
// renewal, and be free within a second of it.
func killedHolder(t *testing.T, d deployment, prefix string) {
	t.Helper()
	const lease = 1500 * time.Millisecond
	w := startFleetWorker(t, map[string]string{
		fleetRole: "hold", fleetAddrs: strings.Join(d.addrs(), ","), fleetPrefix: prefix,
		fleetMax: "10", fleetLease: lease.String(), fleetHolders: "4",
	})
	var sent, answered int64
	for i := 0; i < 3; i++ {
		line, ok := <-w.lines
		if !ok {
			t.Fatalf("holder: %v", <-w.done)
		}
		fields := strings.Fields(line)
		sent, _ = strconv.ParseInt(fields[2], 10, 64)
		answered, _ = strconv.ParseInt(fields[3], 10, 64)
	}
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: d.addrs(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sem, err := ratelua.NewConcurrency(ratelua.Rueidis(client), ratelua.Options{Prefix: prefix}, ratelua.Slots{Max: 10, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	// The leases end between sent + lease and answered + lease; the server
	// reads its clock in ms, so one ms earlier at most.
	earliest := time.Unix(0, sent).Add(lease - time.Millisecond)
	latest := time.Unix(0, answered).Add(lease)
	var free time.Time
	polls := 0
	for free.IsZero() {
		before := time.Now()
		r, err := sem.Peek(context.Background(), fleetKey)
		after := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		polls++
		// The four leases were renewed in one round trip, so they end
		// within [earliest, latest]: a poll between two of their ends
		// sees 7 to 9 free, never before earliest.
		switch {
		case r.Remaining < 6 || r.Remaining > 10:
			t.Fatalf("%d slots free, want 6 (4 held by the killed holder) to 10", r.Remaining)
		case r.Remaining > 6 && after.Before(earliest):
			t.Fatalf("the killed holder's slots came back before its lease ended: %d free at %v, lease ends %v at the earliest",
				r.Remaining, after.Sub(killed), earliest.Sub(killed))
		case r.Remaining == 10:
			free = after
		case before.After(latest.Add(time.Second)):
			t.Fatalf("the killed holder's slots are still held %v after its lease ended", before.Sub(latest))
		}
		time.Sleep(10 * time.Millisecond)
	}
	<-w.done
	t.Logf("SIGKILLed holder of 4 slots (lease %v, last renewed %v before the kill): free %v after the kill, %v after the lease ended at the latest (%d polls)",
		lease, killed.Sub(time.Unix(0, answered)).Round(time.Millisecond), free.Sub(killed).Round(time.Millisecond),
		free.Sub(latest).Round(time.Millisecond), polls)
}

// pausedServer pauses the single node for 1 s (half a lease) while the
// processes contend: calls time out, but no lease is lost and never more
// than 10 are held.
func pausedServer(t *testing.T, d deployment, prefix string) {
	t.Helper()
	f := contend(t, d, prefix, 2*time.Second, 3*time.Second, func() {
		time.Sleep(time.Second)
		if err := d.node.Pause(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := d.node.Resume(); err != nil {
			t.Fatal(err)
		}
	})
	s := sweep(f.intervals, 10)
	t.Logf("server paused 1 s: %d acquired, %d denied, %d errors, %d lost; at most %d held at once, %d grants beyond 10",
		f.acquired, f.denied, f.errors, f.lost, s.most, s.beyond)
	if s.most > 10 || f.lost != 0 {
		t.Errorf("paused 1 s: %d held at once, %d leases lost; want at most 10 and none lost", s.most, f.lost)
	}
}

// TestConcurrencyFailover kills (or pauses for 3 s) the master that holds
// the key of a dedicated six-node cluster while 64 holders contend with
// leases of 5 s renewed every 1.67 s, longer than a failover takes, and
// reports what the failover did to the count:
// the leases lost (their holders told by a renewal or release) and the
// grants beyond 10 (slots the promoted replica did not know were held).
// Once the cluster has recovered and a lease time has passed, never more
// than 10 are held again. The run lasts 18 s: the fault comes at 2 s and a
// paused master's cluster recovers in 3 to 4 s, leaving several seconds
// of holders after the settled point even on a loaded machine.
func TestConcurrencyFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("long: a master killed under contention")
	}
	for _, kind := range harness.Families() {
		t.Run(string(kind), func(t *testing.T) {
			for _, fault := range []string{"kill", "pause"} {
				t.Run(fault, func(t *testing.T) {
					// The two faults run at once, each on a cluster of
					// its own (they wait on the failover most of the 18
					// s); the families one after the other.
					t.Parallel()
					failover(t, kind, fault)
				})
			}
		})
	}
}

// failover runs one fault of TestConcurrencyFailover on a cluster of kind.
func failover(t *testing.T, kind testbench.Kind, fault string) {
	c := testbench.Start(t, testbench.Options{Kind: kind})
	d := onCluster(c)
	h.Record(t, fleetSuite, "", d.server())
	prefix := "failover-" + fault
	const lease = 5 * time.Second
	var faulted, healthy time.Time
	f := contend(t, d, prefix, lease, 18*time.Second, func() {
		time.Sleep(2 * time.Second)
		sem, _ := ratelua.NewConcurrency(noClient{}, ratelua.Options{Prefix: prefix}, ratelua.Slots{Max: 10, Lease: lease})
		master := d.owner(t, sem.Key(fleetKey))
		faulted = time.Now()
		var err error
		if fault == "kill" {
			err = master.Kill()
		} else {
			// Longer than cluster-node-timeout: a replica takes over
			// while the master is frozen; it comes back as a replica.
			err = master.Pause()
			if err == nil {
				time.Sleep(3 * time.Second)
				err = master.Resume()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := c.WaitHealthy(context.Background()); err != nil && fault == "pause" {
			t.Fatal(err)
		}
		healthy = time.Now()
	})
	s := sweep(f.intervals, 10)
	var after [][2]int64
	settled := healthy.Add(lease + time.Second).UnixNano()
	for _, iv := range f.intervals {
		if iv[0] > settled {
			after = append(after, iv)
		}
	}
	later := sweep(after, 10)
	t.Logf("master %s: %d acquired, %d denied, %d errors, %d leases lost; at most %d held at once, %d grants beyond 10, %v with more than 10 held, the last %v after the fault; recovered in %v; afterwards at most %d held",
		map[string]string{"kill": "killed", "pause": "paused 3 s"}[fault], f.acquired, f.denied, f.errors, f.lost, s.most, s.beyond, s.over.Round(time.Millisecond),
		time.Duration(max(0, s.lastOver-faulted.UnixNano())).Round(time.Millisecond), healthy.Sub(faulted).Round(time.Millisecond), later.most)
	if later.most > 10 || len(after) == 0 {
		t.Errorf("%d intervals after the cluster recovered and a lease passed, at most %d held at once: want some, and at most 10", len(after), later.most)
	}
}

// noClient is a Client that is never called: for building state keys.
type noClient struct{}

func (noClient) Run(context.Context, ratelua.Call, []int64) error {
	return errors.New("noClient is not for calls")
}
