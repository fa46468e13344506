package ratelua

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratelua/ratelua/internal/decide"
	"github.com/ratelua/ratelua/internal/denycache"
	"github.com/ratelua/ratelua/internal/hotkey"
	"github.com/ratelua/ratelua/internal/lru"
	"github.com/ratelua/ratelua/internal/wire"
)

// The defaults of HotKeys' fields left 0.
const (
	// DefaultHotRate is HotKeys.Rate when 0: 50 decisions per second.
	DefaultHotRate = 50
	// DefaultHotLifetime is HotKeys.Lifetime when 0.
	DefaultHotLifetime = 100 * time.Millisecond
	// DefaultHotMaxBatch is HotKeys.MaxBatch when 0: the scripts' cap of
	// reservations one key holds (MAX_RESERVATIONS, 1,000).
	DefaultHotMaxBatch = 1000
	// DefaultHotKeys is HotKeys.Keys when 0.
	DefaultHotKeys = 10_000
)

// hotWindowRatio is how much shorter than the shortest limit's window
// HotKeys.Lifetime must be, at least.
const hotWindowRatio = 10

// HotKeys turns on local leases of quota for hot keys (Options.HotKeys):
// a key whose decisions in this process reach Rate per second reserves a
// batch of units in one call (Limiter.Reserve's operation) and admits
// AllowN from it in the process, for at most Lifetime; what it did not
// use is given back. The package documentation says what it keeps and
// what a user gives up ("Hot keys"). A field left 0 takes its default.
type HotKeys struct {
	// Rate is the decisions per second of one key in this process from
	// which it leases (DefaultHotRate when 0); below it a key is cold and
	// each decision is one call, as without HotKeys.
	Rate float64
	// Lifetime is the longest a batch of units sits in this process
	// (DefaultHotLifetime when 0): a batch admits nothing after it, and
	// its unused units are then given back. It must be at most a tenth of
	// the shortest limit's window.
	Lifetime time.Duration
	// MaxBatch caps the units of one batch (DefaultHotMaxBatch when 0, at
	// most 2^52).
	MaxBatch int64
	// Keys bounds the event keys whose rate is tracked (DefaultHotKeys
	// when 0); the least recently used one is let go, its batch given
	// back.
	Keys int
}

// checkHotKeys checks h for a limiter of script with quotas, and returns
// it with its defaults filled in.
func checkHotKeys(h HotKeys, script Script, quotas []quota) (HotKeys, error) {
	switch {
	case script.Version < 7:
		return h, &LimitError{Index: -1, Field: "HotKeys", Reason: fmt.Sprintf("needs script version 7 or later, whose reserve and settle lease the batches: %s has none", script)}
	case !script.Reserves():
		return h, fmt.Errorf("ratelua: HotKeys: %s does not take reservations (its contract names no modes reserve and settle of ARGV[4]; Script.Reserves), which lease the batches: %w", script, ErrNotSupported)
	case h.Rate < 0 || math.IsNaN(h.Rate) || math.IsInf(h.Rate, 0):
		return h, &LimitError{Index: -1, Field: "HotKeys.Rate", Reason: fmt.Sprintf("must be 0 (the default, %d per second) or a finite number of decisions per second above 0, got %v", DefaultHotRate, h.Rate)}
	case h.Lifetime < 0:
		return h, &LimitError{Index: -1, Field: "HotKeys.Lifetime", Reason: fmt.Sprintf("must be at least 0, got %v", h.Lifetime)}
	case h.MaxBatch < 0 || h.MaxBatch > maxScriptInt:
		return h, &LimitError{Index: -1, Field: "HotKeys.MaxBatch", Reason: fmt.Sprintf("must be 0 (the default, %d) or in [1, 2^52], got %d", DefaultHotMaxBatch, h.MaxBatch)}
	case h.Keys < 0:
		return h, &LimitError{Index: -1, Field: "HotKeys.Keys", Reason: fmt.Sprintf("must be at least 0, got %d", h.Keys)}
	}
	if h.Rate == 0 {
		h.Rate = DefaultHotRate
	}
	if h.Lifetime == 0 {
		h.Lifetime = DefaultHotLifetime
	}
	if h.MaxBatch == 0 {
		h.MaxBatch = DefaultHotMaxBatch
	}
	if h.Keys == 0 {
		h.Keys = DefaultHotKeys
	}
	for i, q := range quotas {
		if h.Lifetime > q.window/hotWindowRatio {
			return h, &LimitError{Index: i, Field: "HotKeys.Lifetime", Reason: fmt.Sprintf("must be at most a tenth of every limit's window (a batch holds its units from every other process until it is settled, up to Lifetime after its reserve: a longer one would keep a large share of a short window's limit idle in one process): %v is more than %v / %d", h.Lifetime, q.window, hotWindowRatio)}
		}
	}
	return h, nil
}

