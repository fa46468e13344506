package ratelua

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
	closeClusters()
	report := serverCaseReport()
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
// topology; empty when no server was started.
func serverCaseReport() string {
	shared.Lock()
	defer shared.Unlock()
	if len(shared.nodes) == 0 && len(shared.errs) == 0 {
		return ""
	}
	out := ""
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		version := "not started"
		if s := shared.nodes[kind]; s != nil {
			version = s.Version
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
