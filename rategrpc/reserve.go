package rategrpc

import (
	"context"
	"errors"
	"sync"

	"google.golang.org/grpc"

	"github.com/ratelua/ratelua"
)

// holding is the reservations a call holds (Limit.Reserve) and the cost
// its handler reported (Settle).
type holding struct {
	reservations []*ratelua.Reservation

	mu       sync.Mutex
	actual   int64
	reported bool
}

type holdingKey struct{}

// Settle reports the actual cost of the call whose context is ctx (the
// handler's, a stream's Context(), or one derived from them) to every
// limit of the call with a Reserve: each reservation is settled with it
// when the handler returns (a stream: when it ends) or panics, giving back
// what the estimate held beyond it or charging the overrun. A later
// Settle replaces an earlier one; a cost below 0 counts as 0 (give it all
// back). It reports false when the call holds no reservation. A handler
// that never calls it keeps the estimate spent.
func Settle(ctx context.Context, actual int64) bool {
	h, ok := ctx.Value(holdingKey{}).(*holding)
	if !ok {
		return false
	}
	h.mu.Lock()
	h.actual, h.reported = max(actual, 0), true
	h.mu.Unlock()
	return true
}

// settleAttempts is how many times a settle that got no answer is sent:
// the reservation's id makes a retry apply at most once.
const settleAttempts = 3

// settle settles the reservations of a call whose handler is done with
// the cost it reported, or the estimate, even when the caller has gone; a
// settle without an answer is sent again (at most settleAttempts times,
// within releaseTimeout), and a failure is OnError's (the estimate then
// stays spent).
func (in *Interceptor) settle(ctx context.Context, h *holding) {
	if h == nil {
		return
	}
	h.mu.Lock()
	actual, reported := h.actual, h.reported
	h.mu.Unlock()
	in.each(ctx, h, func(sctx context.Context, r *ratelua.Reservation) error {
		cost := r.Estimate()
		if reported {
			cost = min(actual, 1<<52)
		}
		_, err := r.Settle(sctx, cost)
		return err
	})
}

// cancel gives back the reservations of a call that does not reach its
// handler (a later limit denied it, or panicked).
func (in *Interceptor) cancel(ctx context.Context, h *holding) {
	if h == nil {
		return
	}
	in.each(ctx, h, func(sctx context.Context, r *ratelua.Reservation) error {
		_, err := r.Cancel(sctx)
		return err
	})
}

// each runs step on every reservation of h under a context that outlives
// the call, again while it gets no answer, and tells OnError of a failure.
func (in *Interceptor) each(ctx context.Context, h *holding, step func(context.Context, *ratelua.Reservation) error) {
	method, _ := grpc.Method(ctx)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for _, r := range h.reservations {
		var err error
		for range settleAttempts {
			if err = step(sctx, r); !errors.Is(err, ratelua.ErrUnavailable) {
				break
			}
		}
		if err != nil && in.onError != nil {
			in.onError(ctx, method, err)
		}
	}
}
