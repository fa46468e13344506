package middleware

import (
	"os"
	"testing"

	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/integration/internal/harness"
)

// h is the package's server harness: the servers the middleware runs
// against, a redis-server and a valkey-server and a six-node cluster of
// each, each started on first use, and the cases reported as suite
// "middleware".
var h = harness.New()

// TestMain runs the tests, stops the servers they started and reports
// the cases that ran on each.
func TestMain(m *testing.M) { os.Exit(h.Main(m)) }

// eachBackend runs f on a client of every server: redis and valkey, a
// single node and a six-node cluster. A missing server skips, except
// under CI=true, where it fails.
func eachBackend(t *testing.T, f func(t *testing.T, client ratelua.Client)) {
	for _, kind := range harness.Families() {
		for _, topology := range []string{"single", "cluster"} {
			t.Run(string(kind)+"-"+topology, func(t *testing.T) {
				var addrs []string
				var server harness.Server
				if topology == "single" {
					n := h.Node(t, kind)
					addrs, server = []string{n.Addr}, harness.Single(n)
				} else {
					c := h.Cluster(t, kind)
					addrs, server = c.Addrs(), harness.OnCluster(c)
				}
				client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: addrs, DisableCache: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(client.Close)
				h.Record(t, "middleware", "", server)
				f(t, ratelua.Rueidis(client))
			})
		}
	}
}
