package ratelua

import (
	"context"
)

// Client sends a limiter's script calls to a Redis or Valkey server or
// cluster. Rueidis adapts a rueidis.Client (the native path); the nested
// modules github.com/ratelua/ratelua/goredis and .../valkeygo adapt
// go-redis and valkey-go, .../ratemini runs limiters on miniredis in unit
// tests, and .../embedded runs them with no server at all.
//
// Run is all a limiter needs. A Client may also offer, found by a type
// assertion:
//
//	RunBatch(ctx context.Context, calls []Call, replies [][]int64) []error
//
// which sends calls in one round trip per node (AllowBatch and ResetMany
// use it, and otherwise send the calls one at a time), with the same
// reply and error rules as Run, and
//
//	Nodes(ctx context.Context) ([]Node, error)
//
// which lists every node of the deployment (a single server is one node),
// for the work that must reach each of them: ResetPrefix, Registry.Load,
// LoadFunctions, and the library loading that a limiter with
// Options.Functions does when a node lacks it. Without it those fail with
// an error wrapping ErrNotSupported.
type Client interface {
	// Run sends one call, on a cluster to the node that owns call.Key, and
	// stores its reply, an array of exactly len(reply) integers, in reply.
	// An error reply of the server comes back as a *ServerError (wrapped or
	// not) and a reply of another shape as some other error, so that a
	// server's "no" is never taken for a server that could not be reached.
	// A call that could not be sent or got no answer (connection refused
	// or reset, timeout, a closed client) comes back as the client's error,
	// or wrapping ErrUnavailable.
	Run(ctx context.Context, call Call, reply []int64) error
}

// Call is one script call on one key, as a Client sends it:
//
//	<Command> <Script> 1 <Key> <Args...>
//
// Command is "EVALSHA" (Script is the SHA1), "EVAL" (Script is the
// source) or "FCALL" (Script is the function name).
type Call struct {
	Command string
	Script  string
	Key     string
	Args    []string
}

// Node is one server of a deployment, as a Client's Nodes lists it.
type Node struct {
	// Addr is the node's "host:port".
	Addr string
	// Do sends one command to this node and returns its reply as a string,
	// an int64, a []any of such values, or nil; an error reply is a
	// *ServerError.
	Do func(ctx context.Context, args ...string) (any, error)
}

// Batcher is the optional batch capability of a Client: RunBatch sends
// calls in one round trip per node, with the same reply and error rules
// as Run, the reply of calls[i] in replies[i] and its error at index i.
// AllowBatch, Decide and ResetMany use it, and otherwise send the calls
// one at a time. An adapter can check that it offers it at compile time:
//
//	var _ ratelua.Batcher = (*MyClient)(nil)
type Batcher interface {
	RunBatch(ctx context.Context, calls []Call, replies [][]int64) []error
}

// NodeLister is the optional per-node capability of a Client: Nodes lists
// every node of the deployment (a single server is one node), for the
// work that must reach each of them: ResetPrefix, Registry.Load,
// LoadFunctions, and the library loading that a limiter with
// Options.Functions does when a node lacks it. Without it those fail with
// an error wrapping ErrNotSupported. An adapter can check that it offers
// it at compile time:
//
//	var _ ratelua.NodeLister = (*MyClient)(nil)
type NodeLister interface {
	Nodes(ctx context.Context) ([]Node, error)
}
