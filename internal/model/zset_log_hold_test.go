package model_test

import (
	"math/rand/v2"
	"testing"

	"github.com/ratelua/ratelua/internal/model"
	"github.com/ratelua/ratelua/internal/modeltest"
)

// TestZSetLogHoldsUntilSettled is the proof obligation of the hold rule
// (issue 32) for zset_log v7 at the model's level (modeltest.ZSetLogHoldViolation:
// random plain calls and reserves, each admitted reservation's units
// admitted at random times in [reserve, settle], or up to its expiry for
// a holder that dies): in every window of every limit the admissions
// never exceed its max. Under v7's first rule (a reservation debited at
// its reserve's time, its unused units refunded there) it fails: a unit
// admitted after its reserve's time left the window was counted nowhere.
func TestZSetLogHoldsUntilSettled(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 2026))
	for seq := range 300 {
		m := &model.ZSetLog{Limits: modeltest.ZSetLogHoldLimits(r), Reserves: true}
		if v := modeltest.ZSetLogHoldViolation(r, m.Limits, 600, m.Do); v != "" {
			t.Fatalf("seq %d: %s", seq, v)
		}
	}
}
