package ratelua

import (
	"testing"
)

// ar1 v6's one-limit state is the boundary index of the last write and the
// count there (one integer boundary * 2^20 + count when the count is whole):
// no limits and no unit. A call with other max or decay carries the count
// over; a call with the same resolution as a duration in another unit reads
// the same state; a call with another resolution reads the index as its
// own (a longer one puts it ahead of now: the count does not decay before
// then); another number of limits starts fresh. These cases pin that, and
// the state text.
func TestLimitsChangeAR1V6(t *testing.T) {
	reg := NewRegistry()
	s, err := reg.Lookup(AR1, 6)
	if err != nil {
		t.Fatal(err)
	}
	type call struct {
		args  []string
		want  []int64
		state any // the state after the call; nil: absent
	}
	cases := [][]call{{
		// max 10, halve every 1000 ms: add 4 at 1000 (boundary 1), 6 left;
		// 4 / 2^12 < 0.001, fresh at 1000 + 12 * 1000.
		{[]string{"4", "ms", "1000", "0", "10", "2000", "1000"}, ints64(1, 6, 0, 12000, 1), "1048580"},
		// max 5: the count 4 carries over.
		{[]string{"0", "ms", "1000", "0", "5", "2000", "1000"}, ints64(1, 1, 0, 12000, 1), "1048580"},
		// decay 4000 at 2500 (boundary 2): the count is 1; 1 / 4^5 < 0.001.
		{[]string{"0", "ms", "2500", "0", "10", "4000", "1000"}, ints64(1, 9, 0, 4500, 1), "1048580"},
		// The same resolution in s (1 s): boundary 1 again, the count 4.
		{[]string{"0", "s", "1", "0", "10", "2000", "1"}, ints64(1, 6, 0, 12, 1), "1048580"},
		// resolution 500 at 1600: the index 1 is read as 500's, 2
		// boundaries before now's 3: the count is 1, fresh at 1500 + 10 * 500.
		{[]string{"0", "ms", "1600", "0", "10", "2000", "500"}, ints64(1, 9, 0, 4900, 1), "1048580"},
		// resolution 60000 at 1600: the index 1 lies ahead of now's 0, the
		// count has not decayed, fresh at 60000 + 12 * 60000.
		{[]string{"0", "ms", "1600", "0", "10", "2000", "60000"}, ints64(1, 6, 0, 778400, 1), "1048580"},
		// Two limits start fresh (another layout).
		{[]string{"0", "ms", "1000", "0", "10", "2000", "1000", "10", "2000", "1000"}, ints64(1, 10, 0, 0, 1), "1048580"},
		// A count that is not whole: 5 at boundary 2 is 2 + 5 = 7 at 2000
		// (7 / 2^13 < 0.001), then 3.5 + 1 at 3000: the string
		// '<boundary>:<count>'.
		{[]string{"5", "ms", "2000", "0", "10", "2000", "1000"}, ints64(1, 3, 0, 13000, 1), "2097159"},
		{[]string{"1", "ms", "3000", "0", "10", "2000", "1000"}, ints64(1, 5, 0, 13000, 1), "3:4.5"},
		// A reset deletes it.
		{[]string{"-1", "ms", "3000", "0", "10", "2000", "1000"}, ints64(1, 10, 0, 0, 0), nil},
	}, {
		// A count of 2^20 or more is the string too (a denied call counts in
		// mode 1; 2^20 / 2^30 < 0.001).
		{[]string{"1048576", "s", "5", "1", "10", "2000", "1"}, ints64(0, 0, -1, 30, 1), "5:1048576"},
	}}
	for _, seq := range cases {
		e := frozenEngine()
		for i, c := range seq {
			got, _, err := run(t, e, s.Source, c.args)
			if err != nil {
				t.Fatalf("%s call %d %q: %v", s, i+1, c.args, err)
			}
			if !equalInts(got, c.want) {
				t.Errorf("%s call %d %q: reply %v, want %v", s, i+1, c.args, got, c.want)
			}
			if state := e.Dump(testKey); state != c.state {
				t.Errorf("%s call %d %q: state %#v, want %#v", s, i+1, c.args, state, c.state)
			}
		}
	}
}

// TestAR1V5AndV6StatesDoNotMix: either version reads the other's one-limit
// state as absent (v5's has a space, v6's none), so a raw caller moving a
// key from one to the other starts fresh instead of misreading it.
func TestAR1V5AndV6StatesDoNotMix(t *testing.T) {
	reg := NewRegistry()
	args := []string{"0", "ms", "1000", "0", "10", "2000", "1000"}
	for _, c := range []struct{ writer, reader int }{{5, 6}, {6, 5}} {
		w, err := reg.Lookup(AR1, c.writer)
		if err != nil {
			t.Fatal(err)
		}
		r, err := reg.Lookup(AR1, c.reader)
		if err != nil {
			t.Fatal(err)
		}
		for _, count := range []string{"4", "3"} {
			e := frozenEngine()
			write := append([]string{count}, args[1:]...)
			if _, _, err := run(t, e, w.Source, write); err != nil {
				t.Fatal(err)
			}
			if e.Dump(testKey) == nil {
				t.Fatalf("v%d wrote no state", c.writer)
			}
			got, _, err := run(t, e, r.Source, args)
			if err != nil {
				t.Fatal(err)
			}
			if want := ints64(1, 10, 0, 0, 1); !equalInts(got, want) {
				t.Errorf("v%d reading v%d's state %#v: reply %v, want %v (fresh)", c.reader, c.writer, e.Dump(testKey), got, want)
			}
		}
	}
}
