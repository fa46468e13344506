// Package ratelua is a set of rate limiters that run atomically inside
// Valkey and Redis as versioned Lua scripts, and the Go to call them.
//
// Build a limiter over a rueidis.Client with the limits of one algorithm —
// NewSlidingWindow (Window: several <max, duration, resolution> limits at
// once), NewZSetLog (Log: an exact sliding log), NewTokenBucket (Bucket:
// capacity and continuous refill) or NewAR1 (Decay: an exponentially
// decaying count) — and call Allow, AllowN, Peek, Reset or AllowBatch with
// an event key. Every limit is checked, and the events recorded, atomically
// in one script call on one key, so a limiter runs unchanged on a single
// node or a cluster:
//
//	logins, err := ratelua.NewSlidingWindow(client, ratelua.Options{Prefix: "login"},
//		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
//		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
//	r, err := logins.Allow(ctx, remoteIP)
//	if !r.Allowed { /* 429, Retry-After: r.RetryAfter */ }
//
// Errors are testable with errors.Is: ErrInvalidLimit (rejected before any
// round trip), ErrScript (an error reply), ErrUnavailable (no server; the
// Result is Allowed only with Options.FailOpen).
//
// The scripts are embedded (Scripts, LookupScript) and published with their
// contract in lua/manifest.json: every script takes one state key and the
// same arguments (eventCount, unit, now, mode, limits...) and answers five
// integers, so any language can call them by EVALSHA. A Registry runs them
// (EVALSHA, EVAL on NOSCRIPT), batches them and loads them on every node.
package ratelua
