package ratelua

import (
	"context"
	"fmt"
	"strconv"
)

// SettleID settles reservation id of eventKey with the work's actual cost
// (0 to 2^52) from any process of the fleet, as Reservation.Settle does
// in the one that reserved: estimate - actual is given back or actual -
// estimate charged (never denied), for every limit of the key at once,
// and the script applies a reservation's settle at most once. held
// reports whether the server held it: false when its lifetime had
// passed, when it was settled or cancelled before (a retry), or when no
// such reservation was taken; then nothing was written. The Result is a
// peek after it. It is for a caller that keeps only the id (a reply
// header, Envoy's dynamic metadata) and must be sent with the limits and
// the unit of the limiter that reserved; it goes to the server only (a
// reservation the fallback holds is settled by its Reservation), and
// drops the key's cached denial.
func (l *Limiter) SettleID(ctx context.Context, eventKey string, id, actual int64) (res Result, held bool, err error) {
	switch {
	case id < 1 || id > maxScriptInt:
		return Result{Limit: -1}, false, &LimitError{Index: -1, Field: "id", Reason: fmt.Sprintf("must be in [1, 2^52], got %d", id)}
	case actual < 0 || actual > maxScriptInt:
		return Result{Limit: -1}, false, &LimitError{Index: -1, Field: "actual", Reason: fmt.Sprintf("must be in [0, 2^52], got %d", actual)}
	case !l.script.Reserves():
		return Result{Limit: -1}, false, fmt.Errorf("ratelua: %s does not take reservations (Script.Reserves): %w", l.name, ErrNotSupported)
	}
	if err := ctx.Err(); err != nil {
		return Result{Limit: -1}, false, callerGaveUp(l.name, err)
	}
	now, err := l.now()
	if err != nil {
		return Result{Limit: -1}, false, err
	}
	r, err := l.ask(ctx, eventKey, actual, "settle:"+strconv.FormatInt(id, 10), now)
	l.chain.Deny.Changed(eventKey)
	if err != nil {
		return Result{Limit: -1}, false, err
	}
	return r, r.Limit >= 0, nil
}
