package ratelua

import (
	"context"
	"time"
)

// Request is one decision in a batch: N events for Key (0 peeks).
type Request struct {
	Key string
	N   int64
}

// Outcome is the answer to one Request or Check.
type Outcome struct {
	Result Result
	Err    error
	// Kind is how the decision was reached, the Kind of its Event (one of
	// KindAllowed, KindDenied, KindDryRun, KindFailOpen, KindError and
	// KindFallback), whether or not the limiter has Options.Observe.
	Kind string
	// Local is true when the decision was made in the process without a
	// round trip: the deny cache, the fallback, a check refused in Go.
	Local bool
}

// AllowBatch decides many event keys in one round trip per node where the
// client batches (Rueidis, goredis and valkeygo do). Each outcome carries
// its own error (with the fail-open or fail-closed Result). The options
// apply to each request as to a call of AllowN (N 0 peeks), with the
// clock read once for the batch. It is Decide on the limiter's client.
func (l *Limiter) AllowBatch(ctx context.Context, requests []Request) []Outcome {
	var at time.Time
	if l.clock != nil {
		at = l.clock()
	}
	checks := make([]Check, len(requests))
	for i, r := range requests {
		checks[i] = Check{Limiter: l, Key: r.Key, N: r.N, At: at}
	}
	return decideChecks(ctx, l.client, checks, true)
}
