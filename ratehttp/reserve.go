package ratehttp

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/ratelua/ratelua"
)

// holding is the reservations a request holds (Limit.Reserve) and the
// cost its handler reported (Settle).
type holding struct {
	reservations []*ratelua.Reservation

	mu       sync.Mutex
	actual   int64
	reported bool
}

type holdingKey struct{}

// Settle reports the actual cost of the request whose context is ctx (the
// handler's, or one derived from it) to every limit of its route with a
// Reserve: each reservation is settled with it once the handler returns
// (or panics, or its client hangs up and it returns), giving back what
// the estimate held beyond it or charging the overrun. A later Settle
// replaces an earlier one; a cost below 0 counts as 0 (give it all back).
// It reports false when the request holds no reservation (no Reserve
// limit applied, or it was denied). A handler that never calls it keeps
// the estimate spent.
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

// settle settles the reservations of a request whose handler is done with
// the cost it reported, or the estimate, even when its client has gone;
// a settle without an answer is sent again (at most settleAttempts
// times, within releaseTimeout), and a failure is OnError's (the estimate
// then stays spent).
func (m *Middleware) settle(r *http.Request, h *holding) {
	if h == nil {
		return
	}
	h.mu.Lock()
	actual, reported := h.actual, h.reported
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), releaseTimeout)
	defer cancel()
	for _, resv := range h.reservations {
		cost := resv.Estimate()
		if reported {
			cost = min(actual, maxCost)
		}
		var err error
		for range settleAttempts {
			if _, err = resv.Settle(ctx, cost); !errors.Is(err, ratelua.ErrUnavailable) {
				break
			}
		}
		if err != nil && m.onError != nil {
			m.onError(r, err)
		}
	}
}

// cancel gives back the reservations of a request that does not reach
// its handler (a later limit denied it, or panicked), even when its
// client has gone; a failure is OnError's.
func (m *Middleware) cancel(r *http.Request, h *holding) {
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), releaseTimeout)
	defer cancel()
	for _, resv := range h.reservations {
		var err error
		for range settleAttempts {
			if _, err = resv.Cancel(ctx); !errors.Is(err, ratelua.ErrUnavailable) {
				break
			}
		}
		if err != nil && m.onError != nil {
			m.onError(r, err)
		}
	}
}
