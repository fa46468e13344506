package fallback

import (
	"testing"

	"github.com/ratelua/ratelua/internal/model"
)

// TestFallbackReservations: a model that holds reservations (token
// bucket) reserves and settles them as the script does, once, and the
// events recorded for the server move by the difference; a model that
// holds none (sliding window) takes a reserve as AllowN(estimate) and a
// settle charges only the overrun.
func TestFallbackReservations(t *testing.T) {
	bucket := New(0, 0, func() model.Model {
		return &model.TokenBucket{Limits: []model.TokenBucketLimit{{Capacity: 10, RefillAmount: 10, RefillInterval: 60}}, Reserves: true}
	})
	reserve := model.Call{Count: 6, Now: 100, Unit: "s", Op: model.OpReserve, ID: 7, Lifetime: 60}
	if r := bucket.Decide("k", reserve); r[0] != 1 || r[1] != 4 {
		t.Fatalf("reserve 6 of 10: %v", r)
	}
	settle := model.Call{Count: 2, Now: 100, Unit: "s", Op: model.OpSettle, ID: 7}
	if r := bucket.Settle("k", settle, 6); r[1] != 8 || r[4] == 0 {
		t.Fatalf("settle 2 of 6: %v, want 8 left, applied", r)
	}
	if r := bucket.Settle("k", settle, 6); r[4] != 0 || r[2] != -1 {
		t.Fatalf("settle again: %v, want nothing applied", r)
	}
	if got := bucket.TakeRecorded(); len(got) != 1 || got[0] != (Recorded{"k", 2}) {
		t.Fatalf("recorded %v, want k: 2 (6 reserved, 4 given back)", got)
	}
	if r := bucket.Settle("gone", settle, 6); r[4] != 0 {
		t.Fatalf("settle of a key the fallback does not hold: %v", r)
	}

	window := New(0, 0, func() model.Model {
		return &model.SlidingWindow{Limits: []model.SlidingWindowLimit{{Max: 10, Duration: 60, Resolution: 1}}}
	})
	if r := window.Decide("k", reserve); r[0] != 1 || r[1] != 4 {
		t.Fatalf("sliding window, reserve 6 of 10: %v", r)
	}
	if r := window.Settle("k", settle, 6); r[1] != 4 || r[4] == 0 {
		t.Fatalf("sliding window, settle 2 of 6: %v, want nothing given back (4 left)", r)
	}
	over := settle
	over.Count = 9
	if r := window.Settle("k", over, 6); r[1] != 1 {
		t.Fatalf("sliding window, settle 9 of 6: %v, want the overrun of 3 charged (1 left)", r)
	}
	if got := window.TakeRecorded(); len(got) != 1 || got[0] != (Recorded{"k", 9}) {
		t.Fatalf("recorded %v, want k: 9", got)
	}
}