// hotKeys is a limiter's local leases (Options.HotKeys).
type hotKeys struct {
	l       *Limiter
	cfg     HotKeys
	ceiling int64 // the smallest limit's maximum: no batch is larger
	resLife int64 // a batch's reservation lifetime, in the unit

	mu     sync.Mutex
	keys   *lru.LRU[*hotKey]
	closed bool
	busy   sync.WaitGroup // refills and background give-backs under way
}

// hotKey is one event key's rate and batch.
type hotKey struct {
	mu        sync.Mutex
	meter     hotkey.Meter
	remaining int64     // the last reply's Remaining; -1 before one
	coldUntil time.Time // after a failed refill: the ordinary path until then
	batch     *hotBatch
	refill    chan struct{} // closed when the refill under way ends; nil when none
	gone      atomic.Bool   // let go by the LRU, or the limiter closed: leases no more
	leased    atomic.Bool   // a batch was made once: letting the key go gives it back
	// A hot key's last denial by the server, held in the process until
	// heldUntil (Lifetime after it) for decisions of heldN events or more.
	held      Result
	heldAt    time.Time
	heldUntil time.Time
	heldN     int64
}

// hotBatch is a batch a key holds: its reservation and its accounting.
type hotBatch struct {
	res    *Reservation
	b      hotkey.Batch
	result Result // the reserve's reply
	timer  *time.Timer
}

// newHotKeys is l's leases under h (checked).
func newHotKeys(l *Limiter, h HotKeys) *hotKeys {
	ceiling := int64(maxScriptInt)
	for _, q := range l.quotas {
		ceiling = min(ceiling, q.max)
	}
	// The reservation outlives the batch by its lifetime again, at least
	// a second, so that the give-back reaches it; then its id expires.
	life := h.Lifetime + max(h.Lifetime, time.Second)
	n := int64(life / l.unit.Size)
	if life%l.unit.Size != 0 {
		n++
	}
	hk := &hotKeys{l: l, cfg: h, ceiling: ceiling, resLife: min(n, maxScriptInt)}
	hk.keys = lru.New[*hotKey](h.Keys)
	hk.keys.Evicted = func(_ string, k *hotKey) {
		// Under hk.mu, not closed: a key that never leased is dropped (no
		// goroutine per cold key let go); else its batch is given back in
		// the background. gone is stored before leased is read, and a
		// refill stores leased before it reads gone: one of them sees the
		// other.
		k.gone.Store(true)
		if !k.leased.Load() {
			return
		}
		hk.busy.Add(1)
		go func() {
			defer hk.busy.Done()
			k.mu.Lock()
			b := k.batch
			k.batch = nil
			k.mu.Unlock()
			hk.giveBack(context.Background(), b)
		}()
	}
	return hk
}

// now is the leases' time: the limiter's Clock, or the process's.
func (hk *hotKeys) now() time.Time {
	if hk.l.clock != nil {
		return hk.l.clock()
	}
	return time.Now()
}

// key returns eventKey's state, nil once closed.
func (hk *hotKeys) key(eventKey string) *hotKey {
	hk.mu.Lock()
	defer hk.mu.Unlock()
	if hk.closed {
		return nil
	}
	if k, ok := hk.keys.Get(eventKey); ok {
		return *k
	}
	k := &hotKey{remaining: -1}
	hk.keys.Put(eventKey, k)
	return k
}

// start registers a refill or a give-back under way; false once closed.
func (hk *hotKeys) start() bool {
	hk.mu.Lock()
	defer hk.mu.Unlock()
	if hk.closed {
		return false
	}
	hk.busy.Add(1)
	return true
}

