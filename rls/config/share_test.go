package config

import "testing"

// TestShareOfIsExact: a share of a limit is rounded down from the share as
// written, as the limiters round it.
func TestShareOfIsExact(t *testing.T) {
	// 0.7 of 90 is 63, exactly (the float product is 62.99999999999999).
	if got := ShareOf(90, 0.7); got != 63 {
		t.Fatalf("0.7 of 90: %d, want 63", got)
	}
}
