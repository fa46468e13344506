// The errors of ratelua: a bad limit before any round trip, the server's
// error reply, and a call that got no answer.

/** Every error ratelua throws. */
export class RateluaError extends Error {}

/** A limit, option or argument was rejected before any round trip: index is
 * the 0-based limit (-1 for an option or argument), field its name as in Go
 * ("Max", "Resolution", "Prefix"). */
export class LimitError extends RateluaError {
  constructor(index, field, reason) {
    super(index < 0 ? `ratelua: invalid ${field}: ${reason}` : `ratelua: invalid limit ${index}: ${field} ${reason}`);
    this.name = "LimitError";
    Object.assign(this, { index, field, reason });
  }
}

/** The server answered with an error reply, or a reply of the wrong shape:
 * never admitted, even by a fail-open limiter. */
export class ScriptError extends RateluaError {
  constructor(script, message, cause) {
    super(`ratelua: ${script}: ${message}`, cause ? { cause } : undefined);
    this.name = "ScriptError";
    Object.assign(this, { script });
  }
}

/** The call could not be sent or got no answer (connection refused or
 * reset, timeout, a closed client). A fail-open limiter admits the call
 * with this error in result.error; a fail-closed one throws it. */
export class UnavailableError extends RateluaError {
  constructor(script, cause) {
    super(`ratelua: server unavailable: ${script}: ${cause && cause.message}`, { cause });
    this.name = "UnavailableError";
    Object.assign(this, { script });
  }
}

/** A concurrency lease is no longer held: not renewed before its deadline,
 * no longer held by the server (expired, reset, or forgotten by a
 * failover), or released. Its slots may be another holder's now. */
export class LeaseLostError extends RateluaError {
  constructor(leaseId, reason) {
    super(`ratelua: lease lost: lease ${leaseId}: ${reason}`);
    this.name = "LeaseLostError";
    Object.assign(this, { leaseId, reason });
  }
}

const replyErrors = new Set(["ReplyError", "ErrorReply", "SimpleError", "BlobError"]);
const noAnswerNames = new Set([
  "ClientClosedError", "ClientOfflineError", "SocketClosedUnexpectedlyError", "ConnectionTimeoutError",
  "SocketTimeoutError", "TimeoutError", "AbortError", "MaxRetriesPerRequestError", "RootNodesUnavailableError",
]);
const noAnswerCodes = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);
const noAnswerText = /Connection is closed|Stream isn't writeable|enableOfflineQueue|client is closed|Command timed out|Failed to refresh slots cache|None of startup nodes is available/i;

/** isReply reports an error reply of the server. */
export function isReply(err) {
  return !!err && (replyErrors.has(err.name) || replyErrors.has(err.constructor && err.constructor.name));
}

/** classify makes err one of ratelua's kinds: an answer of the server is a
 * ScriptError, no answer an UnavailableError. */
export function classify(script, err) {
  if (err instanceof RateluaError) return err;
  if (isReply(err)) return new ScriptError(script, err.message, err);
  if (err && (noAnswerNames.has(err.name) || noAnswerNames.has(err.constructor && err.constructor.name) ||
      noAnswerCodes.has(err.code) || noAnswerText.test(err.message))) {
    return new UnavailableError(script, err);
  }
  return new ScriptError(script, String(err && err.message), err);
}
