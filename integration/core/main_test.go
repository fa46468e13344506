package core

import (
	"os"
	"testing"

	"github.com/ratelua/ratelua/integration/internal/harness"
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
