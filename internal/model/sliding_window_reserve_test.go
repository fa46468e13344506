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

// A settle takes the whole estimate out of the bucket the reservation
// recorded in and records the units used at the settle (issue 32): they
// count from the settle, not from the reserve.
func TestSlidingWindowSettleRecordsUsedAtSettle(t *testing.T) {
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
	// At 1100 the reserve's bucket (1000..1009) has left the window: the 3
	// used count at 1060, the 2 at 1050.
	if r := swPeek(m, 1100); r.Remaining != 5 {
		t.Fatalf("peek at 1100: got %+v, want 5 remaining", r)
	}
	// At 1155 the bucket of 1050 has left, that of 1060 not.
	if r := swPeek(m, 1155); r.Remaining != 7 || r.ResetAfter != 5 {
		t.Fatalf("peek at 1155: got %+v, want 7 remaining, reset_after 5", r)
	}
}

// A reservation held counts in every window, also after its recorded
// bucket left it (rule 1 of issue 32); settled then, nothing comes out of
// a bucket no window counts, and the units used count from the settle.
func TestSlidingWindowHeldCountsOutOfItsBucket(t *testing.T) {
	m := newReservingSW()
	swReserve(m, 1, 6, 1000, 10_000)
	if r := m.Do(Call{Count: 4, Now: 1100, Unit: "ms"}); r.Allowed != 1 || r.Remaining != 0 {
		t.Fatalf("4 at 1100: got %+v, want allowed with 0 remaining (6 held)", r)
	}
	if r := m.Do(Call{Count: 1, Now: 1101, Unit: "ms"}); r.Allowed != 0 || r.RetryAfter != 99 {
		t.Fatalf("1 at 1101: got %+v, want denied until the 4 at 1100 leave (99)", r)
	}
	if r := m.Do(Call{Count: 5, Now: 1101, Unit: "ms"}); r.Allowed != 0 || r.RetryAfter != 10_000-1 {
		t.Fatalf("5 at 1101: got %+v, want denied until the reservation's expiry leaves (9999)", r)
	}
	r := swSettle(m, 1, 1, 1105)
	if r.Allowed != 1 || r.Remaining != 5 {
		t.Fatalf("settle 1 of 6 after the window: got %+v, want 5 remaining", r)
	}
	if len(m.Reservations()) != 0 {
		t.Fatalf("settled id still held: %v", m.Reservations())
	}
}

// A reservation found expired is settled with its estimate at its expiry
// (rule 3 of issue 32): until then it is held, from then it counts from
// the bucket of its expiry.
func TestSlidingWindowExpiredCountsFromItsExpiry(t *testing.T) {
	m := newReservingSW()
	swReserve(m, 1, 7, 1000, 150)
	if r := swPeek(m, 1149); r.Remaining != 3 || r.ResetAfter != 101 {
		t.Fatalf("peek at 1149: got %+v, want 3 remaining (7 held), reset_after 101", r)
	}
	// Found at 1200: recorded in the bucket of 1150, which 1200 counts.
	if r := swPeek(m, 1200); r.Remaining != 3 || r.ResetAfter != 50 || len(m.Reservations()) != 0 {
		t.Fatalf("peek at 1200: got %+v, held %v; want 3 remaining, reset_after 50, nothing held", r, m.Reservations())
	}
	if r := swPeek(m, 1250); r.Remaining != 10 || m.Exists() != true {
		t.Fatalf("peek at 1250: got %+v, want 10 remaining", r)
	}
	// Found after the bucket of its expiry left every window: nothing left.
	m2 := newReservingSW()
	swReserve(m2, 1, 7, 1000, 150)
	if r := swPeek(m2, 1300); r.Remaining != 10 || m2.Exists() {
		t.Fatalf("peek at 1300: got %+v, exists %v; want 10 remaining and no state", r, m2.Exists())
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

// An overrun is recorded with the rest at the settle, never denied, and
// later calls wait for it.
func TestSlidingWindowOverrunIsCharged(t *testing.T) {
	m := newReservingSW()
	swReserve(m, 1, 5, 1000, 1000)
	r := swSettle(m, 1, 14, 1030)
	if r.Allowed != 0 || r.Remaining != 0 {
		t.Fatalf("overrun to 14 of 10: got %+v, want the peek's denial with 0 remaining", r)
	}
	// At 1100 the 14 at 1030 still count.
	if r := m.Do(Call{Count: 2, Now: 1100, Unit: "ms"}); r.Allowed != 0 || r.Remaining != 0 || r.RetryAfter != 30 {
		t.Fatalf("2 at 1100: got %+v, want denied with 0 remaining until 1130", r)
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
