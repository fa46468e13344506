package limitertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/luatest"
)

// EngineClient is a ratelua.Client that runs the scripts in luatest: EVALSHA of a
// script it has seen (by EVAL), NOSCRIPT otherwise. While down, every
// call fails without an answer, as a refused connection does. It counts
// the calls it ran.
type EngineClient struct {
	mu    sync.Mutex
	e     *luatest.Engine
	down  bool
	calls int
}

// NewEngineClient returns an EngineClient on a luatest engine whose clock
// never moves.
func NewEngineClient() *EngineClient {
	return &EngineClient{e: luatest.New(luatest.Options{Now: time.Unix(1_700_000_000, 0)})}
}

// Run runs call in the engine.
func (c *EngineClient) Run(_ context.Context, call ratelua.Call, reply []int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	c.calls++
	var res *luatest.Result
	var err error
	switch call.Command {
	case "EVALSHA":
		res, err = c.e.EvalSHA(call.Script, []string{call.Key}, call.Args)
	case "EVAL":
		res, err = c.e.Run(call.Script, []string{call.Key}, call.Args)
	default:
		return fmt.Errorf("%w: %s", ratelua.ErrNotSupported, call.Command)
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
		return fmt.Errorf("reply %v: %v", res.Reply, err)
	}
	copy(reply, ints)
	return nil
}

// SetDown makes every call fail without an answer (down) or run again.
func (c *EngineClient) SetDown(down bool) {
	c.mu.Lock()
	c.down = down
	c.mu.Unlock()
}

// Ran returns how many calls the engine ran.
func (c *EngineClient) Ran() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}
