package core

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/ratelua/ratelua/testbench"
)

// TestMain stops the servers and clusters the tests started (each on first
// use) and reports how many integration cases ran on each, so that a
// silent skip shows.
func TestMain(m *testing.M) {
	code := m.Run()
	report := serverCaseReport()
	closeClusters()
	closeServers()
	if report != "" {
		fmt.Fprint(os.Stderr, report)
	}
	// make test prints this file after the run.
	if path := os.Getenv("RATELUA_SERVER_CASES"); path != "" && report != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "write server case report:", err)
		}
	}
	os.Exit(code)
}

// serverCaseReport says how many integration cases ran per family and
// topology, and on which servers: the version and testbench provider of the
// shared single node, or else of the shared cluster, so that a silent skip,
// or a run that was not where it was asked to be, shows. It is empty when
// no server was started.
func serverCaseReport() string {
	shared.Lock()
	defer shared.Unlock()
	sharedClusters.Lock()
	defer sharedClusters.Unlock()
	if len(shared.nodes) == 0 && len(shared.errs) == 0 && len(sharedClusters.m) == 0 {
		return ""
	}
	out := ""
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		version := "not started"
		if s := shared.nodes[kind]; s != nil {
			version = s.Version + " (" + s.Provider + ")"
		} else if c := sharedClusters.m[kind]; c != nil && len(c.Masters()) > 0 {
			m := c.Masters()[0]
			version = m.Version + " (" + m.Provider + ")"
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
