// Package testbench starts real Redis and Valkey servers for tests: single
// nodes and clusters of masters and replicas, as processes on this machine
// or as Docker containers, with the controls a test of a cluster client
// needs: crash, hang, graceful stop and restart of a node, automatic and
// manual failover, live slot migration, script flushing and a whole-cluster
// restart that keeps the data.
//
// In a test:
//
//	c := testbench.Start(t, testbench.Options{Kind: testbench.Valkey})
//	client, _ := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs()})
//
// Start skips the test with a one-line reason when the server binary (or,
// with the Docker provider, the engine or the image) is missing, except
// when the environment variable CI is "true": then it fails the test.
//
// The servers run as processes, or in Docker containers when the
// environment variable RATELUA_TESTBENCH is "docker" (or Options.Provider
// says so): in the official images, or in the image RATELUA_DOCKER_IMAGE
// names.
//
// A cluster is bootstrapped with the servers' own commands (CLUSTER MEET,
// CLUSTER ADDSLOTSRANGE, CLUSTER REPLICATE) and tuned to start and fail over
// fast: cluster-node-timeout 1000 ms, so a killed master is replaced within a
// few seconds. Options.Config overrides any of the settings.
//
// Every node has its own port P and cluster bus port P+10000, both below
// the kernel's ephemeral port range and claimed with a lock file, so that
// test packages running in parallel do not clash, and its own temporary
// directory (configuration, log, nodes.conf, dump.rdb) that Close removes.
package testbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Kind is a server family.
type Kind string

const (
	// Redis is redis-server.
	Redis Kind = "redis"
	// Valkey is valkey-server.
	Valkey Kind = "valkey"
)

// Options configures StartNode and StartCluster.
type Options struct {
	// Kind is the server family; required.
	Kind Kind
	// Masters is the number of cluster masters; 0 means 3.
	Masters int
	// Replicas is the number of replicas of each master; 0 means 1, a
	// negative number means none.
	Replicas int
	// Provider runs the servers; nil means ProviderFromEnv(): Processes(),
	// or Docker("") when the environment variable RATELUA_TESTBENCH is
	// "docker".
	Provider Provider
	// Config holds extra configuration lines ("name value", as in a
	// configuration file) for every node, after testbench's own, which they
	// override: "cluster-node-timeout 5000", "maxmemory 64mb".
	Config []string
}

// Timeouts for operations whose context has no deadline.
const (
	defaultStartTimeout = 60 * time.Second
	checkTimeout        = 5 * time.Minute // Provider.Check may pull an image
	defaultWaitTimeout  = 30 * time.Second
	stopTimeout         = 30 * time.Second
	readyTimeout        = 15 * time.Second
	addrInUseAttempts   = 5
	logTailLines        = 12
)

// withDefaultTimeout gives ctx a deadline d from now unless it has one.
func withDefaultTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func (o Options) provider() Provider {
	if o.Provider == nil {
		return ProviderFromEnv()
	}
	return o.Provider
}

func (o Options) validate() error {
	if o.Kind != Redis && o.Kind != Valkey {
		return fmt.Errorf("testbench: Options.Kind is %q, want %q or %q", o.Kind, Redis, Valkey)
	}
	return nil
}

func (o Options) masters() int {
	if o.Masters <= 0 {
		return 3
	}
	return o.Masters
}

func (o Options) replicas() int {
	switch {
	case o.Replicas < 0:
		return 0
	case o.Replicas == 0:
		return 1
	}
	return o.Replicas
}

// ProviderFromEnv returns Docker("") when the environment variable
// RATELUA_TESTBENCH is "docker", and Processes() otherwise. It is the
// provider of Options with no Provider, so that one variable moves a whole
// test suite into containers; RATELUA_DOCKER_IMAGE then names the image
// (see DockerOptions.Image).
func ProviderFromEnv() Provider {
	if os.Getenv("RATELUA_TESTBENCH") == "docker" {
		return Docker("")
	}
	return Processes()
}

// baseConfig is every node's configuration before the cluster's and the
// user's lines.
func baseConfig(spec Spec) []string {
	return []string{
		"port " + strconv.Itoa(spec.Port),
		"bind 127.0.0.1",
		"protected-mode no",
		"daemonize no",
		"dir " + quoteConfig(spec.Dir),
		"logfile " + quoteConfig(spec.LogFile),
		"dbfilename dump.rdb",
		`save ""`, // Node.Stop saves with SHUTDOWN SAVE
		"appendonly no",
	}
}

