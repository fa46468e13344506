package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ratelua/ratelua/testbench"
)

// families are the server families every case runs on.
var families = []testbench.Kind{testbench.Redis, testbench.Valkey}

// singles are the single nodes shared by the cases, one per family,
// started by TestMain.
var singles = map[testbench.Kind]*testbench.Node{}

// clusterConfig keeps a six-node cluster healthy on a loaded machine: the
// cases fail over by hand (CLUSTER FAILOVER), never by a node timing out.
var clusterConfig = []string{"cluster-node-timeout 5000"}

// clusters are the six-node clusters shared by the cases, one per family,
// started on first use and closed by TestMain.
var clusters struct {
	sync.Mutex
	m map[testbench.Kind]*testbench.Cluster
}

// sharedCluster returns the family's shared cluster, starting it the
// first time.
func sharedCluster(t *testing.T, kind testbench.Kind) *testbench.Cluster {
	t.Helper()
	clusters.Lock()
	defer clusters.Unlock()
	if c := clusters.m[kind]; c != nil {
		return c
	}
	c, err := testbench.StartCluster(context.Background(), testbench.Options{Kind: kind, Config: clusterConfig})
	if err != nil {
		t.Fatalf("start a %s cluster: %v", kind, err)
	}
	if clusters.m == nil {
		clusters.m = map[testbench.Kind]*testbench.Cluster{}
	}
	clusters.m[kind] = c
	return c
}

// TestMain starts a redis-server and a valkey-server for the cases (the
// clusters start on first use), runs the tests and reports the cases
// that passed. Without a server it fails under CI=true, and otherwise
// skips the package with the reason.
func TestMain(m *testing.M) {
	if os.Getenv(fleetRole) != "" {
		// A worker process of the fleet tests: its servers are the parent's.
		os.Exit(m.Run())
	}
	for _, kind := range families {
		s, err := testbench.StartNode(context.Background(), testbench.Options{Kind: kind})
		if err != nil {
			for _, s := range singles {
				s.Close()
			}
			if os.Getenv("CI") == "true" {
				fmt.Fprintf(os.Stderr, "integration: %s required under CI=true: %v\n", kind, err)
				os.Exit(1)
			}
			fmt.Fprintf(os.Stderr, "integration: no %s, the package's tests are skipped: %v\n", kind, err)
			os.Exit(0)
		}
		singles[kind] = s
	}
	code := m.Run()
	clusters.Lock()
	for _, c := range clusters.m {
		c.Close()
	}
	clusters.Unlock()
	for _, s := range singles {
		s.Close()
	}
	report := tally.report()
	fmt.Fprint(os.Stderr, report)
	if path := os.Getenv("RATELUA_ADAPTER_CASES"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "write the adapter case report:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// tally counts the cases that passed per adapter, family and topology.
var tally = &counter{n: map[string]int{}}

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

// pass counts one case that passed.
func (c *counter) pass(adapter string, kind testbench.Kind, topology string) {
	c.mu.Lock()
	c.n[adapter+"|"+string(kind)+"|"+topology]++
	c.mu.Unlock()
}

// count runs f as a case of adapter on kind and topology, and counts it
// when it passed.
func count(t *testing.T, adapter string, kind testbench.Kind, topology string, f func(t *testing.T)) {
	t.Helper()
	f(t)
	if !t.Failed() && !t.Skipped() {
		tally.pass(adapter, kind, topology)
	}
}

// report is one line per adapter and family:
// "go-redis: redis 7.0.15 single 10 / cluster 10".
func (c *counter) report() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "integration cases per adapter (%d cases each):\n", len(cases)+1)
	for _, a := range adapters {
		for _, kind := range families {
			version := "not started"
			if s := singles[kind]; s != nil {
				version = s.Version
			}
			fmt.Fprintf(&b, "  %s: %s %s single %d / cluster %d\n", a.name, kind, version,
				c.n[a.name+"|"+string(kind)+"|single"], c.n[a.name+"|"+string(kind)+"|cluster"])
		}
	}
	for _, kind := range families {
		version := "not started"
		if s := singles[kind]; s != nil {
			version = s.Version
		}
		fmt.Fprintf(&b, "  miniredis: decides as %s %s: %d of %d cases\n", kind, version,
			c.n["miniredis|"+string(kind)+"|single"], len(miniCases))
	}
	// TestConcurrencyFleet on single nodes and the shared clusters, and
	// TestConcurrencyFailover on dedicated clusters (both faults).
	for _, kind := range families {
		fmt.Fprintf(&b, "  concurrency fleet: %s single %d of 1 / cluster %d of 3\n", kind,
			c.n["fleet|"+string(kind)+"|single"], c.n["fleet|"+string(kind)+"|cluster"])
	}
	return b.String()
}
