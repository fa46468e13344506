// The limits of each script, their checks and their arguments, exactly as
// the Go API renders them (so that both build the same state keys).
// Durations are milliseconds (numbers, exact to the microsecond).
import { LimitError } from "./errors.js";

/** Bound of now, durations and replies in the scripts: 2^52. */
export const MAX_SCRIPT_INT = 2 ** 52;
/** The most limits one call takes. */
export const MAX_LIMITS = 16;
export const UNIT_US = { ms: 1000, us: 1 };

/** micros converts a duration in milliseconds to whole microseconds. */
export function micros(ms, field) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) {
    throw new LimitError(-1, "durations", `${field} must be a number of milliseconds, got ${String(ms)}`);
  }
  const us = Math.round(ms * 1000);
  if (Math.abs(ms * 1000 - us) > 1e-6) throw new LimitError(-1, "durations", "durations must be whole microseconds");
  return us;
}

const show = (us) => `${us / 1e6}s`;

class Check {
  constructor(index, unit) { Object.assign(this, { index, unit, error: null }); }
  fail(field, reason) { if (!this.error) this.error = new LimitError(this.index, field, reason); }
  count(field, v, lo, hi) {
    if (!Number.isSafeInteger(v)) { this.fail(field, `must be an integer, got ${String(v)}`); return "0"; }
    if (v < lo || v > hi) this.fail(field, `must be in [${lo}, ${hi}], got ${v}`);
    return String(v);
  }
  duration(field, us) {
    const n = Math.trunc(us / UNIT_US[this.unit]);
    if (us <= 0 || n > MAX_SCRIPT_INT) this.fail(field, `must be positive and at most 2^52 ${this.unit}, got ${show(us)}`);
    return String(n);
  }
}

// Each kind: its fields in microseconds, its arguments, its quota (max and
// window in µs, as the Go API's Limiter.Quota).
const KINDS = {
  sliding_window: {
    durations: (w) => { const d = micros(w.duration, "duration"); return [d, w.resolution === undefined ? Math.trunc(d / 10) : micros(w.resolution, "resolution")]; },
    args(c, w, [d, r]) {
      const args = [c.count("Max", w.max, 1, 1e9), c.duration("Duration", d), c.duration("Resolution", r)];
      if (!c.error && r > d) c.fail("Resolution", `must be at most Duration, got ${show(r)} > ${show(d)}`);
      if (!c.error && Math.ceil(d / r) > 10000) c.fail("Resolution", `makes more than 10000 buckets in ${show(d)}`);
      return args;
    },
    quota: (w, [d]) => [w.max, d],
  },
  token_bucket: {
    durations: (b) => [micros(b.refillInterval, "refillInterval")],
    args(c, b, [i]) {
      const args = [c.count("Capacity", b.capacity, 1, 1e9), c.count("RefillAmount", b.refillAmount, 1, 1e9), c.duration("RefillInterval", i)];
      if (!c.error && b.capacity * Math.trunc(i / UNIT_US[c.unit]) > 2 ** 50) {
        c.fail("RefillInterval", `times Capacity must be at most 2^50 ${c.unit}, got ${b.capacity} * ${show(i)}`);
      }
      return args;
    },
    quota: (b, [i]) => [b.capacity, Math.ceil(i * b.capacity / Math.max(b.refillAmount, 1))],
  },
  zset_log: {
    durations: (g) => [micros(g.window, "window")],
    args: (c, g, [w]) => [c.count("Max", g.max, 1, 1e4), c.duration("Window", w)],
    quota: (g, [w]) => [g.max, w],
  },
  concurrency: {
    durations: (s) => [micros(s.lease, "lease")],
    args: (c, s, [l]) => [c.count("Max", s.max, 1, 1e6), c.duration("Lease", l)],
    quota: (s, [l]) => [s.max, l],
  },
  ar1: {
    durations: (d) => [micros(d.resolution, "resolution")],
    args(c, d, [r]) {
      const f = Number(d.factor);
      const permille = Math.floor(f * 1000 + 0.5);
      if (Number.isNaN(f) || permille < 1001 || permille > 1e9 || Math.abs(f * 1000 - permille) > 1e-6) {
        c.fail("Factor", `must be in [1.001, 10^6] with at most 3 decimals, got ${String(d.factor)}`);
      }
      return [c.count("Max", d.max, 1, 1e9), String(Number.isNaN(permille) ? 0 : permille), c.duration("Resolution", r)];
    },
    quota: (d, [r]) => [d.max, Math.ceil(r * d.factor / (d.factor - 1))],
  },
};

/** render returns the unit, the limit arguments and the quotas of limits
 * for script; throws LimitError like the Go API. */
export function render(script, limits) {
  if (!Array.isArray(limits) || limits.length < 1 || limits.length > MAX_LIMITS) {
    throw new LimitError(-1, "limits", `must be 1 to ${MAX_LIMITS}, got ${Array.isArray(limits) ? limits.length : typeof limits}`);
  }
  const kind = KINDS[script];
  const durations = limits.map((l, i) => {
    if (l === null || typeof l !== "object") throw new LimitError(i, "limit", `must be an object, got ${String(l)}`);
    return kind.durations(l);
  });
  const unit = durations.flat().every((d) => d % 1000 === 0) ? "ms" : "us";
  const args = [];
  limits.forEach((l, i) => {
    const c = new Check(i, unit);
    const rendered = kind.args(c, l, durations[i]);
    if (c.error) throw c.error;
    args.push(...rendered);
  });
  return { unit, args, quotas: limits.map((l, i) => kind.quota(l, durations[i])) };
}
