// Reserve, then settle: a cost known only after the work (LLM tokens,
// response bytes, compute time), as lua/README.md's "Reserve, then settle"
// defines it. A reserve is decided as allowN(estimate) and holds the
// reservation's id until its lifetime passes; a settle refunds estimate -
// actual (or charges the overrun, never denied) for every limit of the key
// at once; a settle the script applies nothing for (its id unknown, expired,
// already settled, or reset) answers limit_index 0 and retry_after -1, so a
// settle retried with the same id applies at most once.
import { randomInt } from "node:crypto";
import { LimitError, RateluaError } from "./errors.js";
import { MAX_SCRIPT_INT, parseDuration } from "./limits.js";

/** DEFAULT_LIFETIME_MS is how long a reservation can be settled when
 * reserve is given no lifetime: 5 minutes, longer than most requests and
 * their retries. */
export const DEFAULT_LIFETIME_MS = 5 * 60 * 1000;

const UNIT_US = { s: 1e6, ms: 1000, us: 1 };
const MODE_FORM = "'reserve:<id>:<lifetime>'";
const RESERVE_OPTIONS = ["lifetime", "lifetimeMs", "id"];

/** The limiter's script (or script version) does not take the reserve and
 * settle modes; thrown before any round trip. */
export class NotSupportedError extends RateluaError {
  constructor(script, operation) {
    super(`ratelua: ${script} does not support ${operation}: its script refuses the reserve and settle modes (token_bucket v7 takes them)`);
    this.name = "NotSupportedError";
    Object.assign(this, { script: String(script), operation });
  }
}

/** reserves reports whether script takes the reserve and settle modes: its
 * contract in the manifest documents the mode 'reserve:<id>:<lifetime>' for
 * ARGV[4], as token_bucket v7's does. */
export function reserves(script) {
  return (script.argv || []).some((line) => line.startsWith("ARGV[4]") && line.includes(MODE_FORM));
}

/** newReservationId is a random reservation id in [1, 2^52] (node:crypto). */
export function newReservationId() {
  // randomInt takes ranges below 2^48: two draws make 52 bits.
  return randomInt(2 ** 26) * 2 ** 26 + randomInt(2 ** 26) + 1;
}

const shown = (v) => (typeof v === "string" ? JSON.stringify(v) : typeof v === "bigint" ? `${v}n` : String(v));

export function checkId(id) {
  if (!Number.isSafeInteger(id) || id < 1 || id > MAX_SCRIPT_INT) {
    throw new LimitError(-1, "id", `a reservation id must be an integer in [1, 2^52], got ${shown(id)}`);
  }
  return id;
}

export function checkEstimate(n) {
  if (!Number.isSafeInteger(n) || n < 1 || n > MAX_SCRIPT_INT) {
    throw new LimitError(-1, "estimate", `must be an integer in [1, 2^52], got ${shown(n)}`);
  }
  return n;
}

export function checkActual(n) {
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_SCRIPT_INT) {
    throw new LimitError(-1, "actual", `must be an integer in [0, 2^52], got ${shown(n)}`);
  }
  return n;
}

/** reserveOptions checks reserve's options: {lifetime: "2m"} or
 * {lifetimeMs: 120000} (default DEFAULT_LIFETIME_MS), and id (default a
 * random one). It returns the lifetime in whole units (rounded up: never
 * shorter than asked) and the id. */
export function reserveOptions(unit, options = {}) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new LimitError(-1, "options", `reserve's options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  for (const name of Object.keys(options)) {
    if (!RESERVE_OPTIONS.includes(name)) throw new LimitError(-1, name, `is not an option of reserve; they are ${RESERVE_OPTIONS.join(", ")}`);
  }
  const { lifetime, lifetimeMs, id } = options;
  let us;
  if (lifetime !== undefined && lifetimeMs !== undefined) throw new LimitError(-1, "lifetime", "is given twice, as lifetime and lifetimeMs: keep one");
  if (lifetimeMs !== undefined) {
    if (typeof lifetimeMs !== "number" || !Number.isFinite(lifetimeMs)) throw new LimitError(-1, "lifetime", `lifetimeMs must be a finite number of milliseconds, got ${shown(lifetimeMs)}`);
    us = lifetimeMs * 1000;
  } else if (lifetime !== undefined) {
    if (typeof lifetime === "number") throw new LimitError(-1, "lifetime", `lifetime: ${lifetime} names no unit: write lifetimeMs: ${lifetime} for ${lifetime} ms, or lifetime: "${lifetime}s"`);
    us = typeof lifetime === "string" ? parseDuration(lifetime) : null;
    if (us === null) throw new LimitError(-1, "lifetime", `must be a duration with units, such as "2m" or "30s", got ${shown(lifetime)}`);
  } else {
    us = DEFAULT_LIFETIME_MS * 1000;
  }
  us = Math.round(us);
  if (us <= 0) throw new LimitError(-1, "lifetime", `must be positive, got ${shown(lifetime ?? lifetimeMs)}`);
  const units = Math.ceil(us / UNIT_US[unit]);
  if (units > MAX_SCRIPT_INT) throw new LimitError(-1, "lifetime", `must be at most 2^52 ${unit}, got ${shown(lifetime ?? lifetimeMs)}`);
  return { units, id: id === undefined ? newReservationId() : checkId(id) };
}

/** settlementOf is a settle's decoded reply as {applied, result}:
 * limit_index 0 (result.limit -1) is the script's "applied nothing", never
 * the answer of a settle applied. */
export function settlementOf(result) {
  return { applied: result.limit >= 0, result };
}

/** Reservation is units reserved by Limiter.reserve, to settle once the
 * work's cost is known. */
export class Reservation {
  constructor(limiter, eventKey, id, estimate, result) {
    this._limiter = limiter;
    /** The event key it was reserved for. */
    this.eventKey = eventKey;
    /** The id sent with the reserve and every settle: a process that knows
     * it (and the event key) can settle the reservation. */
    this.id = id;
    /** The estimate reserved (0 when unknown: a reservation made elsewhere). */
    this.estimate = estimate;
    /** The reserve's decision, as allowN(estimate) gives it; null for a
     * reservation made elsewhere. */
    this.result = result;
    /** The answer of the settle that got one ({applied, result}), else null. */
    this.settlement = null;
    this._sent = null;
  }

  /** allowed: the reserve was admitted, the estimate taken and held. */
  get allowed() { return this.result === null || this.result.allowed; }

  /** settled: a settle (or cancel) got an answer; later ones send nothing. */
  get settled() { return this.settlement !== null; }

  /** settle(actual) settles with the actual cost (an integer in [0, 2^52]):
   * estimate - actual is refunded to every limit (capped at a full bucket),
   * or actual - estimate charged (never denied: the limits go into debt).
   * It resolves to {applied, result}, to the earlier answer after one, or
   * to null for a denied reservation (nothing to settle). Without an
   * answer it rejects (UnavailableError, even under failOpen): call it
   * again with the same actual; it applies at most once. */
  async settle(actual) {
    checkActual(actual);
    if (!this.allowed || this.settlement !== null) return this.settlement;
    if (this._sent !== null && this._sent !== actual) {
      throw new LimitError(-1, "actual", `reservation ${this.id} was settled with ${this._sent} without an answer (it may have applied): retry with ${this._sent}, got ${actual}`);
    }
    this._sent = actual;
    const result = await this._limiter._settle(this.eventKey, actual, this.id);
    this.settlement = settlementOf(result);
    return this.settlement;
  }

  /** cancel gives the whole estimate back: a settle with actual cost 0. */
  cancel() { return this.settle(0); }
}
