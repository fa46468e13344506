package ratelua

import (
	"context"
	"time"
)

// Options configure a limiter. The zero value is a limiter under the key
// prefix "ratelua" that counts only admitted events, reads the server's
// clock and fails closed. The package documentation says more of each
// option that works around the round trip: see "Failing open", "Dry run",
// "Deny cache", "Fallback" and "Versions".
type Options struct {
	// Prefix starts every state key: <Prefix>:{<event key>}:<script>:v<N>:<limits hash>.
	// It may not contain '{' or '}'. Empty means "ratelua".
	Prefix string
	// ExactKeys makes every event key the state key itself, sent as given:
	// no Prefix, no {hash tag}, no script name, version or hash of the
	// limits. The caller names the state, for example envoyproxy/ratelimit's
	// own counters (NewFixedWindow). The key is the script's only key, so a
	// call stays on one node of a cluster; but without a hash tag, keys of
	// one event land on any slot (they are not kept together), and limiters
	// of other scripts or limits given the same key read each other's state
	// (a script refuses a key of another type and writes nothing).
	ExactKeys bool
	// CountDenied records every attempt, allowed or not (mode 1); by
	// default only admitted events are recorded. It is not part of the key.
	CountDenied bool
	// Clock, if set, gives the time of each call (the caller's clock); by
	// default the server's clock (TIME) is used, so app servers agree.
	Clock func() time.Time
	// FailOpen admits a call when the server could not answer; never when
	// it answered with an error, nor when the caller gave up.
	FailOpen bool
	// Registry holds the scripts the limiter may call; nil means the
	// embedded ones.
	Registry *Registry
	// Functions calls the scripts by FCALL from the release's Functions
	// library, loaded on every master when a node lacks it.
	Functions bool
	// Version pins the script version; 0 means the newest.
	Version int

	// DryRun decides and records every call as enforcement would, but
	// admits it; Result.DryRunDenied says when it would have denied.
	DryRun bool
	// DenyCache, above 0, answers a denied request in the process until
	// its RetryAfter, for at most DenyCache event keys; what changes the
	// key's state through the Limiter drops it.
	DenyCache int
	// Fallback, above 0, is the share (0.001 to 1) of every limit this
	// process enforces in memory while the server cannot be reached; a
	// share that rounds a limit's maximum down to 0 is refused. What it
	// admitted is recorded on the server when it answers again.
	Fallback float64
	// FallbackAfter is how long calls must go unanswered before the
	// fallback decides, and how often it then asks the server.
	FallbackAfter time.Duration
	// FallbackKeys bounds the event keys the fallback holds; 0 means
	// 10,000. Keys let go are remembered in a sketch that never
	// under-counts them.
	FallbackKeys int
	// ReservationLifetime is how long a reservation of Limiter.Reserve
	// can be settled: a Settle or Cancel after it finds nothing
	// (ErrReservationExpired) and the estimate stays spent. Choose it
	// longer than the work and its retries. 0 means
	// DefaultReservationLifetime (5 minutes); it is rounded up to the
	// limiter's unit of time.
	ReservationLifetime time.Duration
	// HotKeys, if set, turns on local leases of quota for hot keys: a key
	// whose rate in this process reaches HotKeys.Rate reserves batches of
	// units and admits Allow and AllowN from them in the process (see
	// HotKeys and "Hot keys" in the package documentation; Limiter.Close
	// gives the unused units back). Only for a script that takes
	// reservations (Script.Reserves, version 7 or later): other scripts,
	// and NewConcurrency, refuse it. nil: off, one call per decision.
	HotKeys *HotKeys
	// Observe, if set, sees every decision (a reservation's reserve,
	// settle and cancel too), script load and fallback switch, on the
	// caller's goroutine: it must be fast and concurrent-safe.
	Observe func(ctx context.Context, e Event)
}
