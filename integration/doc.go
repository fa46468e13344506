// Package integration runs the same cases through every client ratelua
// adapts — rueidis (ratelua.Rueidis), go-redis (goredis), valkey-go
// (valkeygo) — on real redis-server 7.0 and valkey-server 8.0, a single
// node and a six-node cluster each, started by testbench; and checks that
// miniredis (ratemini) decides as the real servers do.
//
// It is a module of its own, so that neither ratelua nor an adapter
// requires the other clients. It holds only tests: go test runs them and
// writes how many cases passed per adapter, family and topology to the
// file named by RATELUA_ADAPTER_CASES (make test prints it). Under
// CI=true a server that cannot start is a failure, never a skip.
package integration
