package ratelua

import (
	"testing"
)

// v5's one-limit token_bucket and ar1 states keep no limits text: a call
// with other limits in the same unit carries the state over (token_bucket:
// the deficit, clamped to 2 * capacity * refill_interval of the new limits;
// ar1: the count, decayed with the new decay and resolution); another unit
// or another number of limits starts fresh. These cases pin that.
func TestLimitsChangeV5(t *testing.T) {
	reg := NewRegistry()
	type call struct {
		args []string
		want []int64
	}
	cases := map[string][]call{
		TokenBucket: {
			// capacity 10, 1 token per 1000 ms: take 4, 6 left.
			{[]string{"4", "ms", "1000", "0", "10", "1", "1000"}, ints64(1, 6, 0, 4000, 1)},
			// capacity 20, same refill: the 4 missing tokens carry over.
			{[]string{"0", "ms", "1000", "0", "20", "1", "1000"}, ints64(1, 16, 0, 4000, 1)},
			// capacity 2: the deficit is clamped to 2 * 2 * 1000, the floor
			// -2 tokens; one token in 3000 ms, full in 4000.
			{[]string{"0", "ms", "1000", "0", "2", "1", "1000"}, ints64(0, 0, 3000, 4000, 1)},
			// refill 2 per 1000 with capacity 10: deficit 4000 is 2 tokens
			// per 1000 ms of refill, full after 2000 ms.
			{[]string{"0", "ms", "1000", "0", "10", "2", "1000"}, ints64(1, 6, 0, 2000, 1)},
			// Another unit starts fresh.
			{[]string{"0", "s", "1", "0", "10", "1", "1"}, ints64(1, 10, 0, 0, 1)},
			// Two limits start fresh (another layout).
			{[]string{"0", "ms", "1000", "0", "10", "1", "1000", "10", "1", "1000"}, ints64(1, 10, 0, 0, 1)},
			// The original limits still see the state.
			{[]string{"0", "ms", "1000", "0", "10", "1", "1000"}, ints64(1, 6, 0, 4000, 1)},
		},
		AR1: {
			// max 10, halve every 1000 ms: add 4, 6 left.
			{[]string{"4", "ms", "1000", "0", "10", "2000", "1000"}, ints64(1, 6, 0, 12000, 1)},
			// max 5: the count 4 carries over.
			{[]string{"0", "ms", "1000", "0", "5", "2000", "1000"}, ints64(1, 1, 0, 12000, 1)},
			// resolution 500 at 1600: one boundary passed (1500), count 2.
			{[]string{"0", "ms", "1600", "0", "10", "2000", "500"}, ints64(1, 8, 0, 5400, 1)},
			// Another unit starts fresh.
			{[]string{"0", "s", "1", "0", "10", "2000", "1"}, ints64(1, 10, 0, 0, 1)},
			// Two limits start fresh (another layout).
			{[]string{"0", "ms", "1000", "0", "10", "2000", "1000", "10", "2000", "1000"}, ints64(1, 10, 0, 0, 1)},
		},
	}
	for _, name := range []string{TokenBucket, AR1} {
		s, err := reg.Lookup(name, 5)
		if err != nil {
			t.Fatal(err)
		}
		e := frozenEngine()
		for i, c := range cases[name] {
			got, _, err := run(t, e, s.Source, c.args)
			if err != nil {
				t.Fatalf("%s call %d %q: %v", s, i+1, c.args, err)
			}
			if !equalInts(got, c.want) {
				t.Errorf("%s call %d %q: reply %v, want %v", s, i+1, c.args, got, c.want)
			}
		}
	}
}
