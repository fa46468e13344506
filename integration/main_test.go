package integration

import (
	"os"
	"testing"

	"github.com/ratelua/ratelua/integration/internal/harness"
)

// h is the package's server harness: the shared redis-server and
// valkey-server and their six-node clusters, each started on first use,
// and the cases reported per adapter ("adapter go-redis"), "miniredis"
// and "concurrency fleet".
var h = harness.New()

// TestMain runs the tests, stops the servers they started and reports
// the cases that ran on each, so that a silent skip shows. A worker
// process of the fleet tests only runs its test: its servers are the
// parent's, and the parent reports.
func TestMain(m *testing.M) {
	if os.Getenv(fleetRole) != "" {
		os.Exit(m.Run())
	}
	os.Exit(h.Main(m))
}

// count runs f as a case of suite on d, recorded with its result.
func count(t *testing.T, suite string, d deployment, f func(t *testing.T)) {
	t.Helper()
	h.Record(t, suite, "", d.server())
	f(t)
}

// adapterSuite is the suite an adapter's cases are counted in.
func adapterSuite(a adapter) string { return "adapter " + a.name }
