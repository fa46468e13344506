// Package ratemini runs ratelua's limiters on miniredis
// (github.com/alicebob/miniredis/v2), for the unit tests of code that uses
// ratelua: no server to install, and a clock the test moves.
//
//	m := miniredis.RunT(t)
//	clock := ratemini.NewClock(m, time.Unix(1_700_000_000, 0))
//	client, err := ratemini.New(m)
//	...
//	defer client.Close()
//	logins, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "login"}, ...)
//	logins.Allow(ctx, "203.0.113.7") // allowed
//	logins.Allow(ctx, "203.0.113.7") // denied
//	clock.Advance(5 * time.Second)   // TIME and every TTL move on together
//	logins.Allow(ctx, "203.0.113.7") // allowed again
//
// miniredis runs the scripts by EVALSHA and EVAL in gopher-lua, as a real
// server does, and all four scripts give it the decisions and state a
// real Redis 7.0 or Valkey 8.0 gives (ratelua's integration suite checks
// it). It has no Redis Functions: a limiter with Options.Functions fails
// at once with an error wrapping ratelua.ErrNotSupported, as do
// LoadFunctions and any FCALL.
//
// It is a module of its own, so that ratelua's go.mod does not require
// miniredis.
package ratemini

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"

	"github.com/ratelua/ratelua"
)

// Client is a ratelua.Client on a miniredis server, through a rueidis
// connection to it. It batches (RunBatch) and lists its one node (Nodes),
// so ResetPrefix and Registry.Load work. Close it when done.
type Client struct {
	m      *miniredis.Miniredis
	conn   rueidis.Client
	inner  ratelua.Client
	closed atomic.Bool
}

// New connects to m, which must be running.
func New(m *miniredis.Miniredis) (*Client, error) {
	if m == nil {
		return nil, fmt.Errorf("ratemini: nil miniredis")
	}
	conn, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:  []string{m.Addr()},
		DisableCache: true, // miniredis has no client tracking
	})
	if err != nil {
		return nil, fmt.Errorf("ratemini: connect to miniredis at %s: %w", m.Addr(), err)
	}
	return &Client{m: m, conn: conn, inner: ratelua.Rueidis(conn)}, nil
}

// Close closes the connection; the miniredis server runs on. Calls after
// Close fail wrapping ratelua.ErrUnavailable.
func (c *Client) Close() {
	c.closed.Store(true)
	c.conn.Close()
}

// errClosed is what a call on a closed Client gets. (rueidis itself may
// dial again after Close.)
func (c *Client) errClosed() error {
	if c.closed.Load() {
		return fmt.Errorf("ratemini: client closed: %w", ratelua.ErrUnavailable)
	}
	return nil
}

// Run sends one call. An FCALL fails at once, wrapping
// ratelua.ErrNotSupported: miniredis has no Redis Functions.
func (c *Client) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	if err := c.errClosed(); err != nil {
		return err
	}
	if call.Command == "FCALL" {
		return noFunctions(call.Script)
	}
	return c.inner.Run(ctx, call, reply)
}

// RunBatch sends the calls in one round trip; FCALLs fail as in Run.
func (c *Client) RunBatch(ctx context.Context, calls []ratelua.Call, replies [][]int64) []error {
	errs := make([]error, len(calls))
	if err := c.errClosed(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	send := make([]ratelua.Call, 0, len(calls))
	sendReplies := make([][]int64, 0, len(calls))
	index := make([]int, 0, len(calls))
	for i, call := range calls {
		if call.Command == "FCALL" {
			errs[i] = noFunctions(call.Script)
			continue
		}
		send, sendReplies, index = append(send, call), append(sendReplies, replies[i]), append(index, i)
	}
	if len(send) == 0 {
		return errs
	}
	batch, ok := c.inner.(interface {
		RunBatch(context.Context, []ratelua.Call, [][]int64) []error
	})
	if !ok {
		return errs // ratelua.Rueidis batches; never reached
	}
	for j, err := range batch.RunBatch(ctx, send, sendReplies) {
		errs[index[j]] = err
	}
	return errs
}

// Nodes lists the one node, miniredis itself. miniredis has no ROLE, so
// the node answers it (a master with no replicas) without sending it;
// FUNCTION fails wrapping ratelua.ErrNotSupported.
func (c *Client) Nodes(ctx context.Context) ([]ratelua.Node, error) {
	lister, ok := c.inner.(interface {
		Nodes(context.Context) ([]ratelua.Node, error)
	})
	if !ok {
		return nil, fmt.Errorf("ratemini: %w", ratelua.ErrNotSupported) // never reached
	}
	nodes, err := lister.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	if len(nodes) != 1 {
		return nil, fmt.Errorf("ratemini: the connection to miniredis lists %d nodes, want 1", len(nodes))
	}
	do := nodes[0].Do
	return []ratelua.Node{{Addr: c.m.Addr(), Do: func(ctx context.Context, args ...string) (any, error) {
		if err := c.errClosed(); err != nil {
			return nil, err
		}
		if len(args) > 0 {
			switch strings.ToUpper(args[0]) {
			case "ROLE":
				return []any{"master", int64(0), []any{}}, nil
			case "FUNCTION", "FCALL", "FCALL_RO":
				return nil, noFunctions(args[0])
			}
		}
		return do(ctx, args...)
	}}}, nil
}

func noFunctions(what string) error {
	return fmt.Errorf("ratemini: miniredis has no Redis Functions (%s): %w", what, ratelua.ErrNotSupported)
}

// Clock is miniredis's time under a test's control: TIME, which the
// scripts read when a limiter has no Options.Clock, and every key's TTL
// move on together, and only when the test says so. Its Now can serve as
// Options.Clock too. A Clock is safe for concurrent use.
type Clock struct {
	m   *miniredis.Miniredis
	mu  sync.Mutex
	now time.Time
}

// NewClock sets m's time to start (m.SetTime) and returns the Clock that
// moves it.
func NewClock(m *miniredis.Miniredis, start time.Time) *Clock {
	m.SetTime(start)
	return &Clock{m: m, now: start}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d (d > 0): miniredis's TIME by d
// (m.SetTime), and every TTL by d (m.FastForward), so keys whose TTL ran
// out are gone.
func (c *Clock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.m.SetTime(c.now)
	c.m.FastForward(d)
}
