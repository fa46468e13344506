// Package lru is a map of string keys bounded by evicting the least
// recently used: the limiters' deny cache and fallback, and ratelua-rls's
// deny cache of the reference rules, hold their keys in one.
package lru

import "strings"

// LRU maps keys to values, holding at most max of them and evicting the
// least recently used. It is not safe for concurrent use: its owner locks.
type LRU[V any] struct {
	max   int
	items map[string]*lruEntry[V]
	ring  lruEntry[V] // ring.next is the most recently used, ring.prev the least
	// Evicted, if set, is given each key and value Put evicts.
	Evicted func(key string, v V)
}

type lruEntry[V any] struct {
	key        string
	value      V
	prev, next *lruEntry[V]
}

// New returns an empty LRU of at most max keys; max must be at least 1.
func New[V any](max int) *LRU[V] {
	c := &LRU[V]{max: max, items: map[string]*lruEntry[V]{}}
	c.ring.prev, c.ring.next = &c.ring, &c.ring
	return c
}

// Get returns the value of key, marking it used; the pointer is valid
// until the next Put or Remove.
func (c *LRU[V]) Get(key string) (*V, bool) {
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.unlink(e)
	c.pushFront(e)
	return &e.value, true
}

// Put sets the value of key, evicting the least recently used key when
// full.
func (c *LRU[V]) Put(key string, v V) *V {
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
		if c.Evicted != nil {
			c.Evicted(oldest.key, oldest.value)
		}
	}
	// The caller's key may live in a buffer it reuses.
	e := &lruEntry[V]{key: strings.Clone(key), value: v}
	c.items[e.key] = e
	c.pushFront(e)
	return &e.value
}

// Remove forgets key.
func (c *LRU[V]) Remove(key string) {
	if e, ok := c.items[key]; ok {
		c.unlink(e)
		delete(c.items, key)
	}
}

// Len is how many keys it holds.
func (c *LRU[V]) Len() int { return len(c.items) }

func (c *LRU[V]) unlink(e *lruEntry[V]) {
	e.prev.next, e.next.prev = e.next, e.prev
}

func (c *LRU[V]) pushFront(e *lruEntry[V]) {
	e.prev, e.next = &c.ring, c.ring.next
	c.ring.next.prev = e
	c.ring.next = e
}

// Each calls f with every key and value, most recently used first,
// without marking them used. f must not change c.
func (c *LRU[V]) Each(f func(key string, v V)) {
	for e := c.ring.next; e != &c.ring; e = e.next {
		f(e.key, e.value)
	}
}
