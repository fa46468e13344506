// Package fallback is a limiter's in-process fallback (Options.Fallback):
// while the server cannot be reached, the algorithm's reference model
// decides each event key with every limit scaled to a share. It follows
// unavailability per hash slot and holds a bounded state per event key;
// it needs nothing of the limiter but a constructor of its model.
package fallback

import (
	"hash/maphash"
	"math"
	"math/big"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelua/ratelua/internal/keyslot"
	"github.com/ratelua/ratelua/internal/model"
)

// DefaultKeys is the bound of the event keys when New is given 0
// (Options.FallbackKeys 0).
const DefaultKeys = 10000

// Fallback is the in-process limiter a Limiter answers from while the
// server cannot be reached (Options.Fallback): the algorithm's reference
// model (internal/model; for zset_log its bounded stand-in LogBuckets)
// with every limit scaled to the share, per event key (state.go). It is safe for concurrent use.
//
// Unavailability is followed per hash slot, so that on a cluster the keys
// of a master that went away fall back while every other key is still
// decided by its server. An episode starts at the first unanswered call;
// every slot with an unanswered call since is down. Once the episode has
// lasted FallbackAfter, calls on down slots are answered from the
// fallback (one of them at a time, at most one per FallbackAfter, still
// asks the server: a probe). An answer on a down slot ends the episode:
// every slot asks its server again. An episode whose latest failure is
// FallbackAfter old while other calls were answered ends as well (a blip).
type Fallback struct {
	after    time.Duration
	newModel func() model.Model
	// troubled is set during an episode: only then must an answer lock.
	troubled atomic.Bool

	mu        sync.Mutex
	down      [keyslot.NumSlots / 64]uint64
	downCount int
	began     time.Time // the first unanswered call of the episode
	last      time.Time // the latest unanswered call
	answered  bool      // a call was answered since last
	active    bool      // answering down slots from the models
	entered   time.Time
	probing   bool
	nextProbe time.Time

	// The state of every event key (state.go).
	seed   maphash.Seed
	shards []keyShard
}

// New returns the fallback of a limiter that falls back after calls went
// unanswered for after, holding at most keys event keys (0: DefaultKeys),
// each decided by a model newModel returns.
func New(after time.Duration, keys int, newModel func() model.Model) *Fallback {
	if keys <= 0 {
		keys = DefaultKeys
	}
	return &Fallback{after: after, newModel: newModel, seed: maphash.MakeSeed(), shards: newShards(keys)}
}

func (f *Fallback) isDown(s int) bool { return f.down[s/64]&(1<<(s%64)) != 0 }

func (f *Fallback) markDown(s int) {
	if !f.isDown(s) {
		f.down[s/64] |= 1 << (s % 64)
		f.downCount++
	}
}

// end ends the episode. f.mu is held.
func (f *Fallback) end() {
	if f.downCount > 0 {
		f.down = [keyslot.NumSlots / 64]uint64{}
		f.downCount = 0
	}
	f.active, f.answered = false, false
	f.troubled.Store(false)
}

// stale ends an episode that is not in fallback and whose latest failure
// is FallbackAfter old while other calls were answered. f.mu is held.
func (f *Fallback) stale(now time.Time) {
	if !f.active && f.downCount > 0 && f.answered && now.Sub(f.last) >= f.after {
		f.end()
	}
}

// Route says how a call on slot s goes at now: answered from the fallback
// without asking (local), or asking the server as the fallback's probe
// (probe), or neither: asking as usual.
func (f *Fallback) Route(s int, now time.Time) (local, probe bool) {
	if !f.troubled.Load() {
		return false, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stale(now)
	if !f.active || !f.isDown(s) {
		return false, false
	}
	if !f.probing && !now.Before(f.nextProbe) {
		f.probing = true
		return false, true
	}
	return true, false
}

// Answer records that the server answered a call on slot s at now. It
// reports whether that ended the fallback, and how long it was in use.
func (f *Fallback) Answer(s int, probe bool, now time.Time) (left bool, used time.Duration) {
	if !probe && !f.troubled.Load() {
		return false, 0
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if probe {
		f.probing = false
	}
	f.answered = true
	if !f.isDown(s) {
		return false, 0
	}
	left, used = f.active, now.Sub(f.entered)
	f.end()
	return left, used
}

// Fail records that a call on slot s, started at start, got no answer at
// now. It reports whether the fallback decides the call, and whether the
// limiter just entered the fallback, with how long calls had gone
// unanswered.
func (f *Fallback) Fail(s int, probe bool, start, now time.Time) (use, entered bool, unanswered time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if probe {
		f.probing = false
		f.nextProbe = now.Add(f.after)
	}
	f.stale(now)
	if f.downCount == 0 && !f.active {
		f.began = start
	}
	f.markDown(s)
	f.last, f.answered = now, false
	f.troubled.Store(true)
	if !f.active && now.Sub(f.began) >= f.after {
		f.active, f.entered, entered = true, now, true
		f.nextProbe = now.Add(f.after)
		unanswered = now.Sub(f.began)
	}
	return f.active, entered, unanswered
}

// ScaleMax is a limit's maximum under share, rounded down: exactly, from
// the share as written (its shortest decimal), since the float product can
// fall just below a whole number (0.7 * 90 is 62.99999999999999).
func ScaleMax(max int64, share float64) int64 {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(share, 'g', -1, 64))
	if !ok {
		return int64(math.Floor(float64(max) * share))
	}
	r.Mul(r, new(big.Rat).SetInt64(max))
	return new(big.Int).Quo(r.Num(), r.Denom()).Int64()
}

// ScaleRate scales amount per interval by share, rounded down to a
// thousandth: amount * (share * 1000) per interval * 1000. The limits
// bound amount to 1e9 and interval to 2^52, so neither overflows.
func ScaleRate(amount, interval int64, share float64) (int64, int64) {
	return amount * int64(math.Floor(share*1000)), interval * 1000
}
