package ratelua

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/ratelua/ratelua/internal/wire"
)

// Slots bounds how many holders of an event key run at once, across every
// process that shares the limiter's keys.
type Slots struct {
	// Max is the most slots held at once per event key, 1 to 10^6.
	Max int64
	// Lease is how long an acquired slot stays held without a renewal:
	// the time after which the slots of a holder that died come back. A
	// whole number of microseconds.
	Lease time.Duration
	// Renew, above 0, renews every lease every Renew, from a goroutine
	// that runs until the lease is released or lost; it must be less than
	// Lease (a third of it leaves two retries). 0 leaves the renewals to
	// the holder (Lease.Renew).
	Renew time.Duration
}

// Semaphore bounds how many holders of each event key run at once
// (script concurrency): Acquire takes a slot under a lease, Lease.Release
// gives it back, and a lease not renewed within Slots.Lease expires, so a
// holder that died frees its slots. It is safe for concurrent use.
//
// Options work as for a Limiter, except CountDenied, DenyCache and
// Fallback, which it refuses: a slot released early makes a cached denial
// wrong, and a share of a count of holders kept per process is no bound.
// Under FailOpen an acquire the server could not answer is admitted with a
// local lease (Lease.Local), unless the caller's context ended while it
// ran; under DryRun a denied acquire is admitted with
// one. The state key does not depend on Max or Lease, so processes that
// change either keep counting the same holders.
type Semaphore struct {
	// l is the semaphore's core: the same options, keys, clock and chain
	// of stages as a Limiter's, so that Peek and Reset go the Limiter's
	// way and an acquire ends through the same DryRun and Observe.
	l     core
	slots Slots
	// deadlineSlack is taken off a lease's local deadline: the script reads
	// now rounded down to its unit.
	deadlineSlack time.Duration
	// releases counts the background releases of acquires whose outcome
	// is unknown (see AcquireN) that have not ended.
	releases sync.WaitGroup
}

// unknownReleaseTimeout bounds the background release of an acquire whose
// outcome is unknown (at most the lease time, after which the slots are
// free anyway).
const unknownReleaseTimeout = 2 * time.Second

// NewConcurrency returns a Semaphore (script concurrency): at most
// slots.Max slots held at once per event key.
func NewConcurrency(client Client, opts Options, slots Slots) (*Semaphore, error) {
	switch {
	case opts.CountDenied:
		return nil, &LimitError{Index: -1, Field: "CountDenied", Reason: "does not apply to concurrency: a denied acquire holds nothing"}
	case opts.DenyCache != 0:
		return nil, &LimitError{Index: -1, Field: "DenyCache", Reason: "does not apply to concurrency: a release frees a slot before a denial's RetryAfter"}
	case opts.Fallback != 0:
		return nil, &LimitError{Index: -1, Field: "Fallback", Reason: "does not apply to concurrency: a share of the holders kept per process bounds nothing"}
	case slots.Renew < 0 || slots.Renew > 0 && slots.Renew >= slots.Lease:
		return nil, &LimitError{Index: 0, Field: "Renew", Reason: fmt.Sprintf("must be 0 or less than Lease (%v), got %v", slots.Lease, slots.Renew)}
	}
	l, err := newCore(client, opts, spec{
		script:    Concurrency,
		durations: []time.Duration{slots.Lease},
		quotas:    []quota{{slots.Max, slots.Lease}},
		args: func(u unit) ([]string, error) {
			return limitArgs([]Slots{slots}, func(c *check, s Slots) []string {
				return []string{c.count("Max", s.Max, 1, 1e6), c.duration("Lease", s.Lease, u)}
			})
		},
		// The key names the script's state version and the unit only:
		// the leases of one key read the same under any Max and Lease.
		unitKeys: true,
	})
	if err != nil {
		return nil, err
	}
	c := &Semaphore{l: l, slots: slots, deadlineSlack: l.unit.Size}
	c.l.bindWire()
	return c, nil
}

// Slots returns the limiter's slots.
func (c *Semaphore) Slots() Slots { return c.slots }

// Script returns the script version the limiter calls.
func (c *Semaphore) Script() Script { return c.l.script }

// Key returns the state key of an event key, as Limiter.Key builds it
// (its hash names the unit only).
func (c *Semaphore) Key(eventKey string) string { return c.l.key(eventKey) }

// Args returns the ARGV of an acquire of n slots (0: a decision, < 0: a
// reset) at the semaphore's clock, as it sends it without a lease id: any
// language can replay it by EVALSHA on Key. Acquire and AcquireN also send
// the lease id they chose, after these. A renewal or release of a lease
// sends the lease's slots as ARGV[1], "renew" or "release" as ARGV[4], and
// the lease's ID after these.
func (c *Semaphore) Args(n int64) []string {
	l := &c.l
	now, _ := l.now()
	return l.appendArgs(make([]string, 0, 7), n, now)
}

// Acquire takes one slot of eventKey: a *Lease when Result.Allowed, nil
// when denied (Result.RetryAfter is the wait until enough leases expire if
// none is released). Release the lease when done.
func (c *Semaphore) Acquire(ctx context.Context, eventKey string) (*Lease, Result, error) {
	return c.AcquireN(ctx, eventKey, 1)
}

