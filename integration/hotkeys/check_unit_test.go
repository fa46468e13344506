package hotkeys

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// TestSurelyInWindow: the admissions certainly in one window, by hand:
// spans (start, end) in ms; a span longer than the window counts in none.
func TestSurelyInWindow(t *testing.T) {
	ms := int64(time.Millisecond)
	spans := []span{{0, 1}, {1, 2}, {2, 9}, {10, 10}, {10, 12}, {11, 11}, {30, 31}}
	var a admissions
	for _, s := range spans {
		a.starts = append(a.starts, s.start*ms)
		a.ends = append(a.ends, s.end*ms)
	}
	slices.Sort(a.starts)
	slices.Sort(a.ends)
	for _, c := range []struct {
		w    time.Duration
		want int64
	}{
		{time.Nanosecond, 1}, {2 * time.Millisecond, 2}, {3 * time.Millisecond, 3},
		{8 * time.Millisecond, 3}, {10 * time.Millisecond, 3}, {13 * time.Millisecond, 6}, {time.Second, 7},
	} {
		if got := surelyInWindow(a, c.w); got != c.want {
			t.Errorf("surelyInWindow(%v) = %d, want %d", c.w, got, c.want)
		}
	}
}

// TestCheckWindows: the checker finds admissions over a bucket's bound,
// and none under it: a bucket of 10 refilled 10 a second allows 10 + 10 x
// (W + 1 ms) in a window of W. A burst of 10 at 0, then one every 100 ms
// from 100 ms, keeps to it (19 in the first second, 21 in the run of
// 1.1 s); a burst of 12 does not (21 in the first second, over 20.01).
func TestCheckWindows(t *testing.T) {
	b := []ratelua.Bucket{{Capacity: 10, RefillAmount: 10, RefillInterval: time.Second}}
	burst := func(n int) admissions {
		var a admissions
		for range n {
			a.starts, a.ends = append(a.starts, 0), append(a.ends, int64(time.Microsecond))
		}
		for k := int64(1); k <= 11; k++ {
			at := k * int64(100*time.Millisecond)
			a.starts, a.ends = append(a.starts, at), append(a.ends, at+int64(time.Microsecond))
		}
		return a
	}
	over := func(fs []windowFinding) bool {
		for _, f := range fs {
			if float64(f.surely) > f.bound {
				return true
			}
		}
		return false
	}
	if fs := checkWindows(burst(10), b, time.Millisecond); over(fs) {
		t.Errorf("a bucket's admissions found over its bound: %v", fs)
	}
	if fs := checkWindows(burst(12), b, time.Millisecond); !over(fs) {
		t.Errorf("21 in a second not found over the bound of 20.01: %v", fs)
	}
}

// TestReadLogLeavesOutACutLine: a log read while its worker writes may end
// in part of a line; readLog leaves it out, and reads every whole line.
func TestReadLogLeavesOutACutLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	whole := "A 100 200\nR 150 3 900\nA 300 400\n"
	for _, cut := range []string{"", "A 500 6", "A 1795766086915412186 1", "R 1"} {
		if err := os.WriteFile(path, []byte(whole+cut), 0o644); err != nil {
			t.Fatal(err)
		}
		w, err := readLog(path)
		if err != nil {
			t.Fatalf("cut %q: %v", cut, err)
		}
		if len(w.admits) != 2 || len(w.reserves) != 1 || w.admits[1] != (span{300, 400}) {
			t.Fatalf("cut %q: admits %v, reserves %v; want the two whole admissions and the reserve", cut, w.admits, w.reserves)
		}
	}
	// A whole line that is wrong is still an error.
	if err := os.WriteFile(path, []byte(whole+"A 500 6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readLog(path); err == nil || !strings.Contains(err.Error(), "ended before it began") {
		t.Fatalf("a whole admission ending before it began: %v", err)
	}
}
