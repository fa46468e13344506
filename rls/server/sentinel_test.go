package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/rls/config"
	"github.com/ratelua/ratelua/rls/internal/loopback"
	"github.com/ratelua/ratelua/rls/service"
	"github.com/ratelua/ratelua/rls/settings"
	"github.com/ratelua/ratelua/testbench"
)

// sentinelPassword is the sentinels' requirepass (REDIS_SENTINEL_AUTH).
const sentinelPassword = "sentinel-secret"

// startSentinel runs kind's server in sentinel mode (redis-server or
// valkey-server --sentinel) with a sentinel.conf written in a temporary
// directory, monitoring master as mymaster with a quorum of 1, behind
// sentinelPassword; it returns its address once it names the master.
func startSentinel(t *testing.T, kind testbench.Kind, master *testbench.Node) string {
	t.Helper()
	bin := map[testbench.Kind]string{testbench.Redis: "redis-server", testbench.Valkey: "valkey-server"}[kind]
	if env := map[testbench.Kind]string{testbench.Redis: "RATELUA_REDIS_SERVER", testbench.Valkey: "RATELUA_VALKEY_SERVER"}[kind]; os.Getenv(env) != "" {
		bin = os.Getenv(env)
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		t.Fatalf("%s for the sentinel: %v", bin, err)
	}
	port := loopback.FreePort(t)
	host, masterPort, _ := net.SplitHostPort(master.Addr)
	dir := t.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nrequirepass %s\n"+
		"sentinel monitor mymaster %s %s 1\nsentinel down-after-milliseconds mymaster 2000\nsentinel failover-timeout mymaster 10000\n",
		port, dir, sentinelPassword, host, masterPort)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(dir, "sentinel.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, conf, "--sentinel")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("sentinel log:\n%s", b)
		}
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	waitFor(t, "the sentinel to name the master", func() error {
		v, err := respDo(addr, "AUTH", sentinelPassword, "SENTINEL", "get-master-addr-by-name", "mymaster")
		if err != nil {
			return err
		}
		if got := strings.Join(v, ":"); got != master.Addr {
			return fmt.Errorf("master %q", got)
		}
		return nil
	})
	return addr
}

