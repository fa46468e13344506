package ratelua_test

import (
	"testing"

	"github.com/ratelua/ratelua/internal/limitertest"
)

// TestDenyCacheInFlight: a denial that reaches the limiter after a Reset,
// a ResetMany or an admission made through the same Limiter is not cached
// (issue 20, row 3: a key stayed denied locally for the rest of its wait
// while the server admitted).
func TestDenyCacheInFlight(t *testing.T) {
	limitertest.DenyCacheInFlight(t, limitertest.NewEngineClient(), "inflight")
}

// TestDenyCacheMixedRequests: with requests of 1, 2 and 3 events on one
// key, every answer of the cache is the server's (issue 20, row 6: after
// the limiter admitted a smaller request, cached AllowN(2) denials kept a
// RetryAfter and Limit the server no longer gave).
func TestDenyCacheMixedRequests(t *testing.T) {
	plain, cached := limitertest.NewEngineClient(), limitertest.NewEngineClient()
	local, compared := limitertest.DenyCacheMixedAgainstServer(t, plain, cached, "mixed", 5000)
	t.Logf("engine: %d of %d decisions local, every one the server's", local, compared)
	if local == 0 {
		t.Error("nothing was answered locally: the sequence tests nothing")
	}
}
