package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/luatest"
)

// engineClient runs the limiters' scripts on the embedded luatest engine
// (gopher-lua and an in-memory keyspace) instead of a server: a
// ratelua.Client for trying the service with nothing to install. One
// engine serves every request in turn, its clock set to the wall clock
// before each call, so scripts read TIME as they would on a server.
type engineClient struct {
	mu sync.Mutex
	e  *luatest.Engine
}

func newEngineClient() *engineClient {
	return &engineClient{e: luatest.New(luatest.Options{Now: time.Now()})}
}

// Run sends one script call to the engine: EVALSHA (NOSCRIPT until the
// limiter has sent the source once by EVAL) or EVAL. An error reply comes
// back as a *ratelua.ServerError, as from a server.
func (c *engineClient) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.e.SetNow(time.Now())
	keys := []string{call.Key}
	var res *luatest.Result
	var err error
	switch call.Command {
	case "EVALSHA":
		res, err = c.e.EvalSHA(call.Script, keys, call.Args)
	case "EVAL":
		res, err = c.e.Run(call.Script, keys, call.Args)
	default:
		return fmt.Errorf("the embedded engine runs EVAL and EVALSHA, not %s", call.Command)
	}
	var er *luatest.ErrorReply
	if errors.As(err, &er) {
		return &ratelua.ServerError{Message: er.Msg}
	}
	if err != nil {
		return err
	}
	ints, err := luatest.Ints(res.Reply)
	if err != nil || len(ints) != len(reply) {
		return fmt.Errorf("reply %v, want %d integers", res.Reply, len(reply))
	}
	copy(reply, ints)
	return nil
}
