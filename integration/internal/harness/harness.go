// Package harness is the one server harness of the integration suites
// (integration, integration/core, integration/middleware, integration/hotkeys,
// integration/cli): the shared single nodes and six-node clusters of
// redis-server and valkey-server, each started on first use and closed
// when the package's tests end, the rule for a server that cannot start
// (a failure under CI=true, a skip with the reason otherwise), and the
// case report every package appends to (report.go).
//
// A package's TestMain makes one Harness and hands it the run:
//
//	var h = harness.New()
//
//	func TestMain(m *testing.M) { os.Exit(h.Main(m)) }
package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ratelua/ratelua/testbench"
)

// Families are the server families every suite runs on, in report order.
func Families() []testbench.Kind {
	return []testbench.Kind{testbench.Redis, testbench.Valkey}
}

// Harness holds the servers one package's tests share and the cases they
// ran. The zero value is not usable; New makes one.
type Harness struct {
	mu          sync.Mutex
	nodes       map[testbench.Kind]*testbench.Node
	nodeErrs    map[testbench.Kind]error
	clusters    map[testbench.Kind]*testbench.Cluster
	clusterErrs map[testbench.Kind]error
	cases       []Case
}

// New returns a Harness that has started nothing yet.
func New() *Harness {
	return &Harness{
		nodes:       map[testbench.Kind]*testbench.Node{},
		nodeErrs:    map[testbench.Kind]error{},
		clusters:    map[testbench.Kind]*testbench.Cluster{},
		clusterErrs: map[testbench.Kind]error{},
	}
}

// Main runs the package's tests, stops every server the harness started,
// writes the package's summary to stderr and appends its cases to the
// report file (ReportEnv). It returns the exit code for os.Exit: the
// tests' code, or 1 when the report cannot be written.
func (h *Harness) Main(m *testing.M) int {
	code := m.Run()
	h.close()
	cases := h.Cases()
	if len(cases) > 0 {
		fmt.Fprint(os.Stderr, Summarize(cases))
	}
	if path := os.Getenv(ReportEnv); path != "" && len(cases) > 0 {
		if err := AppendReport(path, cases); err != nil {
			fmt.Fprintln(os.Stderr, "harness:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}

// close stops the shared clusters and nodes.
func (h *Harness) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.clusters {
		c.Close()
	}
	for _, n := range h.nodes {
		n.Close()
	}
}

// Node returns the shared single node of kind, started on first use
// (testbench's provider and defaults). When it cannot start, tb fails
// under CI=true and is skipped otherwise, with the reason; a later call
// gives the same answer without starting again.
func (h *Harness) Node(tb testing.TB, kind testbench.Kind) *testbench.Node {
	tb.Helper()
	n, err := h.node(kind)
	if err != nil {
		Unavailable(tb, fmt.Errorf("no %s server: %w", kind, err))
	}
	return n
}

func (h *Harness) node(kind testbench.Kind) (*testbench.Node, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.nodes[kind]; n != nil {
		return n, nil
	}
	if err := h.nodeErrs[kind]; err != nil {
		return nil, err
	}
	n, err := testbench.StartNode(context.Background(), testbench.Options{Kind: kind})
	if err != nil {
		h.nodeErrs[kind] = err
		return nil, err
	}
	h.nodes[kind] = n
	return n, nil
}

// Cluster returns the shared six-node cluster (3 masters, 3 replicas) of
// kind, started on first use with ClusterConfig. A cluster the
// provider cannot run here skips tb, except under CI=true; any other
// failure to start fails it. A later call gives the same answer without
// starting again.
func (h *Harness) Cluster(tb testing.TB, kind testbench.Kind) *testbench.Cluster {
	tb.Helper()
	h.mu.Lock()
	c, err := h.clusters[kind], h.clusterErrs[kind]
	if c == nil && err == nil {
		c, err = testbench.StartCluster(context.Background(), testbench.Options{Kind: kind, Config: ClusterConfig()})
		if err != nil {
			h.clusterErrs[kind] = err
		} else {
			h.clusters[kind] = c
		}
	}
	h.mu.Unlock()
	if errors.Is(err, testbench.ErrUnavailable) {
		Unavailable(tb, fmt.Errorf("no %s cluster: %w", kind, err))
	}
	if err != nil {
		tb.Fatalf("start a %s cluster: %v", kind, err)
	}
	return c
}

// ClusterConfig is the server configuration of the shared clusters, for
// a test that starts a cluster of its own like them. No test fails a node
// of a shared cluster over by a timeout (those that fail over do it by
// hand, with CLUSTER FAILOVER): a node timeout of 5 s instead of
// testbench's 1 s keeps a busy machine from failing nodes over under the
// tests ("the slot has no node", a stalled call).
func ClusterConfig() []string { return []string{"cluster-node-timeout 5000"} }

// Unavailable reports a server that is not there: a failure under
// CI=true, where a missing server is never a skip, and a skip otherwise,
// each with the first line of err as the reason.
func Unavailable(tb testing.TB, err error) {
	tb.Helper()
	msg := strings.SplitN(err.Error(), "\n", 2)[0]
	if os.Getenv("CI") == "true" {
		tb.Fatalf("required under CI=true: %s", msg)
	}
	tb.Skip(msg)
}
