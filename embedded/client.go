package embedded

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/luatest"
)

// Options configures a Client.
type Options struct {
	// Clock is the engine's clock, read before every call: the scripts'
	// TIME (the limiters' default clock) and every key's expiry follow it.
	// Nil means time.Now.
	Clock func() time.Time
}

// Client is a ratelua.Client that runs the scripts in the embedded engine.
// It runs EVALSHA (NOSCRIPT until the script was sent once by EVAL, as a
// server does) and EVAL; FCALL fails with an error wrapping
// ratelua.ErrNotSupported. An error reply comes back as a
// *ratelua.ServerError, as from a server. It is safe for concurrent use:
// calls run one at a time.
type Client struct {
	clock func() time.Time
	mu    sync.Mutex
	e     *luatest.Engine
}

// A Client is a ratelua.Client with neither optional capability: it is no
// ratelua.Batcher (a batch runs one call at a time anyway) and no
// ratelua.NodeLister (one engine, no nodes to list: ResetPrefix and
// LoadFunctions fail with an error wrapping ratelua.ErrNotSupported).
var _ ratelua.Client = (*Client)(nil)

// New returns a Client with an empty keyspace.
func New(opts Options) *Client {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	return &Client{clock: clock, e: luatest.New(luatest.Options{Now: clock()})}
}

// Run sends one script call to the engine and stores its reply of
// len(reply) integers in reply.
func (c *Client) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.e.SetNow(c.clock())
	keys := []string{call.Key}
	var res *luatest.Result
	var err error
	switch call.Command {
	case "EVALSHA":
		res, err = c.e.EvalSHA(call.Script, keys, call.Args)
	case "EVAL":
		res, err = c.e.Run(call.Script, keys, call.Args)
	default:
		return fmt.Errorf("embedded: the engine runs EVAL and EVALSHA, not %q: %w", call.Command, ratelua.ErrNotSupported)
	}
	var er *luatest.ErrorReply
	if errors.As(err, &er) {
		return &ratelua.ServerError{Message: er.Msg}
	}
	if err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	ints, err := luatest.Ints(res.Reply)
	if err != nil {
		return fmt.Errorf("embedded: reply %v: %w", res.Reply, err)
	}
	if len(ints) != len(reply) {
		return fmt.Errorf("embedded: reply %v, want %d integers", res.Reply, len(reply))
	}
	copy(reply, ints)
	return nil
}
