package testbench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// newClient returns a rueidis cluster client for c, closed with the test.
func newClient(t *testing.T, c *Cluster) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

// keySlot asks a node for key's slot.
func keySlot(t *testing.T, c *Cluster, key string) int {
	t.Helper()
	return int(mustDo(t, c.live()[0], "CLUSTER", "KEYSLOT", key).(int64))
}

// TestCluster runs one cluster of each kind through the controls in turn:
// roles, scripts, live slot migration, graceful failover, pause and resume,
// a whole-cluster restart, and Close.
func TestCluster(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			c := Start(t, Options{Kind: kind, Provider: ProviderFromEnv()})
			t.Logf("%s %s cluster of %d nodes healthy in %v", kind, c.Nodes[0].Version, len(c.Nodes), time.Since(start).Round(time.Millisecond))
			client := newClient(t, c)
			ok := t.Run("roles", func(t *testing.T) { testRoles(t, c) })
			ok = ok && t.Run("scripts", func(t *testing.T) { testFlushScripts(t, c) })
			ok = ok && t.Run("migrate", func(t *testing.T) { testMigrateSlot(t, c, client) })
			ok = ok && t.Run("failover", func(t *testing.T) { testFailover(t, c, client) })
			ok = ok && t.Run("pause", func(t *testing.T) { testPause(t, c, client) })
			ok = ok && t.Run("restart", func(t *testing.T) { testRestart(t, c, client) })
			ok = ok && t.Run("close", func(t *testing.T) { testClose(t, c) })
		})
	}
}

