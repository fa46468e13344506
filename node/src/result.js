// Result: one decision, with its times in milliseconds.
import { ScriptError } from "./errors.js";

/** NEVER is the retryAfter of events that can never be admitted. */
export const NEVER = -1;

/** resultOf decodes a script's reply, five integers, in a unit of unitUs µs. */
export function resultOf(reply, unitUs, script) {
  if (!Array.isArray(reply) || reply.length !== 5 || !reply.every(Number.isInteger)) {
    throw new ScriptError(script, `a reply of five integers expected, got ${JSON.stringify(reply)}`.slice(0, 300));
  }
  const [allowed, remaining, retry, reset, index] = reply;
  const retryAfterUs = retry < 0 ? -1 : retry * unitUs;
  const resetAfterUs = reset < 0 ? -1 : reset * unitUs;
  return {
    allowed: allowed === 1,
    remaining,
    retryAfter: retryAfterUs < 0 ? NEVER : retryAfterUs / 1000,
    resetAfter: resetAfterUs < 0 ? NEVER : resetAfterUs / 1000,
    limit: index - 1,
    error: null,
    retryAfterUs,
    resetAfterUs,
  };
}

/** openResult is the Result of a call admitted without an answer. */
export function openResult(error) {
  return { allowed: true, remaining: 0, retryAfter: 0, resetAfter: 0, limit: -1, error, retryAfterUs: 0, resetAfterUs: 0 };
}
