// ratelua: rate limiters that run atomically in Redis and Valkey as the
// versioned Lua scripts of github.com/ratelua/ratelua, with the same state
// keys as its Go API, so that Go, Python and Node services share one limit.
export { Limiter, SlidingWindow, TokenBucket, ZSetLog, AR1 } from "./src/limiter.js";
export { Semaphore, Concurrency, Lease } from "./src/concurrency.js";
export { LeaseLostError, LimitError, RateluaError, ScriptError, UnavailableError } from "./src/errors.js";
export { NEVER } from "./src/result.js";
export { escapeTag } from "./src/keys.js";
export { DEFAULT_LIFETIME_MS, NotSupportedError, Reservation, newReservationId } from "./src/reservation.js";
