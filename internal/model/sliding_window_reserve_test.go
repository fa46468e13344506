package model

import "testing"

// swLimit is the one limit of the reservation tests: 10 events in 100 ms,
// in buckets of 10 ms.
var swLimit = SlidingWindowLimit{Max: 10, Duration: 100, Resolution: 10}

func newReservingSW() *SlidingWindow {
	return &SlidingWindow{Limits: []SlidingWindowLimit{swLimit}, Reserves: true}
}

func swReserve(m *SlidingWindow, id, estimate, now, lifetime int64) Reply {
	return m.Do(Call{Op: OpReserve, ID: id, Lifetime: lifetime, Count: estimate, Now: now, Unit: "ms"})
}

func swSettle(m *SlidingWindow, id, actual, now int64) Reply {
	return m.Do(Call{Op: OpSettle, ID: id, Count: actual, Now: now, Unit: "ms"})
}

func swPeek(m *SlidingWindow, now int64) Reply {
	return m.Do(Call{Count: 0, Now: now, Unit: "ms"})
}

// A refund goes back to the bucket the reservation recorded in: the room
// it makes leaves the window when that bucket does, not later.
func TestSlidingWindowRefundGoesToTheRecordedBucket(t *testing.T) {
	m := newReservingSW()
	if r := swReserve(m, 1, 8, 1000, 1000); r.Allowed != 1 || r.Remaining != 2 {
		t.Fatalf("reserve 8 of 10: got %+v, want allowed with 2 remaining", r)
	}
	// Two more events in a later bucket fill the window.
	if r := m.Do(Call{Count: 2, Now: 1050, Unit: "ms"}); r.Allowed != 1 || r.Remaining != 0 {
		t.Fatalf("2 more: got %+v, want allowed with 0 remaining", r)
	}
	r := swSettle(m, 1, 3, 1060)
	if r.Allowed != 1 || r.Remaining != 5 {
		t.Fatalf("settle 3 of 8: got %+v, want 5 remaining (10 - 3 - 2)", r)
	}
	// At 1100 the reserve's bucket (1000..1009) has left the window: only
	// the 2 events at 1050 count. Had the refund gone to the newest
	// bucket, 2 - 5 would leave nothing there to count; had it not been
	// made, 8 would have left.
	if r := swPeek(m, 1100); r.Remaining != 8 {
		t.Fatalf("peek at 1100: got %+v, want 8 remaining", r)
	}
}

// A settle after the reservation's bucket has left the window refunds
// nothing: no room that did not exist.
func TestSlidingWindowRefundAfterTheWindowIsIgnored(t *testing.T) {
	m := newReservingSW()
	swReserve(m, 1, 6, 1000, 10_000)
	if r := m.Do(Call{Count: 4, Now: 1100, Unit: "ms"}); r.Allowed != 1 || r.Remaining != 6 {
		t.Fatalf("4 at 1100: got %+v, want 6 remaining", r)
	}
	r := swSettle(m, 1, 0, 1105)
	if r.Allowed != 1 || r.Remaining != 6 {
		t.Fatalf("settle after the window: got %+v, want 6 remaining (nothing refunded)", r)
	}
	if len(m.Reservations()) != 0 {
		t.Fatalf("settled id still held: %v", m.Reservations())
	}
}

// A settle applies once: a retried one replies {0, remaining, -1,
// reset_after, 0} and changes nothing; so does an unknown or expired id.
func TestSlidingWindowSettleAppliesOnce(t *testing.T) {
	m := newReservingSW()
	swReserve(m, 7, 9, 1000, 50)
	first := swSettle(m, 7, 4, 1010)
	if first.Allowed != 1 || first.Remaining != 6 {
		t.Fatalf("settle 4 of 9: got %+v, want 6 remaining", first)
	}
	again := swSettle(m, 7, 0, 1011)
	if again.Allowed != 0 || again.RetryAfter != -1 || again.Remaining != 6 || again.LimitIndex != 0 {
		t.Fatalf("retried settle: got %+v, want not applied with 6 remaining", again)
	}
	if again.ResetAfter != first.ResetAfter-1 {
		t.Fatalf("retried settle reset_after %d, want %d", again.ResetAfter, first.ResetAfter-1)
	}
	swReserve(m, 8, 2, 1020, 5)
	if r := swSettle(m, 8, 0, 1025); r.Allowed != 0 || r.RetryAfter != -1 || r.Remaining != 4 {
		t.Fatalf("settle at expiry: got %+v, want not applied with 4 remaining (4 + 2 held)", r)
	}
	if r := swSettle(m, 99, 0, 1026); r.Allowed != 0 || r.RetryAfter != -1 {
		t.Fatalf("unknown id: got %+v, want not applied", r)
	}
}

// An overrun is charged into the current bucket, never denied, and later
// calls wait for it.
func TestSlidingWindowOverrunIsCharged(t *testing.T) {
	m := newReservingSW()
	swReserve(m, 1, 5, 1000, 1000)
	r := swSettle(m, 1, 14, 1030)
	if r.Allowed != 0 || r.Remaining != 0 {
		t.Fatalf("overrun to 14 of 10: got %+v, want the peek's denial with 0 remaining", r)
	}
	// At 1100 the reserve's 5 left; the overrun's 9 at 1030 still count.
	if r := m.Do(Call{Count: 2, Now: 1100, Unit: "ms"}); r.Allowed != 0 || r.Remaining != 1 {
		t.Fatalf("2 at 1100: got %+v, want denied with 1 remaining", r)
	}
	if r := m.Do(Call{Count: 1, Now: 1130, Unit: "ms"}); r.Allowed != 1 {
		t.Fatalf("1 at 1130, after the overrun left: got %+v, want allowed", r)
	}
}

// A full refund empties its bucket: the bucket no longer sets reset_after,
// and a state with nothing left and no reservation is gone.
func TestSlidingWindowRefundEmptiesTheBucket(t *testing.T) {
	m := newReservingSW()
	m.Do(Call{Count: 1, Now: 1000, Unit: "ms"})
	swReserve(m, 1, 3, 1040, 1000)
	r := swSettle(m, 1, 0, 1045)
	if r.Remaining != 9 || r.ResetAfter != 55 {
		t.Fatalf("cancel: got %+v, want 9 remaining and reset_after 55 (from the 1000 bucket)", r)
	}
	m2 := newReservingSW()
	swReserve(m2, 1, 3, 1040, 1000)
	if r := swSettle(m2, 1, 0, 1045); r.Remaining != 10 || r.ResetAfter != 0 || m2.Exists() {
		t.Fatalf("cancel of the only events: got %+v, exists %v; want a fresh reply and no state", r, m2.Exists())
	}
}
