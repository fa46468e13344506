package lru

import (
	"slices"
	"testing"
)

// TestEach: Each sees every key held, most recently used first, without
// marking any used: the least recently used is still the one evicted.
func TestEach(t *testing.T) {
	c := New[int](3)
	var evicted []string
	c.Evicted = func(key string, _ int) { evicted = append(evicted, key) }
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("c", 3)
	c.Get("a")
	var keys []string
	sum := 0
	c.Each(func(key string, v int) {
		keys = append(keys, key)
		sum += v
	})
	if !slices.Equal(keys, []string{"a", "c", "b"}) || sum != 6 {
		t.Fatalf("Each saw %v (sum %d), want [a c b] (sum 6)", keys, sum)
	}
	c.Put("d", 4)
	if !slices.Equal(evicted, []string{"b"}) {
		t.Fatalf("evicted %v after Each, want [b]", evicted)
	}
}
