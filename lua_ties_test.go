package ratelua

import (
	"slices"
	"strconv"
	"testing"
)

// TestTiesGoToTheLowerIndex checks the contract's tie rule (lua/README.md,
// limit_index: "ties go to the lower index") in every version of every
// script that takes several limits, the released ones included: the
// property tests give an older version a fifth of their calls, too few to
// meet a tie reliably (mutants/multi-limit-tie-break went unseen so).
// Two identical limits tie on the remaining count of an allowed call and
// on the wait of a denied one; behind a looser first limit, the tie
// between the second and the third goes to the second.
func TestTiesGoToTheLowerIndex(t *testing.T) {
	for _, name := range []string{SlidingWindow, AR1, ZSetLog, TokenBucket} {
		login := loginLimits[name]
		tight, loose := login[:len(login)/2], login[len(login)/2:]
		for _, script := range versions(t, name) {
			for _, tc := range []struct {
				limits [][]string
				want   int64
			}{
				{[][]string{tight, tight}, 1},
				{[][]string{loose, tight, tight}, 2},
			} {
				e := frozenEngine()
				for i, now := range []int64{1000, 1001} {
					args := []string{"1", "s", strconv.FormatInt(now, 10), "0"}
					args = append(args, slices.Concat(tc.limits...)...)
					got, _, err := run(t, e, script.Source, args)
					if err != nil {
						t.Fatalf("%s, %d limits, call %d: %v", script, len(tc.limits), i+1, err)
					}
					if allowed := got[0] == 1; allowed != (i == 0) {
						t.Fatalf("%s, %d limits, call %d: reply %v, want the first call allowed and the second denied", script, len(tc.limits), i+1, got)
					}
					if got[4] != tc.want {
						t.Errorf("%s, limits %v, call %d: limit_index %d (reply %v), want %d: a tie goes to the lower index", script, tc.limits, i+1, got[4], got, tc.want)
					}
				}
			}
		}
	}
}
