package fallback

import (
	"hash/maphash"
	"sync"

	"github.com/ratelua/ratelua/internal/lru"
	"github.com/ratelua/ratelua/internal/model"
)

// The fallback's state of the event keys it decides (Options.Fallback):
// a model per key, the keys spread over shards with a lock each, so that
// keys of different shards are decided at once; in each shard at most its
// part of FallbackKeys models (the least recently used let go into a
// sketch that never under-counts them), and the events recorded that the
// server has not heard of yet.

const (
	// maxScriptInt bounds the events recorded per key: the scripts'
	// largest count, 2^52.
	maxScriptInt = 1 << 52
	// maxFallbackShards bounds the shards; a shard holds at least
	// fallbackShardKeys keys, so that a small bound stays one LRU.
	maxFallbackShards = 64
	fallbackShardKeys = 128
	// sketchRows is how many cells of a sketch each key has.
	sketchRows = 4
)

// keyShard holds the state of the event keys whose hash falls in it.
type keyShard struct {
	mu     sync.Mutex
	models *lru.LRU[model.Model]
	// letGo holds the usage of the keys the bound let go.
	letGo sketch
	// recorded counts, per key, the events recorded since the server was
	// last told (at most maxRecorded keys, the first ones kept).
	recorded    map[string]int64
	maxRecorded int
}

// usager is a model that reads its state as a Usage (every fallback model
// is one).
type usager interface {
	Usage() (model.Usage, bool)
}

// newShards spreads keys over shards whose bounds add up to keys.
func newShards(keys int) []keyShard {
	n := min(max(keys/fallbackShardKeys, 1), maxFallbackShards)
	shards := make([]keyShard, n)
	for i := range shards {
		s := &shards[i]
		bound := keys / n
		if i < keys%n {
			bound++
		}
		s.models = lru.New[model.Model](bound)
		s.letGo = sketch{seed: maphash.MakeSeed(), width: uint64(max(bound, 16))}
		s.recorded, s.maxRecorded = map[string]int64{}, bound
		s.models.Evicted = func(key string, m model.Model) {
			if u, ok := m.(usager); ok {
				if usage, ok := u.Usage(); ok {
					s.letGo.add(key, usage)
				}
			}
		}
	}
	return shards
}

// shard is the shard of eventKey.
func (f *Fallback) shard(eventKey string) *keyShard {
	return &f.shards[maphash.String(f.seed, eventKey)%uint64(len(f.shards))]
}

// Decide applies one call to the model of eventKey and returns its reply
// as the script's five integers. A key without a model starts from what
// the sketch remembers of it, if anything.
func (f *Fallback) Decide(eventKey string, c model.Call) [5]int64 {
	s := f.shard(eventKey)
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.models.Get(eventKey)
	if !ok {
		fresh := f.newModel()
		if u, ok := s.letGo.read(eventKey, c.Now); ok {
			fresh.Do(u.Seed(c.Unit))
		}
		m = s.models.Put(eventKey, fresh)
	}
	if !reservable(*m) {
		// A reserve is AllowN(estimate) in mode 0 for a model that
		// holds no reservations (Settle charges the overrun).
		c.Op, c.ID, c.Lifetime = "", 0, 0
	}
	r := (*m).Do(c)
	if c, ok := (*m).(interface{ Compact() }); ok {
		c.Compact()
	}
	if c.Count > 0 && (r.Allowed == 1 || c.Mode == 1) {
		s.record(eventKey, c.Count)
	}
	return [5]int64{r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter, r.LimitIndex}
}

// reservable reports a model that holds reservations (model.OpReserve,
// model.OpSettle): token_bucket's. The others (zset_log's bounded
// stand-in LogBuckets, and any model without them) take a reserve as
// AllowN(estimate), and a settle only charges the overrun.
func reservable(m model.Model) bool {
	r, ok := m.(interface{ Reservable() bool })
	return ok && r.Reservable()
}

// record moves the events recorded for eventKey by n (s.mu held): at most
// 2^52, never below 0; a key not yet recorded while maxRecorded keys are
// is not.
func (s *keyShard) record(eventKey string, n int64) {
	if had, ok := s.recorded[eventKey]; ok || len(s.recorded) < s.maxRecorded {
		s.recorded[eventKey] = min(max(had+n, 0), maxScriptInt)
	}
}

