// Package ratelua is a set of rate limiters that run atomically inside
// Valkey and Redis as versioned Lua scripts, and the Go to call them.
//
// # Limiters
//
// Pick the algorithm by the limits you need to state; each constructor
// takes several limits, all checked (and the events recorded) in one
// script call on one key:
//
//   - NewSlidingWindow with Window limits: at most Max events in any
//     Duration, counted in Resolution buckets, e.g. 1 per 5 s AND 5 per
//     hour for logins;
//   - NewTokenBucket with Bucket limits: a Capacity refilled continuously,
//     for API quotas with bursts and weighted requests (AllowN);
//   - NewZSetLog with Log limits: an exact sliding log, never more than Max
//     in any Window;
//   - NewAR1 with Decay limits: an exponentially decaying count, the least
//     memory and work, approximate.
//
// A limiter runs on a Client. Rueidis adapts a github.com/redis/rueidis
// client (the native, fastest path); the nested modules
// github.com/ratelua/ratelua/goredis and github.com/ratelua/ratelua/valkeygo
// adapt go-redis and valkey-go, and github.com/ratelua/ratelua/ratemini
// runs limiters on miniredis in unit tests:
//
//	logins, err := ratelua.NewSlidingWindow(ratelua.Rueidis(client), ratelua.Options{Prefix: "login"},
//		ratelua.Window{Max: 1, Duration: 5 * time.Second, Resolution: time.Second},
//		ratelua.Window{Max: 5, Duration: time.Hour, Resolution: 10 * time.Minute})
//	r, err := logins.Allow(ctx, remoteIP)
//	if !r.Allowed { /* 429, Retry-After: r.RetryAfter */ }
//
// Allow records one event and decides it, AllowN records n, Peek decides
// without recording, Reset forgets an event key, AllowBatch and ResetMany
// take many keys in one round trip per node. A Result says whether the
// events were admitted, how many more would be, when to retry, when the
// state is fresh again, and which limit decided. Options choose the key
// prefix, whether denied attempts count, the clock (the server's by
// default), and whether to fail open.
//
// Every state key is <prefix>:{<event key>}:<script>:v<N>:<limits>, so a
// limiter runs unchanged on a single node or a cluster, and every key
// expires when its limits no longer need it.
//
// # Production
//
// Options.Observe sees every decision (an Event of Kind allowed, denied,
// dry_run, fail_open, error or fallback), every script load and every
// switch of the fallback; github.com/ratelua/ratelua/rateotel turns them
// into OpenTelemetry metrics and spans. Options.DryRun decides and records
// as enforcement would but admits every call (Result.DryRunDenied).
// Options.DenyCache answers a denied request in the process until its
// RetryAfter. Options.Fallback enforces a share of the limits in memory
// while the server cannot be reached.
//
// # Errors
//
// Errors are testable with errors.Is: ErrInvalidLimit (rejected in Go,
// before any round trip), ErrScript (the server answered with an error
// reply, a *ServerError: never admitted, even with Options.FailOpen),
// ErrUnavailable (the call could not be sent or got no answer: the Result
// is Allowed only with Options.FailOpen), ErrNotSupported (the Client
// cannot do what was asked).
//
// # Scripts, from any language
//
// The scripts are embedded (Scripts, Registry) and published with their
// contract in lua/manifest.json (Manifest): every script takes one state
// key and the same arguments (eventCount, unit, now, mode, limits...) and
// answers five integers, so any language can call them by EVALSHA, or by
// FCALL from the Functions library (ReleaseLibrary, LoadFunctions,
// Options.Functions). Registry.Load puts the scripts on every node ahead of
// use; ResetPrefix deletes every limiter's state under a prefix.
package ratelua
