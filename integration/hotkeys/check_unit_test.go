package hotkeys

import (
	"testing"
	"time"

	"github.com/ratelua/ratelua"
)

// TestMaxInWindow: the most times in any window [t, t+w), by hand.
func TestMaxInWindow(t *testing.T) {
	ms := int64(time.Millisecond)
	times := []int64{0, 1 * ms, 2 * ms, 10 * ms, 10 * ms, 11 * ms, 30 * ms}
	for _, c := range []struct {
		w    time.Duration
		want int64
	}{
		{time.Nanosecond, 2}, {2 * time.Millisecond, 3}, {3 * time.Millisecond, 3},
		{9 * time.Millisecond, 3}, {10 * time.Millisecond, 4}, {11 * time.Millisecond, 5}, {time.Second, 7},
	} {
		if got := maxInWindow(times, c.w); got != c.want {
			t.Errorf("maxInWindow(%v) = %d, want %d", c.w, got, c.want)
		}
	}
}

// TestCheckWindows: the checker finds admissions over a bucket's widened
// bound, and none under it: a bucket of 10 refilled 10 a second, 100 ms
// of Lifetime and no slack allows 10 + 10 x (W + 0.1) in a window of W.
// A burst of 10 at 0, then one every 100 ms to 1.1 s, keeps to it (19 in
// the first second, 21 in 1.1 s); 3 more at 0 do not (22 in a second).
func TestCheckWindows(t *testing.T) {
	b := []ratelua.Bucket{{Capacity: 10, RefillAmount: 10, RefillInterval: time.Second}}
	burst := func(n int) []int64 {
		out := make([]int64, n)
		for k := int64(1); k <= 11; k++ {
			out = append(out, k*int64(100*time.Millisecond))
		}
		return out
	}
	over := func(fs []windowFinding) bool {
		for _, f := range fs {
			if float64(f.most) > f.widened {
				return true
			}
		}
		return false
	}
	if fs := checkWindows(burst(10), b, 100*time.Millisecond, 0); over(fs) {
		t.Errorf("a bucket's admissions found over its bound: %v", fs)
	}
	if fs := checkWindows(burst(13), b, 100*time.Millisecond, 0); !over(fs) {
		t.Errorf("22 in a second not found over the bound of 21: %v", fs)
	}
}
