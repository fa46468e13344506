package ratelua

import (
	"fmt"
	"sync/atomic"

	"github.com/ratelua/ratelua/internal/testserver"
)

// UseTestServers hands the servers started by TestMain (package
// ratelua_test, which also runs the examples) to the package's tests.
func UseTestServers(started map[testserver.Kind]*testserver.Server, errs map[testserver.Kind]error) {
	servers, serverErrs = started, errs
}

// ServerCaseReport says how many server cases ran per family, so that a
// silent skip shows.
func ServerCaseReport() string {
	out := ""
	for _, kind := range []testserver.Kind{testserver.Redis, testserver.Valkey} {
		var n int64
		if c, ok := serverCases.Load(kind); ok {
			n = c.(*atomic.Int64).Load()
		}
		version := "not started"
		if s := servers[kind]; s != nil {
			version = s.Version
		}
		out += fmt.Sprintf("server cases on %s %s, single node: %d\n", kind, version, n)
	}
	return out
}