// clusterConfig is added for cluster nodes.
var clusterConfig = []string{
	"cluster-enabled yes",
	"cluster-config-file nodes.conf",
	"cluster-node-timeout 1000",
	// A replica may always be promoted, however long its link was down.
	"cluster-replica-validity-factor 0",
	// Replicas stay with the master the test gave them.
	"cluster-allow-replica-migration no",
	// The other masters go on serving their slots while one is down.
	"cluster-require-full-coverage no",
	"repl-ping-replica-period 1",
	// A new replica syncs at once, not after the default 5 s wait for
	// more replicas to share a diskless transfer.
	"repl-diskless-sync-delay 0",
}

// quoteConfig quotes a value for a configuration file.
func quoteConfig(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\"'\\") {
		return s
	}
	return strconv.Quote(s)
}

// unavailable reports err to tb: a skip, or a failure under CI=true.
func unavailable(tb testing.TB, err error) {
	tb.Helper()
	msg := strings.SplitN(err.Error(), "\n", 2)[0]
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// startFor runs start for tb: it fails the test on invalid options or a
// failed start, and skips it (fails under CI=true) when the provider cannot
// run the kind here. It returns nil when the test did not go on.
func startFor[T any](tb testing.TB, opts Options, start func(context.Context, Options) (*T, error)) *T {
	tb.Helper()
	if err := opts.validate(); err != nil {
		tb.Fatal(err)
		return nil
	}
	// Check may pull an image first: it has a deadline of its own.
	opts.Provider = opts.provider()
	cctx, cancel := context.WithTimeout(tb.Context(), checkTimeout)
	err := opts.Provider.Check(cctx, opts.Kind)
	cancel()
	if err != nil {
		unavailable(tb, err)
		return nil
	}
	ctx, cancel := context.WithTimeout(tb.Context(), defaultStartTimeout)
	defer cancel()
	v, err := start(ctx, opts)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			unavailable(tb, err)
			return nil
		}
		tb.Fatal(err)
		return nil
	}
	return v
}

// Start starts a cluster for tb (see StartCluster) and closes it in
// tb.Cleanup, quoting the nodes' logs first when the test failed. When the
// provider cannot run the kind here (the binary, or the Docker engine, is
// missing) it skips the test with a one-line reason, except when the
// environment variable CI is "true": then it fails it. A cluster that does
// not start fails the test.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	c := startFor(tb, opts, StartCluster)
	if c == nil {
		return nil
	}
	tb.Cleanup(func() {
		c.mu.Lock()
		closed := c.closed // the test closed it: the logs are gone
		c.mu.Unlock()
		if tb.Failed() && !closed {
			for _, n := range c.Nodes {
				tb.Logf("%s node %s (%s): %s", c.Kind, n.Addr, n.ID, n.logTail())
			}
		}
		if err := c.Close(); err != nil {
			tb.Error(err)
		}
	})
	return c
}

// StartSingle starts a single node (no cluster) for tb, like Start.
func StartSingle(tb testing.TB, opts Options) *Node {
	tb.Helper()
	n := startFor(tb, opts, StartNode)
	if n == nil {
		return nil
	}
	tb.Cleanup(func() {
		n.mu.Lock()
		closed := n.closed
		n.mu.Unlock()
		if tb.Failed() && !closed {
			tb.Logf("%s node %s: %s", n.Kind, n.Addr, n.logTail())
		}
		if err := n.Close(); err != nil {
			tb.Error(err)
		}
	})
	return n
}

// StartNode starts a single node, not in cluster mode, in a new temporary
// directory; Options.Masters and Replicas are ignored. When the provider
// cannot run the kind here (Provider.Check), the error wraps
// ErrUnavailable. Close the node when done.
func StartNode(ctx context.Context, opts Options) (*Node, error) {
	ctx, cancel := withDefaultTimeout(ctx, defaultStartTimeout)
	defer cancel()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	prov := opts.provider()
	if err := prov.Check(ctx, opts.Kind); err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "ratelua-testbench-"+string(opts.Kind)+"-")
	if err != nil {
		return nil, fmt.Errorf("testbench: %w", err)
	}
	n, err := launchNode(ctx, prov, opts.Kind, root, nil, opts.Config)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	n.root = root
	return n, nil
}
