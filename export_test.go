package ratelua

import (
	"fmt"

	"github.com/ratelua/ratelua/testbench"
)

// SharedServerAddr returns the address of the package's shared
// redis-server, starting it on first use, for the examples (package
// ratelua_test). It panics when no server can start: an example cannot
// skip.
func SharedServerAddr() string {
	n, err := sharedServer(testbench.Redis)
	if err != nil {
		panic(fmt.Sprintf("the examples need a redis-server: %v", err))
	}
	return n.Addr
}
