// Package denycache is a limiter's local deny cache (Options.DenyCache):
// it remembers the event keys the server denied with a RetryAfter, so that
// the same request is answered in the process until then. It needs
// nothing of the limiter but the unit its scripts count time in.
package denycache

import (
	"strings"
	"sync"
	"time"

	"github.com/ratelua/ratelua/internal/lru"
)

// Cache remembers the server's denials of event keys, at most a bound of
// them (the least recently used let go). It is safe for concurrent use.
//
// A denial may only be answered while the key's state on the server is
// the one that denied it. Whatever changes that state through the
// limiter (an admission, a call without an answer, a Reset or ResetMany
// before it is sent and once it is answered, the fallback's events
// recorded after an outage) drops the key's denial, and moves the
// generation of the key's calls in flight: a call is registered when it
// is sent, and its denial is stored only if its key's generation did not
// move meanwhile. So a denial that was in flight while the state changed
// is never answered locally.
type Cache struct {
	mu      sync.Mutex
	keys    *lru.LRU[Denial]
	flights map[string]flight // the keys with calls in flight
}

// Denial is the server's "no" to asked events of one event key.
type Denial struct {
	Asked     int64     // the events asked, 1 for a Peek
	Until     time.Time // when the server may admit again
	ResetAt   time.Time // when the state is fresh again
	Remaining int64
	Limit     int
}

// Answer is a denial answered locally, at the time it was asked.
type Answer struct {
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
	Limit      int
}

// flight counts the calls of one key in flight and the changes of its
// state since the first of them.
type flight struct {
	calls int
	gen   uint64
}

// New returns a cache of at most keys event keys (keys >= 1).
func New(keys int) *Cache {
	return &Cache{keys: lru.New[Denial](keys), flights: map[string]flight{}}
}

// Answer is the local answer for asked events of key at now, if the
// server denied them and now is before the time it gave; the waits are
// rounded up to unit, the scripts' unit of time. Otherwise the call is
// registered in flight, at the generation it returns, and must be ended
// with Settle.
func (c *Cache) Answer(key string, asked int64, now time.Time, unit time.Duration) (a Answer, gen uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.keys.Get(key); ok {
		if !now.Before(d.Until) {
			c.keys.Remove(key)
		} else if d.Asked == asked {
			return Answer{
				Remaining:  d.Remaining,
				RetryAfter: RoundUp(d.Until.Sub(now), unit),
				ResetAfter: RoundUp(d.ResetAt.Sub(now), unit),
				Limit:      d.Limit,
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
	return Answer{}, f.gen, false
}

// Settle ends a call of key registered by Answer at gen: recorded says
// that it recorded events (or may have); denied, if ok, is the server's
// denial, with the time from which it may admit again, stored if the
// key's state did not change since the call was sent.
func (c *Cache) Settle(key string, gen uint64, recorded bool, denied Denial, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.flights[key]
	if recorded {
		c.changedLocked(key)
		f.gen++
	}
	if ok && f.gen == gen {
		c.keys.Put(key, denied)
	}
	if f.calls--; f.calls <= 0 {
		delete(c.flights, key)
	} else {
		c.flights[key] = f
	}
}

// Changed drops key's denial and moves the generation of its calls in
// flight: its state on the server changed (a reset, recorded events).
func (c *Cache) Changed(key string) {
	c.mu.Lock()
	c.changedLocked(key)
	c.mu.Unlock()
}

func (c *Cache) changedLocked(key string) {
	c.keys.Remove(key)
	if f, ok := c.flights[key]; ok {
		f.gen++
		c.flights[key] = f
	}
}

// Len is how many event keys hold a denial.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.keys.Len()
}

// Flights is how many event keys have calls in flight.
func (c *Cache) Flights() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.flights)
}

// DenialOf is the stored form of the server's denial of asked events,
// decided at base, with its retryAfter, resetAfter, remaining and limit;
// the server may admit again from base + retryAfter - slack. It is not ok
// when that time is not after base.
func DenialOf(asked int64, base time.Time, slack, retryAfter, resetAfter time.Duration, remaining int64, limit int) (Denial, bool) {
	until := base.Add(retryAfter - slack)
	if !base.Before(until) {
		return Denial{}, false
	}
	return Denial{Asked: asked, Until: until, ResetAt: base.Add(resetAfter - slack), Remaining: remaining, Limit: limit}, true
}

// RoundUp rounds d up to a whole unit, never below 0.
func RoundUp(d, unit time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	if r := d % unit; r != 0 {
		d += unit - r
	}
	return d
}
