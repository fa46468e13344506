package goredis_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/goredis"
	"github.com/ratelua/ratelua/testbench"
)

// startSentinel runs a Redis Sentinel (redis-server --sentinel) that
// watches master as "mymaster", with a quorum of 1, until t ends.
func startSentinel(t *testing.T, master *testbench.Node) string {
	t.Helper()
	host, port := "127.0.0.1", strconv.Itoa(freePort(t))
	_, masterPort, _ := net.SplitHostPort(master.Addr)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	config := strings.Join([]string{
		"port " + port,
		"bind " + host,
		"daemonize no",
		"dir " + dir,
		"logfile " + filepath.Join(dir, "sentinel.log"),
		"sentinel monitor mymaster 127.0.0.1 " + masterPort + " 1",
		"sentinel down-after-milliseconds mymaster 5000",
		"sentinel failover-timeout mymaster 10000",
	}, "\n") + "\n"
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a sentinel: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "sentinel.log"))
			t.Logf("sentinel log:\n%s", log)
		}
	})
	return net.JoinHostPort(host, port)
}

// waitFor polls cond every 50 ms until it holds, failing the test after
// limit.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() error) {
	t.Helper()
	var err error
	for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err = cond(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}

// TestFailoverClient: a failover client (redis.NewFailoverClient) is a
// *redis.Client whose one node is the master the sentinels name. After a
// sentinel failover it talks to the promoted replica, which has never run
// the script: the limiter meets NOSCRIPT there, loads it, and finds the
// replicated state.
func TestFailoverClient(t *testing.T) {
	ctx := context.Background()
	master := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	replica := testbench.StartSingle(t, testbench.Options{Kind: testbench.Redis})
	host, port, _ := net.SplitHostPort(master.Addr)
	if _, err := replica.Do(ctx, "REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	sentinel := startSentinel(t, master)
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	defer sc.Close()
	waitFor(t, "the sentinel knows the replica", 30*time.Second, func() error {
		replicas, err := sc.Replicas(ctx, "mymaster").Result()
		if err != nil {
			return err
		}
		for _, r := range replicas {
			if r["port"] == strconv.Itoa(replica.Port) && r["flags"] == "slave" && r["master-link-status"] == "ok" {
				return nil
			}
		}
		return fmt.Errorf("replicas %v", replicas)
	})

	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{sentinel}})
	defer rdb.Close()
	client := goredis.New(rdb)
	at := time.Unix(1_800_000_000, 0)
	l, err := ratelua.NewTokenBucket(client, ratelua.Options{Prefix: "sentinel", Clock: func() time.Time { return at }},
		ratelua.Bucket{Capacity: 3, RefillAmount: 1, RefillInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := l.Allow(ctx, "k"); err != nil || r.Remaining != 2 {
		t.Fatalf("on the first master: %+v %v", r, err)
	}
	nodes, err := client.(lister).Nodes(ctx)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("Nodes: %+v %v", nodes, err)
	}
	if _, err := master.Do(ctx, "WAIT", "1", "5000"); err != nil {
		t.Fatal(err)
	}

	if err := sc.Failover(ctx, "mymaster").Err(); err != nil {
		t.Fatal(err)
	}
	role := func(n *testbench.Node, want string) func() error {
		return func() error {
			role, err := n.Do(ctx, "ROLE")
			if err != nil {
				return err
			}
			if r := role.([]any)[0]; r != want {
				return fmt.Errorf("%s: ROLE %v", n, r)
			}
			return nil
		}
	}
	waitFor(t, "the replica is promoted", 30*time.Second, role(replica, "master"))
	// Until the old master is a replica it still takes writes (the
	// split-brain window of any sentinel failover): wait it out.
	waitFor(t, "the old master is a replica", 30*time.Second, role(master, "slave"))
	if v, err := replica.Do(ctx, "SCRIPT", "EXISTS", l.Script().SHA1); err != nil || fmt.Sprint(v) != "[0]" {
		t.Fatalf("the promoted replica has the script already (%v %v): the test would not meet NOSCRIPT", v, err)
	}
	// The client moves to the new master when the sentinel tells it; until
	// then the old one, now a replica, refuses writes (READONLY), which is
	// an answer: an error, never an admission.
	waitFor(t, "the failover client follows the sentinel", 30*time.Second, func() error {
		r, err := l.Allow(ctx, "k")
		if err != nil {
			if r.Allowed {
				t.Fatalf("admitted with %v", err)
			}
			return err
		}
		if r.Remaining != 1 {
			t.Fatalf("on the promoted replica: %+v, want the replicated state (1 remaining)", r)
		}
		return nil
	})
	if v, err := replica.Do(ctx, "SCRIPT", "EXISTS", l.Script().SHA1); err != nil || fmt.Sprint(v) != "[1]" {
		t.Errorf("the promoted replica has not the script after the call (%v %v)", v, err)
	}
	nodes, err = client.(lister).Nodes(ctx)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("Nodes after the failover: %+v %v", nodes, err)
	}
	if role, err := nodes[0].Do(ctx, "ROLE"); err != nil || role.([]any)[0] != "master" {
		t.Errorf("the failover client's node after the failover: %v %v", role, err)
	}
}

// freePort returns a port free on 127.0.0.1 below Linux's ephemeral range
// (32768 and up), for the sentinel to listen on. A port of the range, taken
// from a ":0" listener and closed, can be handed to an outgoing connection
// before the sentinel binds it; the kernel picks none below it. (The
// same as rls/internal/loopback.FreePort, which this module cannot import.)
func freePort(t *testing.T) int {
	t.Helper()
	for range 200 {
		port := 10000 + rand.IntN(32768-10000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatal("no free port in [10000, 32767] after 200 tries")
	return 0
}
