package ratelua

import "strings"

// lru maps event keys to values, holding at most max of them and evicting
// the least recently used. It is not safe for concurrent use: its owner
// locks.
type lru[V any] struct {
	max   int
	items map[string]*lruEntry[V]
	ring  lruEntry[V] // ring.next is the most recently used, ring.prev the least
	// evicted, if set, is given each key and value put evicts.
	evicted func(key string, v V)
}

type lruEntry[V any] struct {
	key        string
	value      V
	prev, next *lruEntry[V]
}

func newLRU[V any](max int) *lru[V] {
	c := &lru[V]{max: max, items: map[string]*lruEntry[V]{}}
	c.ring.prev, c.ring.next = &c.ring, &c.ring
	return c
}

// get returns the value of key, marking it used; the pointer is valid
// until the next put or remove.
func (c *lru[V]) get(key string) (*V, bool) {
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.unlink(e)
	c.pushFront(e)
	return &e.value, true
}

// put sets the value of key, evicting the least recently used key when
// full.
func (c *lru[V]) put(key string, v V) *V {
	if e, ok := c.items[key]; ok {
		e.value = v
		c.unlink(e)
		c.pushFront(e)
		return &e.value
	}
	if len(c.items) >= c.max {
		oldest := c.ring.prev
		c.unlink(oldest)
		delete(c.items, oldest.key)
		if c.evicted != nil {
			c.evicted(oldest.key, oldest.value)
		}
	}
	// The caller's key may live in a buffer it reuses.
	e := &lruEntry[V]{key: strings.Clone(key), value: v}
	c.items[e.key] = e
	c.pushFront(e)
	return &e.value
}

// remove forgets key.
func (c *lru[V]) remove(key string) {
	if e, ok := c.items[key]; ok {
		c.unlink(e)
		delete(c.items, key)
	}
}

func (c *lru[V]) len() int { return len(c.items) }

func (c *lru[V]) unlink(e *lruEntry[V]) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (c *lru[V]) pushFront(e *lruEntry[V]) {
	e.prev, e.next = &c.ring, c.ring.next
	c.ring.next.prev = e
	c.ring.next = e
}
