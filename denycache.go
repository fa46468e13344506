package ratelua

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// denyCache remembers event keys the server denied with a RetryAfter, so
// that the same request is answered in the process until then
// (Options.DenyCache). It is safe for concurrent use.
//
// A denial may only be answered while the key's state on the server is
// the one that denied it, so every event key has a generation, bumped by
// whatever changes that state through this Limiter: a Reset or ResetMany
// (before it is sent and once it is answered), an admission, the
// fallback's events recorded after an outage. A call reads the generation
// before it is sent; its denial is stored only if the generation is still
// the same when the answer arrives, and a stored denial is answered only
// while it is. So a denial that was in flight while the state changed is
// never answered locally. Generations live in a fixed array of stripes
// indexed by a hash of the key: two keys that share a stripe drop each
// other's denials (a round trip more), never keep one.
type denyCache struct {
	seed maphash.Seed
	gens []atomic.Uint64 // a power of two of stripes
	mu   sync.Mutex
	keys *lru[denial]
}

// denial is the server's "no" to asked events of one event key.
type denial struct {
	gen       uint64    // the key's generation when the call was sent
	asked     int64     // the events asked, 1 for a Peek
	until     time.Time // when the server may admit again
	resetAt   time.Time // when the state is fresh again
	remaining int64
	limit     int
}

// newDenyCache holds at most keys event keys, with four stripes of
// generations per key (at least 64, at most 65,536).
func newDenyCache(keys int) *denyCache {
	stripes := 64
	for stripes < 4*keys && stripes < 1<<16 {
		stripes *= 2
	}
	return &denyCache{seed: maphash.MakeSeed(), gens: make([]atomic.Uint64, stripes), keys: newLRU[denial](keys)}
}

// generation is the stripe of key's generation.
func (c *denyCache) generation(key string) *atomic.Uint64 {
	return &c.gens[maphash.String(c.seed, key)&uint64(len(c.gens)-1)]
}

// answer is the local answer for asked events of key at now, if the server
// denied them, its state did not change since, and now is before the time
// it gave. Otherwise it returns the key's generation, which the call that
// asks the server hands to put.
func (c *denyCache) answer(key string, asked int64, now time.Time, u unit) (r Result, gen uint64, ok bool) {
	gen = c.generation(key).Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.keys.get(key)
	if !ok {
		return Result{}, gen, false
	}
	if d.gen != gen || !now.Before(d.until) {
		c.keys.remove(key)
		return Result{}, gen, false
	}
	if d.asked != asked {
		return Result{}, gen, false
	}
	return Result{
		Remaining:  d.remaining,
		RetryAfter: roundUp(d.until.Sub(now), u),
		ResetAfter: roundUp(d.resetAt.Sub(now), u),
		Limit:      d.limit,
	}, gen, true
}

// put remembers the server's denial r of asked events of key, decided at
// base by a call sent at generation gen; the server may admit again from
// base + r.RetryAfter - slack. A denial whose key changed generation
// since is dropped.
func (c *denyCache) put(key string, gen uint64, asked int64, base time.Time, slack time.Duration, r Result) {
	until := base.Add(r.RetryAfter - slack)
	if !base.Before(until) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A bump after this check leaves a denial whose gen is behind, which
	// answer drops.
	if c.generation(key).Load() != gen {
		return
	}
	c.keys.put(key, denial{gen: gen, asked: asked, until: until, resetAt: base.Add(r.ResetAfter - slack), remaining: r.Remaining, limit: r.Limit})
}

// changed bumps key's generation: its state on the server changed (an
// admission, a reset, recorded events), so no denial older than now is
// answered or stored.
func (c *denyCache) changed(key string) {
	c.generation(key).Add(1)
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