// allowN decides n events of eventKey (n checked): from the key's batch
// when it is hot, else on the ordinary path.
func (hk *hotKeys) allowN(ctx context.Context, eventKey string, n int64) (Result, error) {
	l := hk.l
	if ctx.Err() != nil {
		return l.call(ctx, eventKey, n)
	}
	k := hk.key(eventKey)
	if k == nil {
		return l.call(ctx, eventKey, n)
	}
	var start time.Time
	if l.chain.Observe.Hook != nil {
		start = time.Now()
	}
	now := hk.now()
	k.mu.Lock()
	k.meter.Add(now, hk.cfg.Lifetime, n)
	for {
		if b := k.batch; b != nil {
			if b.b.Take(n, now) {
				r := b.result
				r.Remaining += b.b.Unused()
				k.mu.Unlock()
				return hk.local(ctx, n, r, start)
			}
		}
		if k.refill != nil {
			ch := k.refill
			k.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				return l.call(ctx, eventKey, n)
			}
			now = hk.now()
			k.mu.Lock()
			continue
		}
		break
	}
	if n >= k.heldN && now.Before(k.heldUntil) {
		// Denied by the server within the last Lifetime: denied here too.
		r := k.held
		// Its waits from now, rounded up to the limiter's unit as the
		// deny cache's are.
		r.RetryAfter = denycache.RoundUp(max(r.RetryAfter-now.Sub(k.heldAt), k.heldUntil.Sub(now)), hk.l.unit.Size)
		r.ResetAfter = max(denycache.RoundUp(r.ResetAfter-now.Sub(k.heldAt), hk.l.unit.Size), r.RetryAfter)
		k.mu.Unlock()
		if o := &hk.l.chain.Observe; o.Hook != nil {
			o.Hook(ctx, decide.Event{Kind: KindDenied, N: n, Result: wire.Result(r), Latency: time.Since(start), Local: true})
		}
		return r, nil
	}
	size := hotkey.Size(k.meter.Rate(now, hk.cfg.Lifetime), hk.cfg.Rate, hk.cfg.Lifetime, min(hk.cfg.MaxBatch, hk.ceiling), k.remaining)
	if k.gone.Load() || size <= n || now.Before(k.coldUntil) || !hk.start() {
		b := k.batch
		if b == nil || now.Before(b.b.Expires) || !hk.start() {
			k.mu.Unlock()
			return hk.ordinary(ctx, k, eventKey, n)
		}
		// Past its Lifetime, and no batch replaces it: given back before
		// the ordinary path decides (its units may be what it needs).
		k.batch = nil
		k.mu.Unlock()
		hk.giveBack(ctx, b)
		hk.busy.Done()
		return hk.ordinary(ctx, k, eventKey, n)
	}
	// This call refills; the others wait for it.
	old := k.batch
	k.batch = nil
	ch := make(chan struct{})
	k.refill = ch
	k.mu.Unlock()
	r, ok := hk.refillKey(ctx, k, eventKey, old, size, n, now)
	k.mu.Lock()
	k.refill = nil
	close(ch)
	k.mu.Unlock()
	hk.busy.Done()
	if ok {
		return hk.local(ctx, n, r, start)
	}
	return hk.ordinary(ctx, k, eventKey, n)
}

// ordinary decides n events of eventKey on the ordinary path, one call,
// and keeps the reply's Remaining for the key's next batch size.
func (hk *hotKeys) ordinary(ctx context.Context, k *hotKey, eventKey string, n int64) (Result, error) {
	r, err := hk.l.call(ctx, eventKey, n)
	if err == nil && r.Limit >= 0 {
		now := hk.now()
		k.mu.Lock()
		k.remaining = r.Remaining
		if !r.Allowed && !k.gone.Load() && k.meter.Rate(now, hk.cfg.Lifetime) >= hk.cfg.Rate {
			// A hot key denied: the process holds the denial for a
			// Lifetime, so that a spent limit costs this process one call
			// per Lifetime rather than one per decision.
			k.held, k.heldAt, k.heldUntil, k.heldN = r, now, now.Add(hk.cfg.Lifetime), n
		}
		k.mu.Unlock()
	}
	return r, err
}

// local is the answer of n events admitted from a batch, r, as Observe
// sees it.
func (hk *hotKeys) local(ctx context.Context, n int64, r Result, start time.Time) (Result, error) {
	if o := &hk.l.chain.Observe; o.Hook != nil {
		o.Hook(ctx, decide.Event{Kind: KindBatch, N: n, Result: wire.Result(r), Latency: time.Since(start), Local: true})
	}
	return r, nil
}

