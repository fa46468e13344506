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
//     memory and work, approximate;
//   - NewConcurrency with Slots: at most Max held at once (see
//     Concurrency), a Semaphore rather than a Limiter.
//   - NewFixedWindow with one Fixed limit: envoyproxy/ratelimit's counting,
//     one integer counter per window (INCRBY, EXPIRE), with
//     Options.ExactKeys on the key a caller names (the reference's own, to
//     share its counters).
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
// take many keys in one round trip per node, and Decide many checks of
// many limiters, each at its own time if asked (Check.At). A Result says whether the
// events were admitted, how many more would be, when to retry, when the
// state is fresh again, and which limit decided. Options choose the key
// prefix, whether denied attempts count, the clock (the server's by
// default), and whether to fail open.
//
// Every state key is <prefix>:{<event key>}:<script>:v<N>:<limits>, so a
// limiter runs unchanged on a single node or a cluster, and every key
// expires when its limits no longer need it.
//
// # Concurrency
//
// NewConcurrency bounds how many at once rather than how often: at most
// Slots.Max holders of each event key, across every process that shares
// the keys (2 concurrent logins per account, 5 exports per tenant, 100
// calls in flight to a fragile upstream). Acquire takes a slot under a
// Lease that expires Slots.Lease after the acquire unless it is renewed,
// so the slots of a holder that crashed come back by themselves:
//
//	logins, err := ratelua.NewConcurrency(ratelua.Rueidis(client), ratelua.Options{Prefix: "logins"},
//		ratelua.Slots{Max: 2, Lease: 30 * time.Second, Renew: 10 * time.Second})
//	lease, r, err := logins.Acquire(ctx, accountID)
//	if lease == nil { /* 429, Retry-After: r.RetryAfter */ }
//	defer lease.Release(context.WithoutCancel(ctx))
//
// Slots.Renew renews every lease from a goroutine until it is released;
// without it the holder calls Lease.Renew within each lease time. A lease
// can be lost: not renewed in time (a process paused longer than the
// lease), dropped by Reset, or forgotten by a failover. Renew and Release
// then return an error wrapping ErrLeaseLost, Lease.Lost is closed, and
// the holder should stop, since its slot may be someone else's. A lease
// whose local deadline (Lease.Deadline) has passed is lost without asking
// the server.
//
// One Semaphore checks one limit on one key. Two bounds on different
// keys (2 per account and 10 per tenant) are two Semaphores: acquire the
// wider first and release it when the narrower denies. No script can
// check both in one atomic call on a cluster, where the keys live on
// different nodes.
//
// What a failover does to the count: replication is asynchronous, so a
// replica promoted after its master died may lack the last acquires. Their
// slots are free again at once while their holders still run, so for up
// to a lease time more than Max holders may run; each finds out at its
// next renewal (ErrLeaseLost). Renew often (Slots.Renew a third of Lease or
// less) to keep that window short. On six-node clusters under 64 holders
// of 10 slots, a master killed lost no lease, and one paused 3 s while its
// replica took over lost 2 or 3, told to their holders at their next
// renewal, with never more than 10 running at once (lua/README.md).
//
// # Reserve, then settle
//
// Limiter.Reserve takes an estimate of a cost known only after the work
// (LLM tokens, bytes sent, compute time), decided exactly as
// AllowN(estimate); the Reservation it returns is settled with the actual
// cost (Reservation.Settle: the rest given back, an overrun charged into
// debt, never denied) or given back whole (Reservation.Cancel), once,
// atomically for every limit of the key. The reservation id is drawn at
// random; a settle whose outcome is unknown is retried with the same id
// and applies at most once. A reservation can be settled for
// Options.ReservationLifetime (DefaultReservationLifetime); one never
// settled stays spent. Only scripts whose contract takes the modes
// (Script.Reserves: token_bucket, zset_log and sliding_window from v7) reserve; the others are refused
// with ErrNotSupported. DenyCache, Fallback, DryRun, FailOpen and Observe
// apply to each step as Limiter.Reserve says:
// a denied reserve is cached as a denied AllowN, a settle never is and
// drops the key's denial; the fallback decides a reserve in an outage and
// settles it in the process; Observe sees KindReserve, KindSettle and
// KindCancel. ratehttp and rategrpc reserve per request (Limit.Reserve)
// and settle what the handler reports (their Settle).
//
// # Hot keys
//
// Every decision is one round trip to the node that owns its key: right
// for many cold keys, slow for a few hot ones (a global API limit, a
// tenant's plan). Options.HotKeys serves a hot key from local leases of
// quota. A key is cold, one call per decision as without the option,
// until its decisions in this process reach HotKeys.Rate per second (an
// estimate over the last Lifetime). A hot key reserves a batch of K units
// in one call (Limiter.Reserve's operation, with a reservation lifetime of
// Lifetime plus the larger of Lifetime and a second, so that its id
// expires fast on the server) and admits Allow and AllowN from it in the
// process until its units are used or Lifetime has passed; then the batch
// is settled with what it admitted, which gives the rest back (a fully
// used one too: the script holds a batch's units until it is settled).
// Lifetime is measured on Options.Clock when there is one (a batch past
// it is then given back by the key's next decision, or by Close), else
// by a timer. ratehttp and rategrpc, which call AllowN, lease as well.
// K = clamp(rate x Lifetime, 1, MaxBatch), at most the smallest limit's
// maximum and at most the last reply's Remaining / 2 + 1, so that K
// shrinks toward 1 as the limit nears exhaustion; a K of 1 (or of no more
// than the events asked) reserves nothing and goes the ordinary path. A
// reserve of K that is denied decides the request on the ordinary path,
// exactly. When the server denies a hot key, the process holds that
// denial for a Lifetime (decisions of as many events or more are denied
// in the process, observed as KindDenied with Local; a Reset drops it), so
// that a spent limit costs one call per Lifetime, not one per decision. With
// several limits a batch fits all of them (the script admits a reserve
// only when every limit has K). Limiter.Close gives every unused unit back
// and ends the leasing: call it when the process ends; later decisions go
// the ordinary path. Decide, AllowBatch, Peek and Reserve are never served
// from a batch; Reset and ResetMany drop the key's batch with its state.
//
// Nothing is admitted that the server did not debit first, and a v7
// script holds a reservation's units until it is settled (or its id
// expires): a token bucket refills only up to its capacity less the units
// reserved and not yet settled; a window (sliding_window, zset_log)
// counts them in every check until the settle, and the units a batch used
// from the settle on. So across every process admissions never exceed
// any limit in any window, at whatever time within its batch's Lifetime a
// unit is admitted. What a user gives up, exactly: units sit at most
// Lifetime in a process before they are admitted (Lifetime must be at
// most a tenth of the shortest limit's window; construction refuses
// more); a denial can precede the true exhaustion by at most the units
// held in batches of other processes (at most the sum of their batches,
// each at most the Remaining / 2 + 1 of its reserve's reply), and by the
// units used in a window's last Lifetime, which count until a Lifetime
// later; and a denial can outlast it by at most a Lifetime (the held
// denial). A process that dies without Close loses its batches' unused
// units: held until each batch's reservation expires (Lifetime plus the
// larger of Lifetime and a second), then counted as spent until the
// limits give them back; never admitted twice.
//
// The options keep their meaning. DenyCache answers and caches a batch's
// reserve as it does AllowN(K); a denial it answers sends the request the
// ordinary path, where it answers as ever. Fallback: a batch is never
// made of the fallback's admission (a reserve the fallback decided is
// cancelled in the process), and the key goes the ordinary path, hence
// the fallback, for a Lifetime; the batch's units are never fallback
// admissions. DryRun: a batch is made only of a reserve the limits
// admitted; one denied (and admitted by DryRun) sends the request the
// ordinary path, which answers with DryRunDenied. FailOpen: a reserve
// with no answer makes no batch (it is cancelled in the background), and
// the key goes the ordinary path, which fails open, for a Lifetime.
// Observe sees each decision admitted from a batch as KindBatch, with
// Local true, and the batch's reserve and settle as KindReserve and
// KindSettle. Only scripts that take reservations (Script.Reserves,
// version 7 or later) lease; others are refused at construction.
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
// # Failing open
//
// Options.FailOpen admits a call when the server could not answer: the
// connection was refused or reset, or the caller's deadline passed while
// the call waited for the server (a deadline is the caller's bound on how
// long a decision may take, so a server slower than that is one that did
// not answer). The error is still returned, wrapping ErrUnavailable. The
// caller giving up is not an outage and is never admitted: a context
// cancelled before or during the call (an HTTP client that hung up or
// half-closed its connection), or whose deadline had passed before the
// call was sent, is denied with an error wrapping the context's error
// (context.Canceled or context.DeadlineExceeded) and not ErrUnavailable;
// the server is not asked when the context is already done. A deadline
// that a remote client chooses (gRPC's grpc-timeout) lets that client
// decide how long the server may take; detach it (context.WithoutCancel
// and a timeout of the service's own) where that matters. Any answer of
// the server (an error reply such as NOPERM, OOM, BUSY or LOADING, a
// failed library load, a reply of the wrong shape) is never admitted. A
// call that timed out in the client may still have been recorded by the
// server. By default every error is denied.
//
// # Dry run
//
// Options.DryRun decides and records every call exactly as an enforcing
// limiter would (same script, same state, same mode), but admits it:
// Allowed is always true, and Result.DryRunDenied says when enforcement
// would have denied (Observe sees KindDryRun). A call that meets an error
// is admitted as well, with its error. For rolling out a new limit and
// watching it before it bites.
//
// # Deny cache
//
// Options.DenyCache, if above 0, answers in the process, without a round
// trip, a request (event key and number of events; Peek counts as one)
// that the server denied with a RetryAfter, until that wait is over. It
// holds at most DenyCache event keys, evicting the least recently used,
// and is safe for concurrent use.
//
// The cache never admits: it repeats a denial of the server, for at most
// that denial's RetryAfter. Denied attempts are not recorded (CountDenied
// false; with CountDenied the server would record each attempt and the
// option is refused with ErrInvalidLimit), so until the wait is over the
// server would deny the same request too, with the same RetryAfter,
// ResetAfter and Limit, except:
//   - AllowN with n > 1: Remaining is the server's at the denial, while the
//     server's grows as capacity frees (by less than n: while it denies,
//     some limit has fewer than n left; for one event it is 0 throughout);
//   - with the server's clock, the wait is measured on the process's clock
//     from when the request was sent, one unit shorter, so RetryAfter and
//     ResetAfter are shorter than the server's by up to the round trip and
//     a unit, and a local answer never outlasts the server's;
//   - the state changes other than through this Limiter. Another Limiter
//     or process records events for the same event key and limits: the
//     server's RetryAfter and ResetAfter are then longer (the cached wait
//     ends first, and the next request asks the server). Or it resets the
//     key, or the state is lost (ResetPrefix, a deleted key, a failover
//     that lost recorded events): the server would then admit while the
//     cache still denies, for at most the cached RetryAfter.
//
// Whatever changes the state through this Limiter drops the key's denial:
// an admission, a call without an answer (it may have been recorded),
// Reset and ResetMany (before they are sent and once they are answered),
// a reservation's settle or cancel (once it is sent), the fallback's events
// recorded after an outage; and a denial that was
// in flight meanwhile is not cached. Limits are part of the state key, so
// a process with other limits (a new deployment) or another Version never
// changes the answers: it uses another key. A denial with RetryAfter Never
// (more events than a limit's maximum) is not cached. An evicted key costs
// a round trip, no more.
//
// # Fallback
//
// Options.Fallback, if above 0, is the share (0.001 to 1) of every limit
// that this process enforces by itself while the server cannot be reached:
// the same algorithm and limits, each maximum (and a bucket's refill rate)
// multiplied by Fallback and rounded down, decided in memory per event key.
// A share that rounds a maximum down to 0 (0.25 of 1 per 5 s) is refused
// with ErrInvalidLimit, naming the limit: the fallback would deny every
// request of an outage; choose a share of at least 1/Max, or none. With N
// instances sharing the limits, 1/N keeps their fallbacks within the
// limits. Only a call with no answer (ErrUnavailable) counts toward it,
// never an error reply. Unavailability is followed per hash slot: calls on
// a key whose slot went unanswered are answered from the fallback once
// calls have gone unanswered for FallbackAfter (until then FailOpen
// decides; 0 falls back at the first unanswered call), with a nil error;
// one such call at a time, at most one per FallbackAfter, still asks the
// server, and its first answer ends the fallback for every key. Unanswered
// calls that stop for FallbackAfter while other calls are answered (a
// blip) are forgotten.
//
// What the fallback answers, against what the server would:
//   - its state starts empty, not knowing the events the server recorded,
//     and is kept across outages;
//   - zset_log is counted in 64 buckets per window (a decision costs the
//     same however many events the window holds): it never admits what
//     the exact log would deny, and its RetryAfter and ResetAfter are at
//     most Window/64 longer (exact for windows of at most 64 units);
//   - it holds at most FallbackKeys event keys, spread over up to 64
//     shards by a hash of the key, each letting go of its least recently
//     used. A key let go is remembered in a sketch of fixed size (four
//     cells per key; a cell keeps the largest usage of its keys) that never
//     under-counts: when it comes back it starts at least as full as it
//     was, its events counted as if all made at its latest one (it may
//     wait up to a window longer than it would have). A new key whose four
//     cells all hold keys let go starts as full as the least of them, until
//     their windows after their latest events pass.
//
// When the server answers again, the call that ended the fallback records
// on it, in one round trip per node, what the fallback recorded: one call
// per event key, counted even over the limits, at that moment (so those
// events stay in the server's window up to the outage's length longer than
// they were made). It is best effort: a call that fails is not sent again,
// and at most FallbackKeys keys are recorded per outage (the first ones).
// What remains, for one key in one window of a limit: up to the limit plus
// what the fallbacks of every instance admitted in it (at most Fallback
// times the limit each), plus what the server decides during the round
// trip that records them; and if the server lost its state (a restart
// without persistence, a failover that lost writes), what it had admitted
// before too.
//
// # Observation
//
// Options.Observe is called with every decision (Allow, AllowN, Peek, every
// request of AllowBatch), every script load and every switch of the
// fallback, on the caller's goroutine after the decision, with the
// caller's ctx. github.com/ratelua/ratelua/rateotel turns the events into
// OpenTelemetry metrics and spans.
//
// # Versions
//
// Options.Version pins the script version; 0 means the newest. Every
// version keeps the same contract, so pinning matters only for state, with
// one exception: token_bucket v6 with one bucket reads a clock behind its
// last write at that clock (the bucket then looks emptier, never fuller),
// where earlier versions take the last write's time. The
// state key names the version whose state layout the script keeps
// (Script.StateVersion; zset_log v5 keeps the layout of the development
// version 3), so a new version that keeps a layout shares its state, and a
// move across layouts starts its limiters fresh under new keys; pinning the
// old version until every instance runs the new code keeps one state per
// limiter during a rolling upgrade. Options.Functions calls the scripts as
// Redis Functions (FCALL) from the release's Library instead of by
// EVALSHA; the library is loaded on every master the first time a node
// answers that the function is missing (or beforehand with LoadFunctions).
// Functions survive failovers and restarts, where EVALSHA meets NOSCRIPT.
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