func testRoles(t *testing.T, c *Cluster) {
	ctx := t.Context()
	if got, want := len(c.Addrs()), 6; got != want {
		t.Fatalf("Addrs() has %d addresses, want %d", got, want)
	}
	masters, replicas := c.Masters(), c.Replicas()
	if !slices.Equal(masters, c.Nodes[:3]) || !slices.Equal(replicas, c.Nodes[3:]) {
		t.Fatalf("Masters() = %v, Replicas() = %v; want the first 3 nodes, then the rest", masters, replicas)
	}
	seen := map[*Node]int{}
	for slot := 0; slot < Slots; slot += 97 {
		m, err := c.MasterOf(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(masters, m) {
			t.Fatalf("MasterOf(%d) = %v, not a master", slot, m)
		}
		seen[m]++
	}
	if len(seen) != 3 {
		t.Errorf("MasterOf spreads the slots over %d masters, want 3", len(seen))
	}
	for i, r := range replicas {
		me, err := myself(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if me.master != masters[i].ID {
			t.Errorf("replica %v follows %.8s, want master %v", r, me.master, masters[i])
		}
	}
	for _, n := range c.Nodes {
		if n.ID == "" || n.Version == "" {
			t.Errorf("node %v: ID %q, Version %q", n.Addr, n.ID, n.Version)
		}
	}
}

func testFlushScripts(t *testing.T, c *Cluster) {
	var sha string
	for _, n := range c.Nodes {
		sha = mustDo(t, n, "SCRIPT", "LOAD", "return 1").(string)
	}
	if err := c.FlushScripts(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if got := mustDo(t, n, "SCRIPT", "EXISTS", sha); !slices.Equal(got.([]any), []any{int64(0)}) {
			t.Errorf("%v: SCRIPT EXISTS after FlushScripts = %v", n, got)
		}
	}
}

// testMigrateSlot moves a slot holding keys while a rueidis client keeps
// incrementing them and creating new ones in that slot.
func testMigrateSlot(t *testing.T, c *Cluster, client rueidis.Client) {
	ctx := t.Context()
	const nkeys = 1000
	key := func(i int) string { return "{mig}:" + strconv.Itoa(i) }
	slot := keySlot(t, c, key(0))
	cmds := make(rueidis.Commands, nkeys)
	for i := range nkeys {
		cmds[i] = client.B().Set().Key(key(i)).Value("0").Build()
	}
	for _, r := range client.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			t.Fatal(err)
		}
	}
	from, err := c.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	to := c.Masters()[0]
	if to == from {
		to = c.Masters()[1]
	}

	// The writer: INCR on the keys in turn, and now and then a new key.
	counts := make([]int64, nkeys)
	var (
		ops       atomic.Int64
		newKeys   int
		werr      error
		migrating = make(chan struct{})
		stop      = make(chan struct{})
		wg        sync.WaitGroup
		opsAt     [2]int64 // when the migration started and ended
	)
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i == 200 {
				close(migrating)
			}
			if i%10 == 9 {
				if err := client.Do(ctx, client.B().Set().Key(fmt.Sprintf("{mig}:new:%d", i)).Value("x").Build()).Error(); err != nil {
					werr = fmt.Errorf("SET new key %d: %w", i, err)
					return
				}
				newKeys++
			} else {
				k := i % nkeys
				n, err := client.Do(ctx, client.B().Incr().Key(key(k)).Build()).AsInt64()
				if err != nil {
					werr = fmt.Errorf("INCR %s: %w", key(k), err)
					return
				}
				if counts[k]++; n != counts[k] {
					werr = fmt.Errorf("INCR %s = %d, want %d", key(k), n, counts[k])
					return
				}
			}
			ops.Add(1)
		}
	})
	redirects := func() (ask, moved int) {
		for _, n := range c.live() {
			f := infoFields(mustDo(t, n, "INFO", "errorstats"))
			ask += statCount(f["errorstat_ASK"])
			moved += statCount(f["errorstat_MOVED"])
		}
		return ask, moved
	}
	ask0, moved0 := redirects()
	<-migrating
	opsAt[0] = ops.Load()
	start := time.Now()
	err = c.MigrateSlot(ctx, slot, to)
	took := time.Since(start)
	opsAt[1] = ops.Load()
	time.Sleep(100 * time.Millisecond) // writes after the move: MOVED
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if werr != nil {
		t.Fatalf("the writer saw: %v", werr)
	}
	ask, moved := redirects()
	ask, moved = ask-ask0, moved-moved0
	t.Logf("moved slot %d (%d keys and new ones) from %v to %v in %v; the writer did about %d commands meanwhile, %d in all, and got %d ASK and %d MOVED",
		slot, nkeys, from, to, took.Round(time.Millisecond), opsAt[1]-opsAt[0], ops.Load(), ask, moved)
	if ask+moved == 0 {
		t.Error("the writer was never redirected")
	}
	if m, err := c.MasterOf(ctx, slot); err != nil || m != to {
		t.Fatalf("MasterOf(%d) = %v, %v; want %v", slot, m, err, to)
	}
	if got := mustDo(t, from, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)); got != int64(0) {
		t.Errorf("old master %v still has %v keys in slot %d", from, got, slot)
	}
	if got, want := mustDo(t, to, "CLUSTER", "COUNTKEYSINSLOT", strconv.Itoa(slot)), int64(nkeys+newKeys); got != want {
		t.Errorf("new master %v has %v keys in slot %d, want %d", to, got, slot, want)
	}
	for i := range nkeys {
		if got, want := mustDo(t, to, "GET", key(i)), strconv.FormatInt(counts[i], 10); got != want {
			t.Fatalf("on the new master, GET %s = %v, want %s", key(i), got, want)
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
}

// testFailover promotes a replica with CLUSTER FAILOVER; a key written
// before is read through the client afterwards.
func testFailover(t *testing.T, c *Cluster, client rueidis.Client) {
	ctx := t.Context()
	slot := keySlot(t, c, "{fo}")
	if err := client.Do(ctx, client.B().Set().Key("{fo}").Value("before").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	old, err := c.MasterOf(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nm, err := c.Failover(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("graceful failover %v -> %v in %v", old, nm, time.Since(start).Round(time.Millisecond))
	if nm == old {
		t.Fatal("Failover returned the old master")
	}
	if m, err := c.MasterOf(ctx, slot); err != nil || m != nm {
		t.Fatalf("MasterOf(%d) = %v, %v; want %v", slot, m, err, nm)
	}
	if !slices.Contains(c.Masters(), nm) || !slices.Contains(c.Replicas(), old) {
		t.Fatalf("after Failover: masters %v, replicas %v", c.Masters(), c.Replicas())
	}
	got, err := client.Do(ctx, client.B().Get().Key("{fo}").Build()).ToString()
	if err != nil || got != "before" {
		t.Fatalf("GET {fo} after failover = %q, %v", got, err)
	}
	if err := client.Do(ctx, client.B().Set().Key("{fo}").Value("after").Build()).Error(); err != nil {
		t.Fatalf("SET after failover: %v", err)
	}
}

// testPause hangs a replica for longer than cluster-node-timeout: the
// others flag it as failing; after Resume the cluster heals.
func testPause(t *testing.T, c *Cluster, client rueidis.Client) {
	ctx := t.Context()
	r := c.Replicas()[0]
	if err := r.Pause(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	_, err := r.Do(short, "PING")
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("PING to a paused node: %v, want a deadline error", err)
	}
	if slices.Contains(c.Replicas(), r) {
		t.Errorf("Replicas() lists the paused %v", r)
	}
	if err := client.Do(ctx, client.B().Set().Key("during-pause").Value("1").Build()).Error(); err != nil {
		t.Errorf("SET while a replica hangs: %v", err)
	}
	// Wait until another node flags it (fail? or fail), past
	// cluster-node-timeout, rather than for a fixed time.
	other := c.Masters()[0]
	flagged := ""
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := poll(wctx, "the paused replica flagged as failing", 20*time.Millisecond, func(ctx context.Context) error {
		entries, err := clusterNodes(ctx, other)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.id == r.ID && (e.flags["fail?"] || e.flags["fail"]) {
				flagged = e.flagText
				return nil
			}
		}
		return fmt.Errorf("%v does not flag %v", other, r)
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%v flags the paused replica %s", other, flagged)
	if err := r.Resume(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("healthy %v after Resume", time.Since(start).Round(time.Millisecond))
	if got := mustDo(t, r, "PING"); got != "PONG" {
		t.Errorf("PING after Resume = %v", got)
	}
}

// testRestart restarts the whole cluster; the keys survive.
func testRestart(t *testing.T, c *Cluster, client rueidis.Client) {
	ctx := t.Context()
	const n = 200
	for i := range n {
		if err := client.Do(ctx, client.B().Set().Key("r:"+strconv.Itoa(i)).Value(strconv.Itoa(i)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	roles := fmt.Sprint(c.Masters(), c.Replicas())
	start := time.Now()
	if err := c.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster restarted and healthy in %v", time.Since(start).Round(time.Millisecond))
	if got := fmt.Sprint(c.Masters(), c.Replicas()); got != roles {
		t.Errorf("roles after Restart: %s, before: %s", got, roles)
	}
	for i := range n {
		k := "r:" + strconv.Itoa(i)
		var got string
		var err error
		// The client reconnects: a generous deadline, not a count of tries.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
			if got, err = client.Do(ctx, client.B().Get().Key(k).Build()).ToString(); err == nil || time.Now().After(deadline) {
				break
			}
		}
		if err != nil || got != strconv.Itoa(i) {
			t.Fatalf("after Restart, GET %s = %q, %v", k, got, err)
		}
	}
}

// testClose closes the cluster: no server answers or runs, no directory is
// left.
func testClose(t *testing.T, c *Cluster) {
	var pids []int
	for _, n := range c.Nodes {
		if p, ok := n.inst.(*process); ok {
			pids = append(pids, p.pid())
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		select {
		case <-n.inst.Done():
		default:
			t.Errorf("%v has not exited", n)
		}
		if conn, err := net.DialTimeout("tcp", n.Addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("%v still accepts connections", n)
		}
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Errorf("process %d still exists", pid)
		}
	}
	if _, err := os.Stat(c.root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s is left: %v", c.root, err)
	}
}

// TestClusterCrash kills a master: its replica takes over by itself; the
// killed node restarts as a replica of the new master.
func TestClusterCrash(t *testing.T) {
	for _, kind := range kinds {
		t.Run(string(kind), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			c := Start(t, Options{Kind: kind, Provider: ProviderFromEnv()})
			client := newClient(t, c)
			slot := keySlot(t, c, "{crash}")
			old, err := c.MasterOf(ctx, slot)
			if err != nil {
				t.Fatal(err)
			}
			mustDo(t, old, "SET", "{crash}", "kept")
			if got := mustDo(t, old, "WAIT", "1", "2000"); got != int64(1) {
				t.Fatalf("WAIT 1 = %v", got)
			}
			start := time.Now()
			if err := old.Kill(); err != nil {
				t.Fatal(err)
			}
			var nm *Node
			for nm == nil || nm == old {
				if time.Since(start) > 20*time.Second {
					t.Fatal("no replica took over within 20 s")
				}
				time.Sleep(20 * time.Millisecond)
				nm, _ = c.MasterOf(ctx, slot)
			}
			promoted := time.Since(start)
			if err := c.WaitHealthy(ctx); err != nil {
				t.Fatal(err)
			}
			t.Logf("killed master %v: %v promoted after %v, cluster healthy after %v",
				old, nm, promoted.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
			if len(c.Masters()) != 3 || len(c.Replicas()) != 2 {
				t.Errorf("after the crash: masters %v, replicas %v", c.Masters(), c.Replicas())
			}
			var got string
			// The client finds the new master: a generous deadline.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
				if got, err = client.Do(ctx, client.B().Get().Key("{crash}").Build()).ToString(); err == nil || time.Now().After(deadline) {
					break
				}
			}
			if err != nil || got != "kept" {
				t.Fatalf("GET {crash} after the failover = %q, %v", got, err)
			}

			if err := old.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitHealthy(ctx); err != nil {
				t.Fatal(err)
			}
			me, err := myself(ctx, old)
			if err != nil {
				t.Fatal(err)
			}
			if !me.flags["slave"] || me.master != nm.ID {
				t.Errorf("restarted %v is %s of %.8s, want a replica of %v", old, me.flagText, me.master, nm)
			}
		})
	}
}

// statCount reads count=N from an INFO errorstats value.
func statCount(v string) int {
	for _, f := range strings.Split(v, ",") {
		if n, ok := strings.CutPrefix(f, "count="); ok {
			c, _ := strconv.Atoi(n)
			return c
		}
	}
	return 0
}
