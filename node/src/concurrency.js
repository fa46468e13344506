// Concurrency: at most max slots held at once across every process that
// shares a key (script concurrency), each by a lease that comes back on its
// own when its holder stops renewing it. The state key and ARGV are the Go
// API's (ratelua.NewConcurrency), so Go, Python and Node holders share one
// semaphore. No background renewal: a holder whose work may outlast the
// lease calls lease.renew() itself, more often than the lease time.
import { createHash, randomInt } from "node:crypto";
import { LeaseLostError, LimitError, classify, isReply } from "./errors.js";
import { Limiter, OPTIONS, checkOptions, readingMs } from "./limiter.js";
import { MAX_SCRIPT_INT, UNIT_US } from "./limits.js";
import { openResult, resultOf } from "./result.js";

/** UNKNOWN_RELEASE_MS bounds the background release of an acquire whose
 * outcome is unknown (at most the lease time, after which the slots are
 * free anyway), as the Go API's. */
export const UNKNOWN_RELEASE_MS = 2000;

// timeoutNames are the errors of a call that ran out of its time (the
// caller's bound) rather than of a server that could not be reached.
const timeoutNames = new Set(["TimeoutError", "SocketTimeoutError", "AbortError", "ConnectionTimeoutError"]);

// gaveUp reports an UnavailableError whose cause is a timeout: such an
// acquire may hold slots until its background release, so failOpen does
// not admit it.
function gaveUp(err) {
  const c = err && err.cause;
  return !!c && (timeoutNames.has(c.name) || timeoutNames.has(c.constructor && c.constructor.name) ||
    /timed out|timeout/i.test(String(c.message)));
}

// newLeaseId is a random lease id in [1, 2^52].
function newLeaseId() {
  // randomInt takes ranges below 2^48: two draws make 52 bits.
  return (randomInt(2 ** 26) * 2 ** 26 + randomInt(2 ** 26)) + 1;
}

/** Semaphore holds at most slots.max slots at once per event key, by
 * leases of slots.lease ms (script concurrency). */
export class Semaphore {
  constructor(client, slots, options = {}) {
    if (options && options.countDenied !== undefined) {
      throw new LimitError(-1, "CountDenied", "does not apply to concurrency: a denied acquire holds nothing");
    }
    checkOptions(options, OPTIONS.filter((o) => o !== "countDenied"));
    const l = new Limiter("concurrency", client, [slots], options);
    // One key per event key whatever max and the lease time: the hash names
    // only the script's state version and the unit (as in Go).
    l._hash = createHash("sha1").update(`${l.script.name}@v${l.script.stateVersion} ${l.unit}`).digest("hex").slice(0, 8);
    this._l = l;
    this.slots = { max: slots.max, leaseMs: l._quotas[0][1] / 1000 };
    this.unit = l.unit;
    this.prefix = l.prefix;
    this.script = l.script;
    this._leaseMs = l._quotas[0][1] / 1000;
    this._slackMs = UNIT_US[l.unit] / 1000;
    // The background releases under way (see acquireN).
    this._releases = new Set();
  }

  /** version is the script version the semaphore calls. */
  get version() { return this._l.version; }

  /** key returns the state key of eventKey (a Buffer), the Go API's byte for byte. */
  key(eventKey) { return this._l.key(eventKey); }

  /** args(n) is the ARGV of an acquire of n slots (0: peek, < 0: reset), as the Go API's Semaphore.Args. */
  args(n, now = this._l.now()) { return this._opArgs(n, now, "0", 0); }

  /** acquire takes one slot: {lease, result}, lease null when denied. */
  acquire(eventKey) { return this.acquireN(eventKey, 1); }

  /** acquireN takes n slots (n >= 1) as one lease, all or none.
   *
   * From script version 6 (the default) the lease id is chosen here, at
   * random, and sent with the acquire. When the call is rejected without the
   * server's answer (a timeout, a connection lost), the server may hold the
   * slots: they are released by that id in the background, within
   * UNKNOWN_RELEASE_MS (settled() waits for it). failOpen never admits an
   * acquire that timed out; one whose server could not be reached it admits
   * with a local lease. Version 5 numbers the lease itself, so there such
   * slots come back only when the lease expires. */
  async acquireN(eventKey, n) {
    if (!Number.isSafeInteger(n) || n < 1 || n > MAX_SCRIPT_INT) {
      throw new LimitError(-1, "n", `must be in [1, 2^52], got ${String(n)}`);
    }
    const id = this.script.version >= 6 ? newLeaseId() : 0;
    let at, reply;
    try {
      [at, reply] = await this._op(eventKey, n, "0", id);
    } catch (err) {
      // No answer, or an error of the client that is not the server's answer.
      const unknown = err.name === "UnavailableError" || (err.name === "ScriptError" && !!err.cause && !isReply(err.cause));
      if (unknown && id !== 0) this._releaseUnknown(eventKey, n, id);
      if (this._l.failOpen && err.name === "UnavailableError" && !gaveUp(err)) {
        return { lease: new Lease(this, eventKey, n, 0, null), result: openResult(err) };
      }
      throw err;
    }
    const result = this._decode(reply);
    return { lease: result.allowed ? new Lease(this, eventKey, n, reply[4], at) : null, result };
  }