// refillKey gives the key's old batch back and reserves a new one of size
// units, taking n of them at now. It reports ok with the answer when the
// new batch admitted the n events; else the ordinary path decides them.
func (hk *hotKeys) refillKey(ctx context.Context, k *hotKey, eventKey string, old *hotBatch, size, n int64, now time.Time) (Result, bool) {
	hk.giveBack(ctx, old)
	res, err := hk.l.reserve(ctx, eventKey, size, hk.resLife)
	if ctx.Err() != nil && !res.Held() {
		return Result{}, false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	rr := res.Result()
	switch {
	case err == nil && rr.Allowed && !rr.DryRunDenied && res.hold == holdServer:
		if k.leased.Store(true); k.gone.Load() {
			// Let go (or closed) meanwhile: give it back whole.
			break
		}
		b := &hotBatch{res: res, result: rr, b: hotkey.Batch{K: size, Expires: now.Add(hk.cfg.Lifetime)}}
		b.b.Take(n, now)
		k.batch, k.remaining = b, rr.Remaining
		if hk.l.clock == nil {
			b.timer = time.AfterFunc(hk.cfg.Lifetime, func() { hk.expire(k, b) })
		}
		r := rr
		r.Remaining += b.b.Unused()
		return r, true
	case err == nil && rr.Limit >= 0 && res.kind != decide.KindFallback:
		// Denied (by the server or the deny cache), or admitted only by
		// DryRun: the reply's Remaining sizes the next batch; this
		// decision goes the ordinary path, exactly.
		k.remaining = rr.Remaining
	default:
		// No answer, or the fallback's: the ordinary path for a Lifetime.
		k.coldUntil = now.Add(hk.cfg.Lifetime)
	}
	if res.Held() {
		// Admitted without a batch to be made of it (FailOpen, the
		// fallback, or let go meanwhile): given back whole.
		hk.busy.Add(1)
		go func() {
			defer hk.busy.Done()
			_, _ = res.Cancel(context.WithoutCancel(ctx))
		}()
	}
	return Result{}, false
}

// giveBack stops batch b's timer (nil: nothing) and settles it with the
// units it admitted: the unused ones go back to the server, and the
// script stops holding the batch's units (v7 holds a reservation's units
// until it is settled: a fully used batch left to expire would keep its
// units from the limit until its id expired).
func (hk *hotKeys) giveBack(ctx context.Context, b *hotBatch) {
	if b == nil {
		return
	}
	if b.timer != nil {
		b.timer.Stop()
	}
	_, _ = b.res.Settle(context.WithoutCancel(ctx), b.b.Used)
}

// expire gives back batch b of k at its lifetime's end, if it is still
// k's and no refill took it.
func (hk *hotKeys) expire(k *hotKey, b *hotBatch) {
	if !hk.start() {
		return // Close gives it back
	}
	defer hk.busy.Done()
	k.mu.Lock()
	if k.batch != b {
		k.mu.Unlock()
		return
	}
	k.batch = nil
	k.mu.Unlock()
	hk.giveBack(context.Background(), b)
}

// forget drops eventKey's batch without giving it back: a reset dropped
// its reservation on the server.
func (hk *hotKeys) forget(eventKey string) {
	hk.mu.Lock()
	kp, ok := hk.keys.Get(eventKey)
	hk.mu.Unlock()
	if !ok {
		return
	}
	k := *kp
	k.mu.Lock()
	if k.batch != nil && k.batch.timer != nil {
		k.batch.timer.Stop()
	}
	k.batch, k.remaining = nil, -1
	k.heldUntil = time.Time{} // the held denial goes with the state
	k.mu.Unlock()
}

// close stops leasing and gives back every batch, settled with what it
// admitted, once the refills under way have ended.
func (hk *hotKeys) close(ctx context.Context) error {
	hk.mu.Lock()
	hk.closed = true
	hk.mu.Unlock()
	waited := make(chan struct{})
	go func() {
		hk.busy.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-ctx.Done():
		return fmt.Errorf("ratelua: Close: the reserves and settles under way had not ended: %w", ctx.Err())
	}
	hk.mu.Lock()
	var keys []*hotKey
	hk.keys.Each(func(_ string, k *hotKey) { keys = append(keys, k) })
	hk.mu.Unlock()
	var errs []error
	for _, k := range keys {
		k.mu.Lock()
		k.gone.Store(true)
		b := k.batch
		k.batch = nil
		k.mu.Unlock()
		if b == nil {
			continue
		}
		if b.timer != nil {
			b.timer.Stop()
		}
		if _, err := b.res.Settle(ctx, b.b.Used); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close gives back every unused unit of the hot keys' batches
// (Options.HotKeys): each open batch is settled with the units it
// admitted, after the reserves under way have ended; then the limiter
// leases no more, and every decision goes the ordinary path, one call
// each. It returns the settles' errors (a settle whose reservation had
// expired left its units spent). Without HotKeys it does nothing. Close
// is how a process gives its units back: call it before the process
// ends (a process that dies without it loses its batches' units, counted
// as spent, never admitted twice). Once ctx is done it returns its error;
// what it had not given back stays spent.
func (l *Limiter) Close(ctx context.Context) error {
	if l.hot == nil {
		return nil
	}
	return l.hot.close(ctx)
}
