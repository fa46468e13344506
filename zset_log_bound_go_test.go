package ratelua_test

import (
	"errors"
	"testing"
	"time"

	"github.com/ratelua/ratelua"
	"github.com/ratelua/ratelua/internal/limitertest"
)

// TestZSetLogMaxBoundRefusedInGo: a Log's Max above 10^4 (the bound of one
// zset_log call's work) is refused by NewZSetLog as a LimitError naming
// Max, before any round trip; 10^4 is accepted.
func TestZSetLogMaxBoundRefusedInGo(t *testing.T) {
	if _, err := ratelua.NewZSetLog(limitertest.NewEngineClient(), ratelua.Options{}, ratelua.Log{Max: 10_000, Window: time.Hour}); err != nil {
		t.Fatalf("Max 10,000: %v", err)
	}
	_, err := ratelua.NewZSetLog(limitertest.NewEngineClient(), ratelua.Options{}, ratelua.Log{Max: 5, Window: time.Minute}, ratelua.Log{Max: 10_001, Window: time.Hour})
	var le *ratelua.LimitError
	if !errors.As(err, &le) || le.Field != "Max" || le.Index != 1 || !errors.Is(err, ratelua.ErrInvalidLimit) {
		t.Fatalf("Max 10,001: %v, want a LimitError naming limit 1's Max", err)
	}
}
