package service

import (
	"sync"

	"github.com/ratelua/ratelua/internal/lru"
)

// denyCache answers reference rules over their limit without a round
// trip, exactly as the server would.
//
// A reference rule's window is a count that only grows until the window
// ends (every hit is added, denied or not), and a request is over the limit
// when the count after its hits is above requests_per_unit. So once the
// server has said that a descriptor's count in window w is c, every later
// request of that descriptor in w, of any hits (0 too) and under any limit
// below c, is over the limit. The cache keeps, per state key, the window,
// a count the window is known to have reached, and the hits it answered
// without sending them; it answers a request in the same window whose
// limit is below that count, adding its hits to both. The hits it kept go
// to the server with the next request of that descriptor it cannot answer
// (one under a higher limit: a limit override, or requests_per_unit raised
// by a reload), so the server's count is then the reference's again, and
// so is that request's answer. Until then no answer differs: every request
// the cache answers starts over its limit, and all its hits are over (the
// statistics are the reference's too). A window is the unit aligned to
// the process's clock, the clock the service decides reference rules
// with, so an entry is never used past its window, and the hits kept for
// a past window are dropped with it.
//
// It is exact for one process, as long as the count only grows (a state
// key deleted behind the service's back, or a write lost in a failover,
// makes the server's count smaller until the window ends). With several
// instances on one server, another instance reads a count short of the
// hits this one keeps, which changes an answer only under a higher limit
// than the one the cache answered for.
//
// As the reference's local cache (LOCAL_CACHE_SIZE_IN_BYTES, newLocalCache)
// it is not exact but the reference's: a key the server reported over its
// limit is over for the rest of its window under any limit, and the hits it
// answers are dropped, never sent, as the reference drops them.
type denyCache struct {
	mu      sync.Mutex
	entries *lru.LRU[denyEntry] // by state key
	// reference: the reference's local cache (any limit, hits dropped).
	reference bool
}

// denyEntry is what the cache knows of one state key.
type denyEntry struct {
	window int64  // the window's index: the process's Unix time / the unit
	count  uint64 // a count the window has reached
	kept   uint64 // hits answered here and not yet sent
}

// newDenyCache returns a cache of at most max state keys.
func newDenyCache(max int) *denyCache {
	return &denyCache{entries: lru.New[denyEntry](max)}
}

// newLocalCache returns the reference's local cache of at most max state
// keys: a key is answered over the limit, under any limit, from the answer
// over its limit until its window ends, and the hits it answers are not
// kept, so the server never counts them.
func newLocalCache(max int) *denyCache {
	return &denyCache{entries: lru.New[denyEntry](max), reference: true}
}

// answer reports whether the count of key in window is known to be above
// limit, and that count before n more hits, which it keeps.
func (c *denyCache) answer(key string, window int64, limit, n uint64) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.entry(key, window)
	if d == nil {
		return 0, false
	}
	if c.reference {
		return d.count, true
	}
	if d.count <= limit {
		return 0, false
	}
	before := d.count
	d.count += n
	d.kept += n
	return before, true
}

// take returns the hits kept for key in window, to be sent with a request.
func (c *denyCache) take(key string, window int64) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.entry(key, window)
	if d == nil {
		return 0
	}
	kept := d.kept
	d.kept = 0
	return kept
}

// giveBack keeps again hits that take returned and that did not reach the
// server.
func (c *denyCache) giveBack(key string, window int64, kept uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.entry(key, window); d != nil {
		d.kept += kept
	}
}

// entry returns the entry of key in window, dropping one of an earlier
// window; the lock is held. The pointer is valid until the next put.
func (c *denyCache) entry(key string, window int64) *denyEntry {
	d, ok := c.entries.Get(key)
	if !ok {
		return nil
	}
	if d.window != window {
		if d.window < window {
			c.entries.Remove(key)
		}
		return nil
	}
	return d
}

// put records that the server reported count for key in window (after the
// hits it was sent).
func (c *denyCache) put(key string, window int64, count uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.entries.Get(key); ok {
		switch {
		case window > d.window:
			d.window, d.count, d.kept = window, count, 0
		case window == d.window:
			// Both are counts the window reached: the server's plus what
			// is kept here since, and what the cache counted.
			d.count = max(d.count, count+d.kept)
		}
		return
	}
	c.entries.Put(key, denyEntry{window: window, count: count})
}
