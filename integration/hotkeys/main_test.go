// Package hotkeys is the multi-process proof of Options.HotKeys (issue
// 32): worker processes (this test binary run again, see worker_test.go)
// hammer one hot key on a real server, log every admission and every
// batch, and the tests check the log against the limits and the server's
// state.
package hotkeys

import (
	"os"
	"testing"

	"github.com/ratelua/ratelua/integration/internal/harness"
)

// h is the package's server harness: the shared redis-server and
// valkey-server and their six-node clusters, each started on first use.
var h = harness.New()

// suite is the name this package's cases carry in the case report.
const suite = "hotkeys"

// TestMain runs a worker when the environment asks for one (workerEnv),
// and the tests otherwise.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(workerEnv); cfg != "" {
		os.Exit(runWorker(cfg))
	}
	os.Exit(h.Main(m))
}
