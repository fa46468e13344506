package rls

import (
	"container/list"
	"sync"
)

// denyCache answers reference rules over their limit without a round
// trip, exactly as the server would.
//
// A reference rule's window is a count that only grows until the window
// ends (every hit is added, denied or not), and a request is over the limit
// when the count after its hits is above requests_per_unit. So once the
// server has said that a descriptor's count in window w is c, every later
// request of that descriptor in w, of any hits (0 too) and under any limit
// below c, is over the limit: the cache keeps, per state key, the window
// and the highest count the server reported over a limit, and answers a
// request in the same window whose limit is below it. It sends nothing to
// the server for it: the reference would add the hits to a count already
// over the limit, which changes no answer of any instance (each sees a
// count above the limit either way) and no statistic (all the hits of a
// request that starts over the limit are over). A window is the unit
// aligned to the process's clock, the clock the service decides reference
// rules with, so an entry is never used past its window.
//
// It is exact as long as the count only grows: a state key deleted or
// reset behind the service's back, or a write lost in a failover, makes
// the server's count smaller than the cache's until the window ends.
type denyCache struct {
	mu      sync.Mutex
	max     int
	order   *list.List // of *denyEntry, the most recently used first
	entries map[string]*list.Element
}

// denyEntry is what the cache knows of one state key.
type denyEntry struct {
	key    string
	window int64  // the window's index: the process's Unix time / the unit
	count  uint64 // a count the server reported in that window
}

// newDenyCache returns a cache of at most max state keys.
func newDenyCache(max int) *denyCache {
	return &denyCache{max: max, order: list.New(), entries: map[string]*list.Element{}}
}

// over reports whether the count of key in window is known to be above
// limit, and that count.
func (c *denyCache) over(key string, window int64, limit uint64) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return 0, false
	}
	d := e.Value.(*denyEntry)
	if d.window != window {
		if d.window < window {
			c.order.Remove(e)
			delete(c.entries, key)
		}
		return 0, false
	}
	if d.count <= limit {
		return 0, false
	}
	c.order.MoveToFront(e)
	return d.count, true
}

// put records that the server reported count for key in window.
func (c *denyCache) put(key string, window int64, count uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		d := e.Value.(*denyEntry)
		switch {
		case window > d.window:
			d.window, d.count = window, count
		case window == d.window:
			d.count = max(d.count, count)
		}
		c.order.MoveToFront(e)
		return
	}
	c.entries[key] = c.order.PushFront(&denyEntry{key: key, window: window, count: count})
	if c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*denyEntry).key)
	}
}
