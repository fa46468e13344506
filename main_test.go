package ratelua_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/testbench"
)

// TestMain starts one redis-server and one valkey-server for the package's
// tests and points the examples at the Redis one.
func TestMain(m *testing.M) {
	started := map[testbench.Kind]*testbench.Node{}
	errs := map[testbench.Kind]error{}
	var stops []func()
	for _, kind := range []testbench.Kind{testbench.Redis, testbench.Valkey} {
		s, err := testbench.StartNode(context.Background(), testbench.Options{Kind: kind})
		if err != nil {
			errs[kind] = err
			continue
		}
		started[kind], stops = s, append(stops, func() { s.Close() })
	}
	if s := started[testbench.Redis]; s != nil {
		addr = s.Addr
	}
	ratelua.UseTestServers(started, errs)
	code := m.Run()
	ratelua.CloseClusters()
	for _, stop := range stops {
		stop()
	}
	report := ratelua.ServerCaseReport()
	fmt.Fprint(os.Stderr, report)
	// make test prints this file after the run, so that a silent skip shows.
	if path := os.Getenv("RATELUA_SERVER_CASES"); path != "" {
		if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "write server case report:", err)
		}
	}
	os.Exit(code)
}
