// Package integration runs the same cases through every client ratelua
// adapts — rueidis (ratelua.Rueidis), go-redis (goredis), valkey-go
// (valkeygo) — on real redis-server 7.0 and valkey-server 8.0, a single
// node and a six-node cluster each, started by testbench; and checks that
// miniredis (ratemini) decides as the real servers do.
//
// It is a module of its own, so that neither ratelua nor an adapter
// requires the other clients. It holds only tests. Its packages share one
// server harness (internal/harness): the single nodes and six-node
// clusters, started on first use, and the case report, one line per case
// (suite, case, server, result) appended to the file named by
// RATELUA_CASES, whose summary make test prints (internal/cmd/casereport).
// Under CI=true a server that cannot start is a failure, never a skip.
// The login case's limits are defined once, in internal/login.
package integration