// Settle settles (model.OpSettle in c, c.Count the actual cost) the
// reservation c.ID of eventKey that the model holds, whose estimate was
// estimate, and returns the reply as the script's five integers: a
// settle that finds nothing (its key let go, or the model's reply)
// applies nothing (limit_index 0, retry_after -1). The events recorded
// for the server move by the difference. A model that holds no
// reservations records the overrun (mode 1) and gives nothing back.
func (f *Fallback) Settle(eventKey string, c model.Call, estimate int64) [5]int64 {
	s := f.shard(eventKey)
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.models.Get(eventKey)
	if !ok {
		return [5]int64{0, 0, -1, 0, 0}
	}
	var r model.Reply
	moved := c.Count - estimate
	if reservable(*m) {
		r = (*m).Do(c)
		if r.LimitIndex == 0 {
			moved = 0
		}
	} else {
		moved = max(moved, 0)
		if moved > 0 {
			(*m).Do(model.Call{Count: moved, Now: c.Now, Mode: 1, Unit: c.Unit})
		}
		r = (*m).Do(model.Call{Count: 0, Now: c.Now, Unit: c.Unit})
	}
	if cm, ok := (*m).(interface{ Compact() }); ok {
		cm.Compact()
	}
	s.record(eventKey, moved)
	return [5]int64{r.Allowed, r.Remaining, r.RetryAfter, r.ResetAfter, r.LimitIndex}
}

// Forget drops the state of eventKey (it was reset): a key the sketch
// remembers keeps a fresh model, so that it starts afresh.
func (f *Fallback) Forget(eventKey string) {
	s := f.shard(eventKey)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.recorded, eventKey)
	if s.letGo.holds(eventKey) {
		s.models.Put(eventKey, f.newModel())
	} else {
		s.models.Remove(eventKey)
	}
}

// Recorded is what the fallback recorded for one event key.
type Recorded struct {
	Key string
	N   int64
}

// TakeRecorded returns the events recorded since the last call, per key,
// and forgets them.
func (f *Fallback) TakeRecorded() []Recorded {
	var out []Recorded
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		if len(s.recorded) > 0 {
			for k, n := range s.recorded {
				out = append(out, Recorded{k, n})
			}
			s.recorded = map[string]int64{}
		}
		s.mu.Unlock()
	}
	return out
}

// Len is how many event keys have a model.
func (f *Fallback) Len() int {
	n := 0
	for i := range f.shards {
		s := &f.shards[i]
		s.mu.Lock()
		n += s.models.Len()
		s.mu.Unlock()
	}
	return n
}

// sketch remembers, in a fixed size, the usage of event keys a shard let
// go, never less than any of them had: each key has a cell in each of
// sketchRows rows; a cell keeps the largest usage of its keys (the latest
// At, the most Events, the latest Until), or the newest one once the one
// it held is over; a key reads the least of its cells. So a key that comes
// back starts at least as full as it was let go, and a key that shares
// every cell with keys let go starts from the least of theirs, until it
// is over.
type sketch struct {
	seed  maphash.Seed
	width uint64
	cells []model.Usage // sketchRows rows of width, made at the first key let go
}

// cellsOf returns the cells of key, one per row.
func (s *sketch) cellsOf(key string) [sketchRows]uint64 {
	h := maphash.String(s.seed, key)
	h1, h2 := h&0xffffffff, h>>32|1
	var cells [sketchRows]uint64
	for r := range cells {
		cells[r] = uint64(r)*s.width + (h1+uint64(r)*h2)%s.width
	}
	return cells
}

// add remembers that key was let go with usage u.
func (s *sketch) add(key string, u model.Usage) {
	if s.cells == nil {
		s.cells = make([]model.Usage, sketchRows*s.width)
	}
	for _, i := range s.cellsOf(key) {
		c := &s.cells[i]
		if c.Events == 0 || c.Until <= u.At {
			*c = u
			continue
		}
		c.At, c.Events, c.Until = max(c.At, u.At), max(c.Events, u.Events), max(c.Until, u.Until)
	}
}

// read returns the usage key starts from at now: the least of its cells,
// if none is empty or over.
func (s *sketch) read(key string, now int64) (model.Usage, bool) {
	if s.cells == nil {
		return model.Usage{}, false
	}
	var u model.Usage
	for r, i := range s.cellsOf(key) {
		c := s.cells[i]
		if c.Events == 0 || c.Until <= now {
			return model.Usage{}, false
		}
		if r == 0 {
			u = c
			continue
		}
		u.At, u.Events, u.Until = min(u.At, c.At), min(u.Events, c.Events), min(u.Until, c.Until)
	}
	return u, true
}

// holds reports whether key reads a usage at any time.
func (s *sketch) holds(key string) bool {
	_, ok := s.read(key, -1<<63)
	return ok
}
