package ratelua

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ratelua/ratelua/internal/decide"
	"github.com/ratelua/ratelua/internal/wire"
)

// Lease is the hold of an acquired slot (or of n slots from AcquireN) on
// one event key. It ends when released, or when it is lost: not renewed
// within Slots.Lease, dropped by Semaphore.Reset, or forgotten by a
// failover. A holder learns of a loss from Renew, Release, Err and Lost,
// and must then stop: its slots may be someone else's. It is safe for
// concurrent use.
//
// The lease's local deadline (Deadline) is the time of the call that
// acquired or last renewed it plus Slots.Lease, less one unit of the
// script's clock, read before the call was sent, so it never passes after
// the server's expiry. Once it has passed the lease is lost, and Renew and
// Release send nothing: after the key's last lease expires the key
// vanishes, and a late call could name a lease another holder acquired
// since under the same id (an id of the key's counter, as callers in
// other languages get, or, far less likely, the same random id). Without Options.Clock a timer marks the
// loss at the deadline; with a Clock, the next Renew, Release, Err or
// Deadline call does.
type Lease struct {
	c        *Semaphore
	eventKey string
	id       int64
	slots    int64
	local    bool

	mu       sync.Mutex
	deadline time.Time
	released bool
	err      error         // the loss, nil while held
	lost     chan struct{} // closed with err set
	timer    *time.Timer   // fires at the deadline (without a Clock)
	stop     chan struct{} // closed to end the renewals
	renewals chan struct{} // closed when the renewals have ended (nil without)
}

// newLease is the lease id of n slots of eventKey acquired by a call that
// began at at, with its deadline timer and its renewals.
func (c *Semaphore) newLease(eventKey string, n, id int64, at time.Time) *Lease {
	le := &Lease{c: c, eventKey: eventKey, id: id, slots: n, lost: make(chan struct{}), deadline: c.deadlineOf(at)}
	// Under the lock: the timer may fire before AfterFunc returns.
	le.mu.Lock()
	defer le.mu.Unlock()
	if c.l.clock == nil {
		le.timer = time.AfterFunc(time.Until(le.deadline), le.expire)
	}
	if c.slots.Renew > 0 {
		le.stop, le.renewals = make(chan struct{}), make(chan struct{})
		go le.renewing(c.slots.Renew)
	}
	return le
}

// deadlineOf is the local deadline of a lease whose call began at at.
func (c *Semaphore) deadlineOf(at time.Time) time.Time {
	return at.Add(c.slots.Lease - c.deadlineSlack)
}

// ID returns the lease id (0 for a local lease), chosen at random by the
// acquire: what a caller in another language passes to renew or release
// it.
func (le *Lease) ID() int64 { return le.id }

// Slots returns how many slots the lease holds.
func (le *Lease) Slots() int64 { return le.slots }

// Local reports a lease the server does not hold: one that FailOpen or
// DryRun admitted. Renew and Release do nothing for it, and it is never
// lost.
func (le *Lease) Local() bool { return le.local }

// Deadline returns the time, by the limiter's clock, until which the lease
// is held unless renewed (zero for a local lease).
func (le *Lease) Deadline() time.Time {
	le.mu.Lock()
	defer le.mu.Unlock()
	le.checkDeadline()
	return le.deadline
}

// Lost returns a channel closed when the lease is known to be lost.
func (le *Lease) Lost() <-chan struct{} { return le.lost }

// Err returns nil while the lease is held or once it was released, and
// the loss (wrapping ErrLeaseLost) once it is known to be lost.
func (le *Lease) Err() error {
	le.mu.Lock()
	defer le.mu.Unlock()
	le.checkDeadline()
	return le.err
}

