package limitertest

import (
	"sync"
	"time"
)

// ManualClock is a caller clock a test moves; safe for concurrent use.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// Now is the clock's reading, an Options.Clock.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// NewManualClock returns a ManualClock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }
