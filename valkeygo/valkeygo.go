// Package valkeygo runs ratelua's limiters on valkey-go
// (github.com/valkey-io/valkey-go), Valkey's own Go client.
//
//	client, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"127.0.0.1:6379"}})
//	logins, err := ratelua.NewSlidingWindow(valkeygo.New(client), ratelua.Options{Prefix: "login"},
//		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second})
//
// It is a module of its own, so that ratelua's go.mod does not require
// valkey-go.
package valkeygo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/valkey-io/valkey-go"

	"github.com/ratelua/ratelua"
)

// New adapts a valkey-go client (single node, sentinel or cluster) to
// ratelua.Client. A nil c gives a nil Client.
//
// The Client it returns has both optional capabilities of a
// ratelua.Client: RunBatch sends a batch in one DoMulti (one round trip
// per node), and Nodes lists every node the client is connected to
// (valkey.Client.Nodes: on a cluster its masters and replicas).
//
// Error replies come back as *ratelua.ServerError with the server's text
// (less a leading "ERR ", which valkey-go drops, as rueidis does), and a client that is closing or has no node for a slot
// (valkey.ErrClosing, valkey.ErrNoSlot) as an error wrapping
// ratelua.ErrUnavailable.
func New(c valkey.Client) ratelua.Client {
	if c == nil {
		return nil
	}
	return client{c}
}

type client struct{ c valkey.Client }

// Run sends one call with Do, on a cluster to the node of call.Key.
func (a client) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	cmd, err := a.build(call)
	if err != nil {
		return err
	}
	return readInts(a.c.Do(ctx, cmd), reply)
}

// RunBatch sends every call in one DoMulti.
func (a client) RunBatch(ctx context.Context, calls []ratelua.Call, replies [][]int64) []error {
	errs := make([]error, len(calls))
	cmds := make(valkey.Commands, 0, len(calls))
	sent := make([]int, 0, len(calls))
	for i, call := range calls {
		cmd, err := a.build(call)
		if err != nil {
			errs[i] = err
			continue
		}
		cmds = append(cmds, cmd)
		sent = append(sent, i)
	}
	if len(cmds) == 0 {
		return errs
	}
	for j, resp := range a.c.DoMulti(ctx, cmds...) {
		errs[sent[j]] = readInts(resp, replies[sent[j]])
	}
	return errs
}

// Nodes lists every node the client is connected to.
func (a client) Nodes(context.Context) ([]ratelua.Node, error) {
	var out []ratelua.Node
	for addr, n := range a.c.Nodes() {
		out = append(out, ratelua.Node{Addr: addr, Do: func(ctx context.Context, args ...string) (any, error) {
			v, err := n.Do(ctx, n.B().Arbitrary(args...).Build()).ToAny()
			if valkey.IsValkeyNil(err) {
				return nil, nil
			}
			if err != nil {
				return nil, mapErr(err)
			}
			return plain(v), nil
		}})
	}
	return out, nil
}

// build is "<Command> <Script> 1 <Key> <Args...>".
func (a client) build(call ratelua.Call) (valkey.Completed, error) {
	b := a.c.B()
	switch call.Command {
	case "EVALSHA":
		return b.Evalsha().Sha1(call.Script).Numkeys(1).Key(call.Key).Arg(call.Args...).Build(), nil
	case "EVAL":
		return b.Eval().Script(call.Script).Numkeys(1).Key(call.Key).Arg(call.Args...).Build(), nil
	case "FCALL":
		return b.Fcall().Function(call.Script).Numkeys(1).Key(call.Key).Arg(call.Args...).Build(), nil
	}
	return valkey.Completed{}, fmt.Errorf("valkeygo: unknown script command %q", call.Command)
}

// readInts stores an array reply of len(reply) integers in reply.
func readInts(resp valkey.ValkeyResult, reply []int64) error {
	values, err := resp.ToArray()
	if err != nil {
		return mapErr(err)
	}
	if len(values) != len(reply) {
		return fmt.Errorf("valkeygo: reply has %d elements, want %d integers", len(values), len(reply))
	}
	for i := range values {
		if !values[i].IsInt64() {
			return fmt.Errorf("valkeygo: reply element %d is not an integer", i+1)
		}
		reply[i], _ = values[i].AsInt64()
	}
	return nil
}

// mapErr makes an error reply a *ratelua.ServerError and marks the
// failures valkey-go reports before sending as unavailability; network
// and context errors pass as they are (ratelua recognises them).
func mapErr(err error) error {
	if ve, ok := valkey.IsValkeyErr(err); ok { // not valkey.Nil
		return &ratelua.ServerError{Message: ve.Error()}
	}
	if errors.Is(err, valkey.ErrClosing) || errors.Is(err, valkey.ErrNoSlot) {
		return fmt.Errorf("valkeygo: %w: %w", ratelua.ErrUnavailable, err)
	}
	return err
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
	case map[string]any:
		out := make([]any, 0, 2*len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = append(out, k, plain(v[k]))
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