// Renew extends the lease to Slots.Lease from now. It returns an error
// wrapping ErrLeaseLost when the lease is lost (then Lost is closed), and
// the call's error when the server could not answer (the lease may still
// be held: renew again before its deadline).
func (le *Lease) Renew(ctx context.Context) error {
	if le.local {
		return nil
	}
	le.mu.Lock()
	le.checkDeadline()
	switch {
	case le.err != nil:
		err := le.err
		le.mu.Unlock()
		return err
	case le.released:
		le.mu.Unlock()
		return fmt.Errorf("%w: lease %d was released", ErrLeaseLost, le.id)
	}
	le.mu.Unlock()
	at, reply, _, err := le.c.do(ctx, le.eventKey, le.slots, "renew", le.id)
	if err != nil {
		return err
	}
	le.mu.Lock()
	defer le.mu.Unlock()
	if le.released && le.err == nil {
		// Released while the renewal was on its way: not a loss.
		return fmt.Errorf("%w: lease %d was released", ErrLeaseLost, le.id)
	}
	if reply[0] != 1 {
		return le.lose(ctx, "the server does not hold it (expired, reset, or forgotten by a failover)")
	}
	if deadline := le.c.deadlineOf(at); le.err == nil && deadline.After(le.deadline) {
		le.deadline = deadline
		if le.timer != nil {
			le.timer.Reset(time.Until(deadline))
		}
	}
	return le.err
}

// Release gives the slots back and ends the renewals. It returns nil once
// they are free (or were released before), an error wrapping ErrLeaseLost
// when the lease had been lost before (the holder's work may have run
// without its slot), and the call's error when the server could not
// answer: then the slots come back when the lease expires. A context that
// is done sends nothing, so release with one that outlives the work, such
// as context.WithoutCancel of a request's. With Slots.Renew, Release first
// waits for a renewal on its way (at most one renewal period, or until ctx
// is done), so that no renewal reaches the server after the release.
func (le *Lease) Release(ctx context.Context) error {
	le.mu.Lock()
	if le.released || le.local {
		le.released = true
		le.mu.Unlock()
		return nil
	}
	le.checkDeadline()
	le.released = true
	le.end()
	if le.err != nil {
		err := le.err
		le.mu.Unlock()
		return err
	}
	renewals := le.renewals
	le.mu.Unlock()
	if renewals != nil {
		// The renewals' goroutine ends at the stop closed above, or once
		// the renewal it sent is answered (each has a period's timeout).
		select {
		case <-renewals:
		case <-ctx.Done():
		}
	}
	_, reply, _, err := le.c.do(ctx, le.eventKey, le.slots, "release", le.id)
	if err != nil {
		return err
	}
	if reply[0] != 1 {
		le.mu.Lock()
		defer le.mu.Unlock()
		return le.lose(ctx, "the server did not hold it any more (expired, reset, or forgotten by a failover)")
	}
	return nil
}

// checkDeadline marks the lease lost once its deadline has passed (le.mu
// held).
func (le *Lease) checkDeadline() {
	if le.err == nil && !le.released && !le.local && !le.c.clock().Before(le.deadline) {
		le.lose(context.Background(), "not renewed before its deadline")
	}
}

// expire is the deadline timer's: a renewal may have moved the deadline
// since it was set.
func (le *Lease) expire() {
	le.mu.Lock()
	defer le.mu.Unlock()
	le.checkDeadline()
}

// lose records the loss of the lease for reason and tells Observe (le.mu
// held). It returns the loss.
func (le *Lease) lose(ctx context.Context, reason string) error {
	if le.err != nil {
		return le.err
	}
	le.err = fmt.Errorf("%w: lease %d: %s", ErrLeaseLost, le.id, reason)
	close(le.lost)
	le.end()
	le.c.l.emit(ctx, decide.Event{Kind: KindLost, N: le.slots, Err: le.err, Result: wire.Result{Limit: -1}})
	return le.err
}

// end stops the timer and the renewals (le.mu held).
func (le *Lease) end() {
	if le.timer != nil {
		le.timer.Stop()
	}
	if le.stop != nil {
		close(le.stop)
		le.stop = nil
	}
}

// renewing renews the lease every period until it is released or lost; a
// renewal that gets no answer within the period is tried again at the
// next one, and the deadline ends the lease if none succeeds.
func (le *Lease) renewing(period time.Duration) {
	le.mu.Lock()
	stop, done := le.stop, le.renewals
	le.mu.Unlock()
	defer close(done)
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), period)
			err := le.Renew(ctx)
			cancel()
			if errors.Is(err, ErrLeaseLost) {
				return
			}
		}
	}
}
