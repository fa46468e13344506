package ratelua_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/testserver"
)

// TestMain starts one redis-server and one valkey-server for the package's
// tests and points the examples at the Redis one.
func TestMain(m *testing.M) {
	started := map[testserver.Kind]*testserver.Server{}
	errs := map[testserver.Kind]error{}
	var stops []func()
	for _, kind := range []testserver.Kind{testserver.Redis, testserver.Valkey} {
		s, stop, err := testserver.StartMain(kind)
		if err != nil {
			errs[kind] = err
			continue
		}
		started[kind], stops = s, append(stops, stop)
	}
	if s := started[testserver.Redis]; s != nil {
		addr = s.Addr
	}
	ratelua.UseTestServers(started, errs)
	code := m.Run()
	for _, stop := range stops {
		stop()
	}
	fmt.Fprint(os.Stderr, ratelua.ServerCaseReport())
	os.Exit(code)
}
