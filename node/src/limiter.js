// The limiters: one script each, the Go API's keys and arguments.
import { LimitError, classify, isReply } from "./errors.js";
import { adapt } from "./client.js";
import { checkPrefix, limitsHash, stateKey } from "./keys.js";
import { MAX_SCRIPT_INT, UNIT_US, render } from "./limits.js";
import { openResult, resultOf } from "./result.js";
import { lookup } from "./scripts.js";
import { NotSupportedError, Reservation, checkEstimate, checkId, reserveOptions, reserves } from "./reservation.js";

/** The options of a limiter (a Semaphore takes them but countDenied). */
export const OPTIONS = ["prefix", "countDenied", "clock", "failOpen", "functions", "version"];

/** The earliest reading of a caller's clock taken as right (2000-01-01, in
 * ms): an earlier one is a clock in seconds read as milliseconds. */
export const CLOCK_FLOOR_MS = Date.UTC(2000, 0, 1);

/** checkOptions refuses options that are not an object, an option no
 * limiter knows (a typo, or another library's name: {keyPrefix: "x"}
 * would silently use the default prefix) and a clock that is not a
 * function. */
export function checkOptions(options, known = OPTIONS) {
  if (options === null || typeof options !== "object" || Array.isArray(options)) {
    throw new LimitError(-1, "options", `must be an object, got ${options === null ? "null" : typeof options}`);
  }
  for (const name of Object.keys(options)) {
    if (!known.includes(name)) throw new LimitError(-1, name, `is not an option; the options are ${known.join(", ")}`);
  }
  const { clock } = options;
  if (clock !== undefined && clock !== null && typeof clock !== "function") {
    throw new LimitError(-1, "Clock", `must be a function returning a Date or milliseconds since the epoch, got ${typeof clock}`);
  }
}

/** readingMs is a reading t of a caller's clock (a Date or milliseconds
 * since the epoch) in milliseconds; a LimitError for anything else or for
 * a reading before 2000 (a clock in seconds). */
export function readingMs(t) {
  const ms = t instanceof Date ? t.getTime() : t;
  if (typeof ms !== "number" || !Number.isFinite(ms)) {
    throw new LimitError(-1, "Clock", `must return a Date or milliseconds since the epoch, got ${t instanceof Date ? "an invalid Date" : `${typeof t} ${String(t)}`}`);
  }
  if (ms < CLOCK_FLOOR_MS) {
    throw new LimitError(-1, "Clock", `must read after 2000-01-01, got ${ms} ms (${new Date(ms).toISOString()}): a clock in seconds? return Date.now() or a Date`);
  }
  return ms;
}

/** Limiter decides events against a set of limits with one script; use
 * SlidingWindow, TokenBucket, ZSetLog or AR1. */
export class Limiter {
  constructor(scriptName, client, limits, options = {}) {
    if (client == null) throw new LimitError(-1, "client", "is missing");
    checkOptions(options);
    const { prefix = "ratelua", countDenied = false, clock = null, failOpen = false, functions = false, version } = options;
    const { unit, args, quotas } = render(scriptName, limits);
    checkPrefix(prefix);
    this.client = client;
    this.script = lookup(scriptName, version);
    Object.assign(this, { unit, prefix, clock, failOpen, functions });
    this._args = args;
    this._quotas = quotas;
    this._mode = countDenied ? "1" : "0";
    this._hash = limitsHash(this.script.name, this.script.stateVersion, unit, args);
    this._client = adapt(client);
  }

  /** version is the script version the limiter calls. */
  get version() { return this.script.version; }

  /** limits is how many limits the limiter checks. */
  get limits() { return this._quotas.length; }

  /** quota(i) is limit i as a policy: {max, window} (window in ms). */
  quota(i) {
    const q = this._quotas[i];
    return q ? { max: q[0], window: q[1] / 1000 } : { max: 0, window: 0 };
  }

  /** key returns the state key of eventKey (a Buffer), the Go API's byte for byte. */
  key(eventKey) {
    return stateKey(this.prefix, eventKey, this.script.name, this.script.stateVersion, this._hash);
  }

  /** now is the clock's reading in the unit; "" for the server's clock. */
  now() {
    if (!this.clock) return "";
    return this.nowOf(this.clock());
  }

  /** nowOf is a reading t of the caller's clock (a Date or ms) in the unit. */
  nowOf(t) {
    const ms = readingMs(t);
    const n = this.unit === "ms" ? Math.floor(ms) : Math.floor(ms * 1000);
    if (n > MAX_SCRIPT_INT) {
      throw new LimitError(-1, "Clock", `must read at most 2^52 ${this.unit} after 1970, got ${String(t)}`);
    }
    return String(n);
  }

  /** args(n) is the ARGV of a call with eventCount n, as the Go API sends it. */
  args(n, now = this.now()) {
    return [String(n), this.unit, now, this._mode, ...this._args];
  }

  /** allow records one event for eventKey and decides it. */
  allow(eventKey) { return this.allowN(eventKey, 1); }

  /** allowN records n events (n >= 1) for eventKey and decides them together. */
  async allowN(eventKey, n) {
    if (!Number.isSafeInteger(n) || n < 1 || n > MAX_SCRIPT_INT) {
      throw new LimitError(-1, "n", `must be in [1, 2^52], got ${String(n)}`);
    }
    return this._call(eventKey, n);
  }

