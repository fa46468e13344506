// Package loopback gives the tests of ratelua-rls and of its reference
// comparisons ports to start services on.
package loopback

import (
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// FreePort returns a port free on 127.0.0.1 below Linux's ephemeral range
// (32768 and up), for a service the test starts to listen on. A port of
// the range, taken from a ":0" listener and closed, can be handed to an
// outgoing connection before the service binds it ("bind: address already
// in use", seen in CI); the kernel picks none below it.
func FreePort(t testing.TB) int {
	t.Helper()
	for range 200 {
		port := 10000 + rand.IntN(32768-10000)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		l.Close()
		return port
	}
	t.Fatal("no free port in [10000, 32767] after 200 tries")
	return 0
}
