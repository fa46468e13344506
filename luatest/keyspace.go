package luatest

import (
	"sort"
)

type kind uint8

const (
	kindString kind = iota + 1
	kindHash
	kindZset
)

func (k kind) String() string {
	switch k {
	case kindString:
		return "string"
	case kindHash:
		return "hash"
	case kindZset:
		return "zset"
	}
	return "none"
}

// entry is one key of the keyspace.
type entry struct {
	kind     kind
	str      string
	hash     map[string]string
	order    []string // hash fields in insertion order, like a listpack
	zset     *zset
	expireAt int64 // unix milliseconds; 0 means no TTL
}

// ZMember is one member of a sorted set, as returned by Engine.Dump.
type ZMember struct {
	Member string
	Score  float64
}

// zset is a sorted set: a member→score map plus a slice kept sorted by
// (score, member).
type zset struct {
	scores map[string]float64
	sorted []ZMember
}

func newZset() *zset { return &zset{scores: map[string]float64{}} }

func zless(a ZMember, score float64, member string) bool {
	if a.Score != score {
		return a.Score < score
	}
	return a.Member < member
}

func (z *zset) find(score float64, member string) int {
	return sort.Search(len(z.sorted), func(i int) bool { return !zless(z.sorted[i], score, member) })
}

// set adds or updates member.
func (z *zset) set(member string, score float64) {
	if old, ok := z.scores[member]; ok {
		if old == score {
			return
		}
		z.removeSorted(member, old)
	}
	z.scores[member] = score
	i := z.find(score, member)
	z.sorted = append(z.sorted, ZMember{})
	copy(z.sorted[i+1:], z.sorted[i:])
	z.sorted[i] = ZMember{Member: member, Score: score}
}

func (z *zset) removeSorted(member string, score float64) {
	i := z.find(score, member)
	if i < len(z.sorted) && z.sorted[i].Member == member {
		z.sorted = append(z.sorted[:i], z.sorted[i+1:]...)
	}
}

// remove deletes member and reports whether it was present.
func (z *zset) remove(member string) bool {
	old, ok := z.scores[member]
	if !ok {
		return false
	}
	delete(z.scores, member)
	z.removeSorted(member, old)
	return true
}

// removeWhere deletes every member for which drop is true, in one pass, and
// returns how many it deleted.
func (z *zset) removeWhere(drop func(i int, m ZMember) bool) int {
	kept := z.sorted[:0]
	removed := 0
	for i, m := range z.sorted {
		if drop(i, m) {
			delete(z.scores, m.Member)
			removed++
			continue
		}
		kept = append(kept, m)
	}
	clear(z.sorted[len(kept):])
	z.sorted = kept
	return removed
}

func (z *zset) len() int { return len(z.sorted) }

// keyspace is the in-memory database.
type keyspace struct {
	m map[string]*entry
}

// lookup returns the live entry for key, deleting it first when it has
// expired at nowMs.
func (ks *keyspace) lookup(key string, nowMs int64) *entry {
	e, ok := ks.m[key]
	if !ok {
		return nil
	}
	if e.expireAt != 0 && e.expireAt < nowMs { // Redis: expired when now > when
		delete(ks.m, key)
		return nil
	}
	return e
}
