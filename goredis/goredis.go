// Package goredis runs ratelua's limiters on go-redis v9
// (github.com/redis/go-redis/v9).
//
//	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
//	logins, err := ratelua.NewSlidingWindow(goredis.New(rdb), ratelua.Options{Prefix: "login"},
//		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second})
//
// It is a module of its own, so that ratelua's go.mod does not require
// go-redis.
package goredis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/ratelua/ratelua"
)

// New adapts a go-redis client to ratelua.Client: a *redis.Client (one
// server, or a failover client from redis.NewFailoverClient), a
// *redis.ClusterClient (also from redis.NewFailoverClusterClient) or a
// *redis.Ring. A nil c gives a nil Client.
//
// The Client it returns has both optional capabilities of a
// ratelua.Client:
//
//   - RunBatch sends a batch as one go-redis pipeline: one round trip per
//     node for a cluster client or a ring.
//   - Nodes lists the masters and replicas a *redis.ClusterClient knows
//     (ForEachShard), every shard of a *redis.Ring, and the client itself
//     for a *redis.Client. A failover client is a *redis.Client: its one
//     node is the master the sentinels name now, so Registry.Load does not
//     reach the replicas. After a sentinel failover the first call of each
//     script meets NOSCRIPT on the promoted replica and the limiter loads
//     it with EVAL; until the client has moved, the demoted master answers
//     READONLY, an error reply that even a FailOpen limiter denies on.
//     Any other implementation of redis.UniversalClient lists no nodes:
//     ResetPrefix, Registry.Load, LoadFunctions and Options.Functions'
//     library loading then fail with an error wrapping
//     ratelua.ErrNotSupported.
//
// Error replies come back as *ratelua.ServerError with the server's text
// (go-redis's own rewording of NOSCRIPT is not used). A closed client, an
// exhausted connection pool (redis.ErrClosed, redis.ErrPoolTimeout,
// redis.ErrPoolExhausted), a ring whose shards are all down and a cluster
// client with no node come back as an error wrapping
// ratelua.ErrUnavailable, so that a FailOpen limiter admits.
func New(c redis.UniversalClient) ratelua.Client {
	if c == nil {
		return nil
	}
	return client{c}
}

type client struct{ c redis.UniversalClient }

// Run sends one call with Process, on a cluster or ring to the node of
// call.Key.
func (a client) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	cmd, err := newCmd(ctx, call)
	if err != nil {
		return err
	}
	_ = a.c.Process(ctx, cmd) // the error is cmd's, read below
	return readInts(cmd, reply)
}

// RunBatch sends every call in one pipeline.
func (a client) RunBatch(ctx context.Context, calls []ratelua.Call, replies [][]int64) []error {
	errs := make([]error, len(calls))
	cmds := make([]*redis.Cmd, len(calls))
	pipe := a.c.Pipeline()
	for i, call := range calls {
		cmd, err := newCmd(ctx, call)
		if err != nil {
			errs[i] = err
			continue
		}
		cmds[i] = cmd
		_ = pipe.Process(ctx, cmd) // queued; sent by Exec
	}
	var execErr error
	if pipe.Len() > 0 {
		_, execErr = pipe.Exec(ctx) // every command sent carries its own error
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		if execErr != nil && cmd.Err() == nil && cmd.Val() == nil {
			// Neither a reply nor an error: never sent. go-redis before
			// v9.14.0 leaves a closed client's pipeline like this.
			cmd.SetErr(execErr)
		}
		errs[i] = readInts(cmd, replies[i])
	}
	return errs
}