// AcquireN takes n slots (n >= 1) of eventKey under one lease. More than
// Max slots are never granted (RetryAfter is Never).
//
// From script version 6 (the default), the lease id is chosen here, at
// random, and sent with the acquire. When the outcome is unknown (the
// context ended while the call ran, a timeout, a connection lost), the
// server may hold the slots: they are released by that id in the
// background, within a few seconds. An acquire whose caller's context
// ended is not admitted, even under FailOpen. Version 5 numbers the lease
// itself, so there the slots of an acquire with an unknown outcome come
// back only when its lease expires.
func (c *Semaphore) AcquireN(ctx context.Context, eventKey string, n int64) (*Lease, Result, error) {
	l := &c.l
	// The stages before the wire (the deny cache, the fallback) are off
	// for a semaphore; only the time the call began is read, for Observe.
	d := l.chain.Begin(eventKey, n, time.Time{}, false)
	var lease *Lease
	if n < 1 || n > maxScriptInt {
		d.Result, d.Err = l.failedWire(&LimitError{Index: -1, Field: "n", Reason: fmt.Sprintf("must be in [1, 2^52], got %d", n)})
		d.Local = true
	} else {
		// From v6 the caller names the lease (ARGV[7]), so that an acquire
		// whose outcome is unknown can be released; v5 numbers it itself.
		var id int64
		if c.l.script.Version >= 6 {
			id = 1 + rand.Int64N(maxScriptInt)
		}
		at, reply, sent, err := c.do(ctx, eventKey, n, "0", id)
		var se *ServerError
		if err != nil && sent && id != 0 && !errors.As(err, &se) {
			c.releaseUnknown(eventKey, n, id)
		}
		switch {
		case err != nil && sent && ctx.Err() != nil:
			// The caller gave up while the call ran: no admission.
			d.Result, d.Err = wire.Result{Limit: -1}, err
		case err != nil:
			d.Result, d.Err = l.failedWire(err)
		default:
			d.Result = c.result(reply)
			if d.Result.Allowed {
				lease = c.newLease(eventKey, n, reply[4], at)
			}
		}
	}
	r, err := l.finish(ctx, &d)
	if r.Allowed && lease == nil {
		// FailOpen or DryRun admitted what the server did not grant.
		lease = &Lease{c: c, eventKey: eventKey, slots: n, local: true, lost: make(chan struct{})}
	}
	return lease, r, err
}

// Peek says whether one more slot of eventKey is free (Result.Allowed),
// how many are (Remaining) and when the last lease held ends if none is
// renewed (ResetAfter), acquiring nothing.
//
// It goes the way of Limiter.Peek: under FailOpen a peek the server could
// not answer is Allowed, with the error; under DryRun a full key is
// Allowed with DryRunDenied; Observe sees it.
func (c *Semaphore) Peek(ctx context.Context, eventKey string) (Result, error) {
	return c.l.call(ctx, eventKey, 0)
}

// Reset drops every lease of eventKey: their holders' renewals and
// releases find them lost. The lease ids go on counting.
func (c *Semaphore) Reset(ctx context.Context, eventKey string) error {
	_, err := c.l.call(ctx, eventKey, -1)
	return err
}

// releaseUnknown releases, in the background and within
// unknownReleaseTimeout, lease id of n slots of eventKey, whose acquire
// has an unknown outcome. A lease the server does not hold is left alone.
func (c *Semaphore) releaseUnknown(eventKey string, n, id int64) {
	c.releases.Add(1)
	go func() {
		defer c.releases.Done()
		ctx, cancel := context.WithTimeout(context.Background(), min(unknownReleaseTimeout, c.slots.Lease))
		defer cancel()
		// A failure leaves the slots to the lease's expiry.
		_, _, _, _ = c.do(ctx, eventKey, n, "release", id)
	}()
}

// do makes one call of the script on eventKey: eventCount n in mode, and
// the lease id (ARGV[7]) unless 0: in modes renew and release the lease's,
// in an acquire the caller's choice. at is the time the call began by the
// lease clock (see Lease.Deadline); sent reports that the call was sent
// (it may have run even when err is set).
func (c *Semaphore) do(ctx context.Context, eventKey string, n int64, mode string, id int64) (at time.Time, reply [5]int64, sent bool, err error) {
	l := &c.l
	if err := ctx.Err(); err != nil {
		return at, reply, false, callerGaveUp(l.name, err)
	}
	at = c.clock()
	now := ""
	if l.clock != nil {
		if now, err = l.nowOf(at); err != nil {
			return at, reply, false, err
		}
	}
	args := l.appendArgs(make([]string, 0, 7), n, now)
	args[3] = mode
	if id != 0 {
		args = append(args, strconv.FormatInt(id, 10))
	}
	err = l.run(ctx, l.newCall(l.key(eventKey), args), reply[:])
	return at, reply, true, classify(l.name, err)
}

// clock is the lease clock: the limiter's Clock, or the process's.
func (c *Semaphore) clock() time.Time {
	if c.l.clock != nil {
		return c.l.clock()
	}
	return time.Now()
}

// result is the Result of an acquire, whose limit_index is the lease id:
// Limit 0, or -1 when nothing decided.
func (c *Semaphore) result(reply [5]int64) wire.Result {
	r := wire.Decode(reply[:], c.l.unit)
	r.Limit = 0
	if reply[4] == 0 {
		r.Limit = -1
	}
	return r
}

// DryRun reports whether the semaphore was made with Options.DryRun: it
// admits every acquire and only says what enforcement would have done.
func (c *Semaphore) DryRun() bool { return c.l.chain.DryRun.On }
