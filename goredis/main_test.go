package goredis_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/ratelua/ratelua/testbench"
)

// server is the redis-server that TestMain starts for the examples and the
// tests.
var (
	server *testbench.Node
	addr   string
)

// TestMain starts one redis-server (7.0) for the package. Without one the
// package's tests do not run: a failure under CI=true, else a skip with
// its reason (make servers installs the servers).
func TestMain(m *testing.M) {
	s, err := testbench.StartNode(context.Background(), testbench.Options{Kind: testbench.Redis})
	if err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "goredis: redis-server required under CI=true:", err)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "goredis: no redis-server, the package's tests are skipped:", err)
		os.Exit(0)
	}
	server, addr = s, s.Addr
	code := m.Run()
	s.Close()
	os.Exit(code)
}
