package core

import (
	"os"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua/integration/internal/harness"
	"github.com/ratelua/ratelua/testbench"
)

// h is the package's server harness: the shared redis-server and
// valkey-server and their six-node clusters, each started on first use
// (a test binary that needs none, such as a fuzz run, starts none), and
// the cases reported as suite "core".
var h = harness.New()

// suite is the name this package's cases carry in the case report.
const suite = "core"

// TestMain runs the tests, stops the servers they started and reports
// the cases that ran on each server, so that a silent skip shows.
func TestMain(m *testing.M) { os.Exit(h.Main(m)) }

// eachServer runs f against a fresh client of the shared single node of
// every server family. A missing server skips, except under CI=true,
// where it fails.
func eachServer(t *testing.T, f func(t *testing.T, client rueidis.Client, s *testbench.Node)) {
	for _, kind := range harness.Families() {
		t.Run(string(kind), func(t *testing.T) {
			s := h.Node(t, kind)
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			h.Record(t, suite, "", harness.Single(s))
			f(t, client, s)
		})
	}
}

// onCluster runs f against a cluster client of the shared six-node
// cluster of every family. A missing server skips, except under CI=true.
func onCluster(t *testing.T, f func(t *testing.T, client rueidis.Client, c *testbench.Cluster)) {
	for _, kind := range harness.Families() {
		t.Run(string(kind)+"-cluster", func(t *testing.T) {
			c := h.Cluster(t, kind)
			client := clusterClient(t, c)
			h.Record(t, suite, "", harness.OnCluster(c))
			f(t, client, c)
		})
	}
}

// clusterClient is a rueidis client of c, closed when t ends.
func clusterClient(t *testing.T, c *testbench.Cluster) rueidis.Client {
	t.Helper()
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: c.Addrs(), DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}
