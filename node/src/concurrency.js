// Concurrency: at most max slots held at once across every process that
// shares a key (script concurrency), each by a lease that comes back on its
// own when its holder stops renewing it. The state key and ARGV are the Go
// API's (ratelua.NewConcurrency), so Go, Python and Node holders share one
// semaphore. No background renewal: a holder whose work may outlast the
// lease calls lease.renew() itself, more often than the lease time.
import { createHash } from "node:crypto";
import { LeaseLostError, LimitError, classify } from "./errors.js";
import { Limiter, OPTIONS, checkOptions, readingMs } from "./limiter.js";
import { MAX_SCRIPT_INT, UNIT_US } from "./limits.js";
import { openResult, resultOf } from "./result.js";

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
  }

  /** version is the script version the semaphore calls. */
  get version() { return this._l.version; }

  /** key returns the state key of eventKey (a Buffer), the Go API's byte for byte. */
  key(eventKey) { return this._l.key(eventKey); }

  /** args(n) is the ARGV of an acquire of n slots (0: peek, < 0: reset), as the Go API's Semaphore.Args. */
  args(n, now = this._l.now()) { return this._opArgs(n, now, "0", 0); }

  /** acquire takes one slot: {lease, result}, lease null when denied. */
  acquire(eventKey) { return this.acquireN(eventKey, 1); }

  /** acquireN takes n slots (n >= 1) as one lease, all or none. */
  async acquireN(eventKey, n) {
    if (!Number.isSafeInteger(n) || n < 1 || n > MAX_SCRIPT_INT) {
      throw new LimitError(-1, "n", `must be in [1, 2^52], got ${String(n)}`);
    }
    let at, reply;
    try {
      [at, reply] = await this._op(eventKey, n, "0", 0);
    } catch (err) {
      if (this._l.failOpen && err.name === "UnavailableError") {
        return { lease: new Lease(this, eventKey, n, 0, null), result: openResult(err) };
      }
      throw err;
    }
    const result = this._decode(reply);
    return { lease: result.allowed ? new Lease(this, eventKey, n, reply[4], at) : null, result };
  }

  /** peek decides whether one more slot is free, holding nothing. */
  async peek(eventKey) { return this._decode((await this._op(eventKey, 0, "0", 0))[1]); }

  /** reset drops every lease of eventKey: their holders lose them. */
  async reset(eventKey) { await this._op(eventKey, -1, "0", 0); }

  /** loadFunctions loads the release's library on every master. */
  loadFunctions() { return this._l.loadFunctions(); }

  _opArgs(n, now, mode, id) {
    const args = [String(n), this.unit, now, mode, ...this._l._args];
    if (mode !== "0") args.push(String(id));
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
