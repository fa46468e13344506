package xds_test

import (
	"testing"
	"time"

	"github.com/ratelua/ratelua/rls/xds"
)

// TestBackoffDoubles: each wait doubles from Initial up to Max.
func TestBackoffDoubles(t *testing.T) {
	b := xds.Backoff{Initial: time.Second, Max: 10 * time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i, w := range want {
		if got := b.Delay(i); got != w {
			t.Errorf("attempt %d: %v, want %v", i, got, w)
		}
	}
	if got := b.Delay(1000); got != 10*time.Second {
		t.Errorf("attempt 1000: %v, want the max", got)
	}
	if got := (xds.Backoff{}).Delay(0); got != 10*time.Second {
		t.Errorf("zero Backoff's first wait %v, want the reference's 10s", got)
	}
}

// TestBackoffJitter: with Jitter, a wait is drawn within RandomFactor of
// the doubled one, never above Max, and not always the same.
func TestBackoffJitter(t *testing.T) {
	b := xds.Backoff{Initial: time.Second, Max: time.Minute, RandomFactor: 0.5, Jitter: true}
	seen := map[time.Duration]bool{}
	for range 200 {
		d := b.Delay(2) // 4 s before jitter
		if d < 2*time.Second || d > 6*time.Second {
			t.Fatalf("jittered wait %v outside [2s, 6s]", d)
		}
		seen[d] = true
		if d := b.Delay(10); d > time.Minute {
			t.Fatalf("jittered wait %v above the max", d)
		}
	}
	if len(seen) < 2 {
		t.Errorf("200 jittered waits all %v", seen)
	}
}
