// Package embedded runs ratelua's limiters with no server: a ratelua.Client
// whose script calls run in the embedded engine (package luatest: the same
// scripts in gopher-lua on an in-memory keyspace that behaves like
// redis-server 7.0 for the commands they use, checked against the real
// servers by the integration suite).
//
// It is for trying the limiters, for examples and for tests of code that
// takes a ratelua.Client. Its state lives in one process and is lost when
// the process ends, so it limits nothing across instances: a service
// passes ratelua.Rueidis(client) (or an adapter's Client) instead.
package embedded