  /** peek decides whether one more event would be admitted, recording nothing. */
  peek(eventKey) { return this._call(eventKey, 0); }

  /** reset deletes the state of eventKey: its next event starts fresh. */
  async reset(eventKey) {
    const r = await this._call(eventKey, -1);
    if (r.error) throw r.error;
  }

  /** reserves: the limiter's script takes reserve and settle (token_bucket
   * v7 does); reserve throws NotSupportedError otherwise. */
  get reserves() { return reserves(this.script); }

  /** reservationArgs is the ARGV of a reserve (n the estimate, mode
   * "reserve:<id>:<lifetime>") or a settle (n the actual cost, mode
   * "settle:<id>"). countDenied does not apply: a denied reserve records
   * nothing. */
  reservationArgs(n, mode, now = this.now()) {
    return [String(n), this.unit, now, mode, ...this._args];
  }

  /** reserve(eventKey, estimate, {lifetime, lifetimeMs, id}) reserves
   * estimate units before the work whose cost is known after it: decided as
   * allowN(estimate) (reservation.result) and, admitted, held until settle
   * or cancel, for at most the lifetime ("2m", or lifetimeMs; default
   * DEFAULT_LIFETIME_MS, 5 minutes). A reservation never settled stays
   * spent. id (in [1, 2^52]) is drawn at random unless given: give the same
   * id to retry a reserve whose outcome is unknown (a retried reserve
   * records nothing more). NotSupportedError, before any round trip, when
   * the script refuses the modes (every script but token_bucket v7, for
   * now). Under failOpen a reserve without an answer is admitted with the
   * error in result.error; its settle is sent all the same (it may have
   * been recorded; the script applies nothing for an id it never held). */
  async reserve(eventKey, estimate, options = {}) {
    if (!this.reserves) throw new NotSupportedError(this.script, "reserve");
    checkEstimate(estimate);
    const { units, id } = reserveOptions(this.unit, options);
    const key = this.key(eventKey);
    const args = this.reservationArgs(estimate, `reserve:${id}:${units}`);
    const name = String(this.script);
    let result;
    try {
      result = resultOf(await this._run(key, args), UNIT_US[this.unit], name);
    } catch (err) {
      const e = classify(name, err);
      if (!this.failOpen || e.name !== "UnavailableError") throw e;
      result = openResult(e);
    }
    return new Reservation(this, eventKey, id, estimate, result);
  }

  /** reservation(eventKey, id) is a handle on reservation id of eventKey
   * reserved elsewhere (another process, another language): its settle and
   * cancel are sent as the reserving process would send them. */
  reservation(eventKey, id) {
    if (!this.reserves) throw new NotSupportedError(this.script, "settle");
    checkId(id);
    return new Reservation(this, eventKey, id, 0, null);
  }

  async _settle(eventKey, actual, id) {
    const name = String(this.script);
    try {
      return resultOf(await this._run(this.key(eventKey), this.reservationArgs(actual, `settle:${id}`)), UNIT_US[this.unit], name);
    } catch (err) {
      throw classify(name, err); // never admitted: the caller may retry
    }
  }

  /** loadFunctions loads the release's library on every master (FUNCTION LOAD REPLACE). */
  loadFunctions() { return this._client.loadLibrary(this.script); }

  async _call(eventKey, n) {
    const key = this.key(eventKey);
    const args = this.args(n);
    const name = String(this.script);
    try {
      return resultOf(await this._run(key, args), UNIT_US[this.unit], name);
    } catch (err) {
      const e = classify(name, err);
      if (this.failOpen && e.name === "UnavailableError") return openResult(e);
      throw e;
    }
  }

  async _run(key, args) {
    const c = this._client, s = this.script;
    if (this.functions) {
      try {
        return await c.call("FCALL", s.function, key, args);
      } catch (err) {
        if (!isReply(err) || !/function not found/i.test(err.message)) throw err;
      }
      await c.loadLibrary(s);
      return c.call("FCALL", s.function, key, args);
    }
    try {
      return await c.call("EVALSHA", s.sha1, key, args);
    } catch (err) {
      if (!isReply(err) || !String(err.message).startsWith("NOSCRIPT")) throw err;
    }
    return c.call("EVAL", s.source, key, args);
  }
}

/** SlidingWindow checks every {max, duration, resolution} window at once (script sliding_window). */
export class SlidingWindow extends Limiter {
  constructor(client, windows, options) { super("sliding_window", client, windows, options); }
}

/** TokenBucket: {capacity, refillAmount, refillInterval} buckets (script token_bucket). */
export class TokenBucket extends Limiter {
  constructor(client, buckets, options) { super("token_bucket", client, buckets, options); }
}

/** ZSetLog: exact {max, window} sliding logs (script zset_log). */
export class ZSetLog extends Limiter {
  constructor(client, logs, options) { super("zset_log", client, logs, options); }
}

/** AR1: {max, factor, resolution} decaying counts (script ar1). */
export class AR1 extends Limiter {
  constructor(client, decays, options) { super("ar1", client, decays, options); }
}
