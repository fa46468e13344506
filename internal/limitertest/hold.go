package limitertest

import (
	"context"
	"sync"

	"github.com/ratelua/ratelua"
)

// HoldClient wraps a Client so that a test can hold the answer of one
// call: the server has answered, but the limiter does not know yet, as
// when a reply is slow on the network. Every other call passes through.
type HoldClient struct {
	ratelua.Client
	mu    sync.Mutex
	armed *Hold
}

// Hold is one held call: Answered is closed once the server answered it,
// and the limiter gets the answer when Release is called.
type Hold struct {
	Answered chan struct{}
	release  chan struct{}
}

// Release hands the held answer to the limiter.
func (h *Hold) Release() { close(h.release) }

// NewHoldClient wraps client.
func NewHoldClient(client ratelua.Client) *HoldClient { return &HoldClient{Client: client} }

// Arm holds the answer of the next call that runs.
func (c *HoldClient) Arm() *Hold {
	h := &Hold{Answered: make(chan struct{}), release: make(chan struct{})}
	c.mu.Lock()
	c.armed = h
	c.mu.Unlock()
	return h
}

// Run runs call on the wrapped client, and holds its answer if armed.
func (c *HoldClient) Run(ctx context.Context, call ratelua.Call, reply []int64) error {
	c.mu.Lock()
	h := c.armed
	c.armed = nil
	c.mu.Unlock()
	err := c.Client.Run(ctx, call, reply)
	if h != nil {
		close(h.Answered)
		<-h.release
	}
	return err
}
