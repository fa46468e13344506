package ratelua

import (
	"time"
)

// The kinds of Event. A decision's kind says how it was reached; the
// Result says what the caller got.
const (
	// KindAllowed: the server (or the fallback's probe) admitted.
	KindAllowed = "allowed"
	// KindDenied: the server denied, or the deny cache answered as it did.
	KindDenied = "denied"
	// KindDryRun: denied by the limits, admitted under Options.DryRun.
	KindDryRun = "dry_run"
	// KindFailOpen: no answer; admitted by Options.FailOpen. Err says why.
	KindFailOpen = "fail_open"
	// KindError: no decision (no answer and failing closed, an error reply,
	// an invalid argument); Err says why. Denied, except under DryRun.
	KindError = "error"
	// KindFallback: no answer; the in-process fallback decided
	// (Options.Fallback). Result.Allowed says how.
	KindFallback = "fallback"
	// KindLoad: a script load, not a decision: the EVAL that answers
	// NOSCRIPT, or the FUNCTION LOAD of the release's library on every
	// master. Err is its failure.
	KindLoad = "load"
	// KindFallbackEnter: the limiter started answering from the fallback
	// for some event keys. Err is the failure that made it switch; Latency
	// is how long the server had gone unanswered.
	KindFallbackEnter = "fallback_enter"
	// KindFallbackLeave: the server answers again for every event key the
	// fallback decided; Latency is how long the fallback was in use.
	KindFallbackLeave = "fallback_leave"
	// KindLost: a concurrency lease was found lost (Lease.Err); N is its
	// slots. Not a decision.
	KindLost = "lease_lost"
	// KindReserve: a reserve (Limiter.Reserve), N its estimate. It is
	// decided as AllowN(estimate) is, with every option: Result.Allowed
	// says whether it was admitted, Result.DryRunDenied that DryRun
	// admitted a denial, Err the failure (with Allowed: FailOpen), Local
	// that the deny cache or the fallback answered.
	KindReserve = "reserve"
	// KindSettle: a reservation settled (Reservation.Settle), N the
	// actual cost. Result is the server's (or the fallback's) reply, a
	// peek after the settle; Err is ErrReservationExpired when it applied
	// nothing, or the failure; Local when the fallback held it.
	KindSettle = "settle"
	// KindCancel: a reservation cancelled (Reservation.Cancel), as
	// KindSettle with N 0.
	KindCancel = "cancel"
	// KindBatch: admitted in the process from a hot key's batch
	// (Options.HotKeys); Local is true. The decision that reserved the
	// batch (after its KindReserve) is one too; the others made no round
	// trip. Result.Remaining
	// is the batch's reserve's Remaining plus the units the batch still
	// holds. The batch's own reserve and settle are observed as
	// KindReserve and KindSettle (or KindCancel).
	KindBatch = "batch"
)

// Event is one decision, script load or fallback switch of a limiter, as
// Options.Observe sees it. It never holds the event key.
type Event struct {
	// Kind is one of the Kind constants.
	Kind string
	// Script is the script the limiter calls, "name@vN".
	Script string
	// Prefix is the limiter's key prefix.
	Prefix string
	// N is the number of events decided: 1 for Allow, n for AllowN and a
	// batch request, 0 for Peek; a reserve's estimate, a settle's actual
	// cost, 0 for a cancel.
	N int64
	// Result is what the caller got; Result.Limit is the deciding limit,
	// -1 when none decided (and for a load or a switch, whose Result is
	// otherwise zero).
	Result Result
	// Err is the error the caller got, or for KindLoad the load's failure,
	// for KindFallback the failure that the fallback answered for (nil
	// when it answered without asking the server).
	Err error
	// Latency is how long the caller waited for the decision (a batch's
	// decisions share the batch's), or how long the load took.
	Latency time.Duration
	// Local is true when the decision was made in the process without a
	// round trip: the deny cache, the fallback, a hot key's batch
	// (KindBatch), an argument refused in Go.
	Local bool
}
