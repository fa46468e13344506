package ratelua

import (
	"context"
	"fmt"
)

// Request is one decision in a batch: N events for Key (0 peeks).
type Request struct {
	Key string
	N   int64
}

// Outcome is the answer to one Request.
type Outcome struct {
	Result Result
	Err    error
}

// AllowBatch decides many event keys in one round trip per node. Each
// outcome carries its own error (with the fail-open or fail-closed Result).
func (l *Limiter) AllowBatch(ctx context.Context, requests []Request) []Outcome {
	out := make([]Outcome, len(requests))
	calls := make([]Call, 0, len(requests))
	index := make([]int, 0, len(requests))
	for i, r := range requests {
		if r.N < 0 || r.N > maxScriptInt {
			out[i].Result, out[i].Err = l.failed(&LimitError{Index: -1, Field: "N",
				Reason: fmt.Sprintf("must be in [0, 2^52], got %d (use Reset to reset)", r.N)})
			continue
		}
		calls = append(calls, Call{Keys: []string{l.Key(r.Key)}, Args: l.Args(r.N)})
		index = append(index, i)
	}
	if len(calls) == 0 {
		return out
	}
	for j, resp := range l.exec(ctx, calls) {
		i := index[j]
		out[i].Result, out[i].Err = l.decode(resp)
	}
	return out
}