// shards is what *redis.ClusterClient and *redis.Ring share for reaching
// every node.
type shards interface {
	ForEachShard(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
}

// Nodes lists the nodes the client knows; see New.
func (a client) Nodes(ctx context.Context) ([]ratelua.Node, error) {
	switch c := a.c.(type) {
	case *redis.Client:
		return []ratelua.Node{node(c)}, nil
	case shards:
		var mu sync.Mutex
		var out []ratelua.Node
		err := c.ForEachShard(ctx, func(_ context.Context, n *redis.Client) error {
			mu.Lock()
			out = append(out, node(n))
			mu.Unlock()
			return nil
		})
		if err != nil {
			return nil, mapErr(err)
		}
		return out, nil
	}
	return nil, fmt.Errorf("goredis: %T has no ForEachShard: %w", a.c, ratelua.ErrNotSupported)
}

// node is one server of the deployment, reached by its own client.
func node(c *redis.Client) ratelua.Node {
	return ratelua.Node{Addr: c.Options().Addr, Do: func(ctx context.Context, args ...string) (any, error) {
		cmdArgs := make([]any, len(args))
		for i, a := range args {
			cmdArgs[i] = a
		}
		v, err := c.Do(ctx, cmdArgs...).Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, mapErr(err)
		}
		return plain(v), nil
	}}
}

// newCmd builds "<Command> <Script> 1 <Key> <Args...>" with the key's
// position set, so that a cluster client or a ring routes it by the key.
func newCmd(ctx context.Context, call ratelua.Call) (*redis.Cmd, error) {
	switch call.Command {
	case "EVALSHA", "EVAL", "FCALL":
	default:
		return nil, fmt.Errorf("goredis: unknown script command %q", call.Command)
	}
	args := make([]any, 4, 4+len(call.Args))
	args[0], args[1], args[2], args[3] = call.Command, call.Script, "1", call.Key
	for _, a := range call.Args {
		args = append(args, a)
	}
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(3)
	return cmd, nil
}

// readInts stores cmd's reply, an array of len(reply) integers, in reply.
func readInts(cmd *redis.Cmd, reply []int64) error {
	v, err := cmd.Result()
	if errors.Is(err, redis.Nil) {
		return fmt.Errorf("goredis: nil reply, want %d integers", len(reply))
	}
	if err != nil {
		return mapErr(err)
	}
	values, ok := v.([]any)
	if !ok {
		return fmt.Errorf("goredis: reply is %T, want an array of %d integers", v, len(reply))
	}
	if len(values) != len(reply) {
		return fmt.Errorf("goredis: reply has %d elements, want %d integers", len(values), len(reply))
	}
	for i, e := range values {
		n, ok := e.(int64)
		if !ok {
			return fmt.Errorf("goredis: reply element %d is %T, want an integer", i+1, e)
		}
		reply[i] = n
	}
	return nil
}

// mapErr makes an error reply a *ratelua.ServerError and marks the
// failures go-redis reports before sending as unavailability; network and
// context errors pass as they are (ratelua recognises them).
func mapErr(err error) error {
	var re redis.Error
	switch {
	case errors.As(err, &re) && !errors.Is(err, redis.Nil):
		return &ratelua.ServerError{Message: re.Error()}
	case errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		noNodes(err):
		return fmt.Errorf("goredis: %w: %w", ratelua.ErrUnavailable, err)
	}
	return err
}

// noNodes reports go-redis's errors for a ring or cluster with no node to
// send to, which it does not export: known by their text.
func noNodes(err error) bool {
	switch err.Error() {
	case "redis: all ring shards are down", "redis: cluster has no nodes":
		return true
	}
	return false
}

// plain turns a reply into the shapes ratelua.Node promises: string,
// int64, []any of such values, or nil. RESP3's other types become the
// nearest of them: a map a flat array of keys and values sorted by key, a
// boolean 1 or 0, a double its shortest decimal text, an error inside an
// array a *ratelua.ServerError.
func plain(v any) any {
	switch v := v.(type) {
	case nil, string, int64:
		return v
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plain(e)
		}
		return out
	case map[any]any:
		keys := make([]any, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b any) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		out := make([]any, 0, 2*len(v))
		for _, k := range keys {
			out = append(out, plain(k), plain(v[k]))
		}
		return out
	case bool:
		if v {
			return int64(1)
		}
		return int64(0)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case error:
		return mapErr(v)
	}
	return fmt.Sprint(v)
}
