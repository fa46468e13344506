package ratelua

import (
	"fmt"
	"sync/atomic"

	"github.com/ratelua/ratelua/testbench"
)

// UseTestServers hands the servers started by TestMain (package
// ratelua_test, which also runs the examples) to the package's tests.
func UseTestServers(started map[testbench.Kind]*testbench.Node, errs map[testbench.Kind]error) {
	servers, serverErrs = started, errs
}

// CloseClusters stops the shared six-node clusters of the cluster tests.
func CloseClusters() { closeClusters() }

// ServerCaseReport says how many integration cases ran per family and
// topology, and on which servers: the version and testbench provider of
// the single nodes TestMain started (the clusters come from the same
// default provider), so that a silent skip, or a run that was not where it
// was asked to be, shows.
func ServerCaseReport() string {
	out := ""
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		version := "not started"
		if s := servers[kind]; s != nil {
			version = s.Version + " (" + s.Provider + ")"
		}
		for _, topology := range []string{"single", "cluster"} {
			var n int64
			if c, ok := serverCases.Load(string(kind) + " " + topology); ok {
				n = c.(*atomic.Int64).Load()
			}
			out += fmt.Sprintf("integration cases on %s %s, %s: %d\n", kind, version, topology, n)
		}
	}
	return out
}
