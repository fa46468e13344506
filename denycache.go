package ratelua

import (
	"sync"
	"time"
)

// denyCache remembers event keys the server denied with a RetryAfter, so
// that the same request is answered in the process until then
// (Options.DenyCache). It is safe for concurrent use.
type denyCache struct {
	mu   sync.Mutex
	keys *lru[denial]
}

// denial is the server's "no" to asked events of one event key.
type denial struct {
	asked     int64     // the events asked, 1 for a Peek
	until     time.Time // when the server may admit again
	resetAt   time.Time // when the state is fresh again
	remaining int64
	limit     int
}

func newDenyCache(keys int) *denyCache { return &denyCache{keys: newLRU[denial](keys)} }

// answer is the local answer for asked events of key at now, if the server
// denied them and now is before the time it gave.
func (c *denyCache) answer(key string, asked int64, now time.Time, u unit) (Result, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.keys.get(key)
	if !ok {
		return Result{}, false
	}
	if !now.Before(d.until) {
		c.keys.remove(key)
		return Result{}, false
	}
	if d.asked != asked {
		return Result{}, false
	}
	return Result{
		Remaining:  d.remaining,
		RetryAfter: roundUp(d.until.Sub(now), u),
		ResetAfter: roundUp(d.resetAt.Sub(now), u),
		Limit:      d.limit,
	}, true
}

// put remembers the server's denial r of asked events of key, decided at
// base; the server may admit again from base + r.RetryAfter - slack.
func (c *denyCache) put(key string, asked int64, base time.Time, slack time.Duration, r Result) {
	until := base.Add(r.RetryAfter - slack)
	if !base.Before(until) {
		return
	}
	c.mu.Lock()
	c.keys.put(key, denial{asked: asked, until: until, resetAt: base.Add(r.ResetAfter - slack), remaining: r.Remaining, limit: r.Limit})
	c.mu.Unlock()
}

// forget drops key (it was reset).
func (c *denyCache) forget(key string) {
	c.mu.Lock()
	c.keys.remove(key)
	c.mu.Unlock()
}

// roundUp rounds d up to a whole unit, never below 0.
func roundUp(d time.Duration, u unit) time.Duration {
	if d <= 0 {
		return 0
	}
	if r := d % u.size; r != 0 {
		d += u.size - r
	}
	return d
}
