package ratelua

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/redis/rueidis"
)

// Rueidis adapts a rueidis.Client (single node, sentinel or cluster) to
// Client, with batches (one DoMulti per call) and every node (Nodes). It is
// ratelua's native path: a limiter on it builds each command on the stack
// and reads the reply in place. A nil client gives a nil Client.
func Rueidis(client rueidis.Client) Client {
	if client == nil {
		return nil
	}
	return rueidisClient{client}
}

type rueidisClient struct{ c rueidis.Client }

// The native adapter offers both optional capabilities of a Client.
var (
	_ Batcher    = rueidisClient{}
	_ NodeLister = rueidisClient{}
)

func (r rueidisClient) Run(ctx context.Context, call Call, reply []int64) error {
	return r.run(ctx, call.Command, call.Script, call.Key, call.Args, reply)
}

// run is Run with the call's fields apart, so that escape analysis sees
// that args and reply stay on the caller's stack.
func (r rueidisClient) run(ctx context.Context, command, script, key string, args []string, reply []int64) error {
	cmd, err := r.build(command, script, key, args)
	if err != nil {
		return err
	}
	return readInts(r.c.Do(ctx, cmd), reply)
}

// RunBatch sends every call in one DoMulti: one round trip per node.
func (r rueidisClient) RunBatch(ctx context.Context, calls []Call, replies [][]int64) []error {
	errs := make([]error, len(calls))
	cmds := make(rueidis.Commands, 0, len(calls))
	sent := make([]int, 0, len(calls))
	for i, c := range calls {
		cmd, err := r.build(c.Command, c.Script, c.Key, c.Args)
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
	for j, resp := range r.c.DoMulti(ctx, cmds...) {
		errs[sent[j]] = readInts(resp, replies[sent[j]])
	}
	return errs
}

// Nodes lists every node the client has a connection to.
func (r rueidisClient) Nodes(context.Context) ([]Node, error) {
	var out []Node
	for addr, node := range r.c.Nodes() {
		out = append(out, Node{Addr: addr, Do: func(ctx context.Context, args ...string) (any, error) {
			v, err := node.Do(ctx, node.B().Arbitrary(args...).Build()).ToAny()
			if errors.Is(err, rueidis.Nil) {
				return nil, nil
			}
			if err != nil {
				return nil, rueidisErr(err)
			}
			return plainReply(v), nil
		}})
	}
	return out, nil
}

func (r rueidisClient) build(command, script, key string, args []string) (rueidis.Completed, error) {
	b := r.c.B()
	switch command {
	case "EVALSHA":
		return b.Evalsha().Sha1(script).Numkeys(1).Key(key).Arg(args...).Build(), nil
	case "EVAL":
		return b.Eval().Script(script).Numkeys(1).Key(key).Arg(args...).Build(), nil
	case "FCALL":
		return b.Fcall().Function(script).Numkeys(1).Key(key).Arg(args...).Build(), nil
	}
	return rueidis.Completed{}, fmt.Errorf("ratelua: unknown script command %s", quote(command))
}

// readInts reads an array reply of len(reply) integers in place.
func readInts(resp rueidis.RedisResult, reply []int64) error {
	values, err := resp.ToArray()
	if err != nil {
		return rueidisErr(err)
	}
	if len(values) != len(reply) {
		return fmt.Errorf("reply has %d elements, want %d integers", len(values), len(reply))
	}
	for i := range values {
		if reply[i], err = values[i].AsInt64(); err != nil {
			return fmt.Errorf("reply element %d: %w", i+1, err)
		}
	}
	return nil
}

// rueidisErr makes an error reply a *ServerError and marks the failures
// rueidis reports before sending (a closing client, no node for the slot)
// as unavailability.
func rueidisErr(err error) error {
	if re, ok := rueidis.IsRedisErr(err); ok {
		return &ServerError{Message: re.Error()}
	}
	if errors.Is(err, rueidis.ErrClosing) || errors.Is(err, rueidis.ErrNoSlot) {
		return &unavailableError{err: err}
	}
	return err
}

// plainReply turns a RESP3 reply as rueidis's ToAny gives it into the
// shapes Node.Do promises: a map becomes a flat array of keys and values
// (sorted by key), a double its shortest decimal text, a boolean 1 or 0,
// an error inside an array a *ServerError.
func plainReply(v any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plainReply(e)
		}
		return out
	case map[string]any:
		out := make([]any, 0, 2*len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			out = append(out, k, plainReply(v[k]))
		}
		return out
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		if v {
			return int64(1)
		}
		return int64(0)
	case error:
		return rueidisErr(v)
	}
	return v
}