// waitFor polls f until it succeeds, failing the test after a minute.
func waitFor(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// respDo sends a command (after AUTH, when the first two words are AUTH
// and a password) on a new connection and returns the last reply, an
// array of bulk strings as its strings, any other reply as one string.
func respDo(addr string, args ...string) ([]string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	cmds := [][]string{args}
	if len(args) > 2 && args[0] == "AUTH" {
		cmds = [][]string{args[:2], args[2:]}
	}
	r := bufio.NewReader(c)
	var out []string
	for _, cmd := range cmds {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(cmd))
		for _, a := range cmd {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := c.Write([]byte(b.String())); err != nil {
			return nil, err
		}
		if out, err = readReply(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readReply reads one RESP2 reply, flattened to strings.
func readReply(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	switch line[0] {
	case '+', ':':
		return []string{line[1:]}, nil
	case '-':
		return nil, errors.New(line[1:])
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return []string{}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return []string{string(buf[:n])}, nil
	case '*':
		n, _ := strconv.Atoi(line[1:])
		var out []string
		for range max(n, 0) {
			v, err := readReply(r)
			if err != nil {
				return nil, err
			}
			out = append(out, v...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

// TestSentinel (issue 33 row 6: REDIS_TYPE=SENTINEL was refused): with the
// reference's settings (REDIS_URL the master's name then the sentinel,
// REDIS_SENTINEL_AUTH the sentinel's password; the same for the
// per-second deployment, REDIS_PERSECOND_*), the clients reach the master
// the sentinel names, and a decision's counters are on it; a wrong
// sentinel password fails the start; after SENTINEL FAILOVER, once the old
// master is a replica (writes to it fail), decisions go on, on the new
// master. A real master, replica and sentinel of each server.
func TestSentinel(t *testing.T) {
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		t.Run(string(kind), func(t *testing.T) {
			master := testbench.StartSingle(t, testbench.Options{Kind: kind})
			host, port, _ := net.SplitHostPort(master.Addr)
			replica := testbench.StartSingle(t, testbench.Options{Kind: kind, Config: []string{"replicaof " + host + " " + port}})
			sentinel := startSentinel(t, kind, master)
			env := func(auth string) func(string) string {
				return func(name string) string {
					return map[string]string{"REDIS_TYPE": "SENTINEL", "REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "mymaster," + sentinel,
						"REDIS_SENTINEL_AUTH": auth,
						// The per-second deployment through the same sentinel.
						"REDIS_PERSECOND": "true", "REDIS_PERSECOND_TYPE": "SENTINEL", "REDIS_PERSECOND_SOCKET_TYPE": "tcp",
						"REDIS_PERSECOND_URL": "mymaster," + sentinel, "REDIS_PERSECOND_SENTINEL_AUTH": auth}[name]
				}
			}
			if s, err := settings.FromEnv(env("wrong")); err != nil {
				t.Fatal(err)
			} else if c, err := NewClient(s); err == nil {
				c.Close()
				t.Fatal("a wrong REDIS_SENTINEL_AUTH connected")
			} else if c, err := NewTargetClient(s, *s.PerSecond); err == nil {
				c.Close()
				t.Fatal("a wrong REDIS_PERSECOND_SENTINEL_AUTH connected")
			}
			s, err := settings.FromEnv(env(sentinelPassword))
			if err != nil {
				t.Fatal(err)
			}
			c, err := NewClient(s)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			perSecond, err := NewTargetClient(s, *s.PerSecond)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(perSecond.Close)
			svc, err := service.New(service.Options{Client: ratelua.Rueidis(c), PerSecondClient: ratelua.Rueidis(perSecond), ShareReferenceCounters: true})
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse([]config.File{{Name: "app.yaml", Data: []byte("domain: app\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 100}\n" +
				"  - key: ip\n    rate_limit: {unit: second, requests_per_unit: 100}\n")}}, config.ParseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			ask := func(user string) error {
				ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				resp, err := svc.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "app", Descriptors: []*rlpb.RateLimitDescriptor{
					{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "user", Value: user}}},
					{Entries: []*rlpb.RateLimitDescriptor_Entry{{Key: "ip", Value: user}}}}})
				if err != nil {
					return err
				}
				if resp.OverallCode != pb.RateLimitResponse_OK {
					return fmt.Errorf("%v", resp)
				}
				return nil
			}
			counter := func(n *testbench.Node, user string) []any {
				v, err := n.Do(ctx, "KEYS", "app_user_"+user+"_*")
				if err != nil {
					// Once more: the failover closes the clients'
					// connections (CLIENT KILL), the idle one of n too.
					v, err = n.Do(ctx, "KEYS", "app_user_"+user+"_*")
				}
				if err != nil {
					t.Fatal(err)
				}
				return v.([]any)
			}
			if err := ask("u1"); err != nil {
				t.Fatal(err)
			}
			if len(counter(master, "u1")) != 1 {
				t.Fatalf("no counter of u1 on the master the sentinel names")
			}
			if v, err := master.Do(ctx, "KEYS", "app_ip_u1_*"); err != nil || len(v.([]any)) != 1 {
				t.Fatalf("the per-second counter of u1 on the master: %v, %v", v, err)
			}

			// The failover, once the sentinel knows the replica in sync.
			waitFor(t, "the replica in sync", func() error {
				v, err := replica.Do(ctx, "INFO", "replication")
				if err != nil {
					return err
				}
				if !strings.Contains(v.(string), "master_link_status:up") {
					return errors.New("link not up")
				}
				return nil
			})
			waitFor(t, "the sentinel to know the replica", func() error {
				v, err := respDo(sentinel, "AUTH", sentinelPassword, "SENTINEL", "replicas", "mymaster")
				if err != nil {
					return err
				}
				if i := slices.Index(v, "flags"); !slices.Contains(v, replica.Addr) || i < 0 || v[i+1] != "slave" {
					return fmt.Errorf("replicas %q", v)
				}
				return nil
			})
			if _, err := respDo(sentinel, "AUTH", sentinelPassword, "SENTINEL", "FAILOVER", "mymaster"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the old master to be a replica", func() error {
				v, err := master.Do(ctx, "ROLE")
				if err != nil {
					return err
				}
				if role := v.([]any)[0]; role != "slave" {
					return fmt.Errorf("role %v", role)
				}
				return nil
			})
			waitFor(t, "a decision after the failover", func() error { return ask("u2") })
			if len(counter(replica, "u2")) != 1 {
				t.Fatalf("no counter of u2 on the new master")
			}
			// The node the counter is on is the master now.
			if v, err := replica.Do(ctx, "ROLE"); err != nil || v.([]any)[0] != "master" {
				t.Fatalf("the new master's role: %v, %v", v, err)
			}
		})
	}
}
