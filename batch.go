package ratelua

import (
	"context"
	"fmt"
	"time"
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
// its own error (with the fail-open or fail-closed Result). The options
// apply to each request as to a call of AllowN (N 0 peeks), with the
// clock read once for the batch.
func (l *Limiter) AllowBatch(ctx context.Context, requests []Request) []Outcome {
	out := make([]Outcome, len(requests))
	first, now, err := l.begin("", 0)
	var pending []decision // with the options, per call
	calls := make([]Call, 0, len(requests))
	index := make([]int, 0, len(requests))
	for i, r := range requests {
		d := first
		d.eventKey, d.n = r.Key, r.N
		if err == nil && (r.N < 0 || r.N > maxScriptInt) {
			err := &LimitError{Index: -1, Field: "N", Reason: fmt.Sprintf("must be in [0, 2^52], got %d (use Reset to reset)", r.N)}
			out[i].Result, out[i].Err = l.refuse(ctx, r.N, err)
			continue
		}
		if err != nil || (l.extras && l.answerLocally(ctx, &d)) {
			if err != nil {
				d.r, d.err = l.failed(err)
				d.local = true
			}
			out[i].Result, out[i].Err = l.finish(ctx, &d)
			continue
		}
		calls = append(calls, l.newCall(l.Key(r.Key), l.appendArgs(make([]string, 0, 4+len(l.limits)), r.N, now)))
		index = append(index, i)
		if l.extras {
			pending = append(pending, d)
		}
	}
	if len(calls) == 0 {
		return out
	}
	replies, errs := l.exec(ctx, calls)
	for j, i := range index {
		r, err := l.decode(replies[j], errs[j])
		if !l.extras {
			out[i].Result, out[i].Err = r, err
			continue
		}
		l.settle(ctx, &pending[j], r, err)
		out[i].Result, out[i].Err = l.finish(ctx, &pending[j])
	}
	return out
}

// exec sends many calls of the limiter's script (one round trip per node
// where the client batches) and recovers the entries that met NOSCRIPT or
// a missing function, together.
func (l *Limiter) exec(ctx context.Context, calls []Call) ([][]int64, []error) {
	replies := make([][]int64, len(calls))
	flat := make([]int64, 5*len(calls))
	for i := range replies {
		replies[i] = flat[5*i : 5*i+5 : 5*i+5]
	}
	errs := runBatch(ctx, l.client, calls, replies)
	var retry []int
	for i, err := range errs {
		if err != nil && l.recoverable(calls[i].Command, err) {
			retry = append(retry, i)
		}
	}
	if len(retry) == 0 {
		return replies, errs
	}
	start := time.Now()
	if l.functions {
		err := l.loadLibrary(ctx)
		l.loaded(ctx, start, err)
		if err != nil {
			for _, i := range retry {
				errs[i] = err
			}
			return replies, errs
		}
	}
	again := make([]Call, len(retry))
	againReplies := make([][]int64, len(retry))
	for j, i := range retry {
		again[j], againReplies[j] = calls[i], replies[i]
		if !l.functions {
			again[j].Command, again[j].Script = "EVAL", l.script.Source
		}
	}
	for j, err := range runBatch(ctx, l.client, again, againReplies) {
		errs[retry[j]] = err
		if !l.functions {
			// Each EVAL loaded the script on its node.
			l.loaded(ctx, start, err)
		}
	}
	return replies, errs
}