  // _releaseUnknown releases, in the background and within
  // UNKNOWN_RELEASE_MS, lease id of n slots of eventKey, whose acquire has an
  // unknown outcome. A lease the server does not hold is left alone; a
  // failure leaves the slots to the lease's expiry.
  _releaseUnknown(eventKey, n, id) {
    let timer;
    const bound = new Promise((resolve) => {
      timer = setTimeout(resolve, Math.min(UNKNOWN_RELEASE_MS, this._leaseMs));
      if (timer.unref) timer.unref();
    });
    const p = Promise.race([this._op(eventKey, n, "release", id).catch(() => {}), bound])
      .finally(() => { clearTimeout(timer); this._releases.delete(p); });
    this._releases.add(p);
  }

  /** settled() resolves when the background releases of acquires whose
   * outcome was unknown have ended (each within UNKNOWN_RELEASE_MS). */
  async settled() {
    while (this._releases.size > 0) await Promise.all([...this._releases]);
  }

  /** peek decides whether one more slot is free, holding nothing. */
  async peek(eventKey) { return this._decode((await this._op(eventKey, 0, "0", 0))[1]); }

  /** reset drops every lease of eventKey: their holders lose them. */
  async reset(eventKey) { await this._op(eventKey, -1, "0", 0); }

  /** loadFunctions loads the release's library on every master. */
  loadFunctions() { return this._l.loadFunctions(); }

  _opArgs(n, now, mode, id) {
    const args = [String(n), this.unit, now, mode, ...this._l._args];
    if (id !== 0) args.push(String(id));
    return args;
  }

  // _reading is the time of a call (ms) and its now argument.
  _reading() {
    const l = this._l;
    if (!l.clock) return [Date.now(), ""];
    const t = l.clock();
    return [readingMs(t), l.nowOf(t)];
  }

  _nowMs() {
    if (!this._l.clock) return Date.now();
    return readingMs(this._l.clock());
  }

  _decode(reply) {
    const r = resultOf(reply, UNIT_US[this.unit], String(this.script));
    r.limit = reply[4] !== 0 ? 0 : -1;
    return r;
  }

  async _op(eventKey, n, mode, id) {
    const [at, now] = this._reading();
    try {
      const reply = await this._l._run(this.key(eventKey), this._opArgs(n, now, mode, id));
      this._decode(reply); // the shape
      return [at, reply];
    } catch (err) {
      throw classify(String(this.script), err);
    }
  }
}

/** Concurrency is the Go API's name (NewConcurrency) for a Semaphore. */
export const Concurrency = Semaphore;

/** Lease: slots held on one semaphore key until released or lost. */
export class Lease {
  constructor(sem, eventKey, slots, id, at) {
    this._sem = sem;
    this.eventKey = eventKey;
    this.slots = slots;
    this.id = id;
    /** local: admitted by failOpen without an answer; renew and release do nothing. */
    this.local = at === null;
    this._deadline = at === null ? null : this._deadlineOf(at);
    this._released = false;
    this._error = null;
  }

  _deadlineOf(at) { return at + this._sem._leaseMs - this._sem._slackMs; }

  /** deadline: when the lease is lost unless renewed before (ms since the epoch, on the semaphore's clock). */
  get deadline() { this._checkDeadline(); return this._deadline; }

  /** error: why the lease was lost (a LeaseLostError), null while held. */
  get error() { this._checkDeadline(); return this._error; }

  /** lost: the lease is known not to be held any more. */
  get lost() { return this.error !== null; }

  _checkDeadline() {
    if (!this._error && !this._released && !this.local && this._sem._nowMs() >= this._deadline) {
      this._lose("not renewed before its deadline");
    }
  }

  _lose(reason) {
    if (!this._error) this._error = new LeaseLostError(this.id, reason);
    return this._error;
  }

  /** renew extends the lease to a full lease time from now; rejects with
   * LeaseLostError when the lease is no longer held. */
  async renew() {
    if (this.local) return;
    this._checkDeadline();
    if (this._error) throw this._error;
    if (this._released) throw new LeaseLostError(this.id, "was released");
    const [at, reply] = await this._sem._op(this.eventKey, this.slots, "renew", this.id);
    if (this._released && !this._error) throw new LeaseLostError(this.id, "was released");
    if (reply[0] !== 1) throw this._lose("the server does not hold it (expired, reset, or forgotten by a failover)");
    const deadline = this._deadlineOf(at);
    if (!this._error && deadline > this._deadline) this._deadline = deadline;
    if (this._error) throw this._error;
  }

  /** release gives the slots back; a second release does nothing, a
   * release of a lost lease rejects with LeaseLostError. */
  async release() {
    if (this._released || this.local) {
      this._released = true;
      return;
    }
    this._checkDeadline();
    this._released = true;
    if (this._error) throw this._error;
    const [, reply] = await this._sem._op(this.eventKey, this.slots, "release", this.id);
    if (reply[0] !== 1) throw this._lose("the server did not hold it any more (expired, reset, or forgotten by a failover)");
  }
}
