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

// AllowBatch decides many event keys in one round trip per node where the
// client batches (Rueidis, goredis and valkeygo do). Each outcome carries
// its own error (with the fail-open or fail-closed Result).
func (l *Limiter) AllowBatch(ctx context.Context, requests []Request) []Outcome {
	out := make([]Outcome, len(requests))
	now, err := l.now()
	if err != nil {
		for i := range out {
			out[i].Result, out[i].Err = l.failed(err)
		}
		return out
	}
	calls := make([]Call, 0, len(requests))
	index := make([]int, 0, len(requests))
	for i, r := range requests {
		if r.N < 0 || r.N > maxScriptInt {
			out[i].Result, out[i].Err = l.failed(&LimitError{Index: -1, Field: "N",
				Reason: fmt.Sprintf("must be in [0, 2^52], got %d (use Reset to reset)", r.N)})
			continue
		}
		calls = append(calls, l.newCall(l.Key(r.Key), l.appendArgs(make([]string, 0, 4+len(l.limits)), r.N, now)))
		index = append(index, i)
	}
	if len(calls) == 0 {
		return out
	}
	replies, errs := l.exec(ctx, calls)
	for j, i := range index {
		out[i].Result, out[i].Err = l.decode(replies[j], errs[j])
	}
	return out
}
