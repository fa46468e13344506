package ratelua

import (
	"strings"
	"sync"
	"time"

	"github.com/ratelua/ratelua/internal/lru"
)

// denyCache remembers event keys the server denied with a RetryAfter, so
// that the same request is answered in the process until then
// (Options.DenyCache). It is safe for concurrent use.
//
// A denial may only be answered while the key's state on the server is
// the one that denied it. Whatever changes that state through this
// Limiter (an admission, a call without an answer, a Reset or ResetMany
// before it is sent and once it is answered, the fallback's events
// recorded after an outage) drops the key's denial, and moves the
// generation of the key's calls in flight: a call is registered when it
// is sent, and its denial is stored only if its key's generation did not
// move meanwhile. So a denial that was in flight while the state changed
// is never answered locally.
type denyCache struct {
	mu      sync.Mutex
	keys    *lru.LRU[denial]
	flights map[string]flight // the keys with calls in flight
}

// denial is the server's "no" to asked events of one event key.
type denial struct {
	asked     int64     // the events asked, 1 for a Peek
	until     time.Time // when the server may admit again
	resetAt   time.Time // when the state is fresh again
	remaining int64
	limit     int
}

// flight counts the calls of one key in flight and the changes of its
// state since the first of them.
type flight struct {
	calls int
	gen   uint64
}

func newDenyCache(keys int) *denyCache {
	return &denyCache{keys: lru.New[denial](keys), flights: map[string]flight{}}
}

// answer is the local answer for asked events of key at now, if the server
// denied them and now is before the time it gave. Otherwise the call is
// registered in flight, at the generation it returns, and must be ended
// with settle.
func (c *denyCache) answer(key string, asked int64, now time.Time, u unit) (r Result, gen uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.keys.Get(key); ok {
		if !now.Before(d.until) {
			c.keys.Remove(key)
		} else if d.asked == asked {
			return Result{
				Remaining:  d.remaining,
				RetryAfter: roundUp(d.until.Sub(now), u),
				ResetAfter: roundUp(d.resetAt.Sub(now), u),
				Limit:      d.limit,
			}, 0, true
		}
	}
	f, ok := c.flights[key]
	if !ok {
		// The caller's key may live in a buffer it reuses.
		key = strings.Clone(key)
	}
	f.calls++
	c.flights[key] = f
	return Result{}, f.gen, false
}

// settle ends a call of key registered by answer at gen: recorded says
// that it recorded events (or may have); denied, if not nil, is the
// server's denial, with the time from which it may admit again, stored if
// the key's state did not change since the call was sent.
func (c *denyCache) settle(key string, gen uint64, recorded bool, denied *denial) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flights[key]
	if recorded {
		c.changedLocked(key)
		f.gen++
	}
	if denied != nil && f.gen == gen {
		c.keys.Put(key, *denied)
	}
	if f.calls--; f.calls <= 0 {
		delete(c.flights, key)
	} else {
		c.flights[key] = f
	}
}

// changed drops key's denial and moves the generation of its calls in
// flight: its state on the server changed (a reset, recorded events).
func (c *denyCache) changed(key string) {
	c.mu.Lock()
	c.changedLocked(key)
	c.mu.Unlock()
}

func (c *denyCache) changedLocked(key string) {
	c.keys.Remove(key)
	if f, ok := c.flights[key]; ok {
		f.gen++
		c.flights[key] = f
	}
}

// denialOf is the stored form of the server's denial r of asked events,
// decided at base; the server may admit again from base + r.RetryAfter -
// slack. It is nil when that time is not after base.
func denialOf(asked int64, base time.Time, slack time.Duration, r Result) *denial {
	until := base.Add(r.RetryAfter - slack)
	if !base.Before(until) {
		return nil
	}
	return &denial{asked: asked, until: until, resetAt: base.Add(r.ResetAfter - slack), remaining: r.Remaining, limit: r.Limit}
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
