// The limits of each script, their checks and their arguments, exactly as
// the Go API renders them (so that both build the same state keys).
// A duration names its unit: <field>Ms, a number of milliseconds (exact to
// the microsecond), or <field> as a string with units, "10s", "1.5s",
// "250ms", "1h30m", "100us". A bare number in <field> is refused: 60 could
// be seconds or milliseconds.
import { LimitError } from "./errors.js";

/** Bound of now, durations and replies in the scripts: 2^52. */
export const MAX_SCRIPT_INT = 2 ** 52;
/** The most limits one call takes. */
export const MAX_LIMITS = 16;
export const UNIT_US = { ms: 1000, us: 1 };

const UNIT_OF_TEXT = { us: 1, "µs": 1, ms: 1000, s: 1e6, m: 60e6, h: 3600e6 };
const DURATION_TEXT = /^(\d+(?:\.\d*)?|\.\d+)(us|µs|ms|s|m|h)/;

/** parseDuration reads a duration with units ("10s", "1.5s", "250ms",
 * "1h30m", "100us") as microseconds; null when it is not one. */
export function parseDuration(text) {
  let rest = text.trim(), us = 0;
  if (rest === "") return null;
  while (rest !== "") {
    const m = DURATION_TEXT.exec(rest);
    if (!m) return null;
    us += Number(m[1]) * UNIT_OF_TEXT[m[2]];
    rest = rest.slice(m[0].length);
  }
  return us;
}

const shown = (v) => (typeof v === "string" ? JSON.stringify(v) : String(v));

/** micros reads the duration field name of limit l (index i; its Go name
 * goField) as whole microseconds: from <name>Ms (milliseconds) or <name>
 * (a string with units). undefined when it is absent and optional. */
export function micros(l, i, name, goField, optional = false) {
  const msName = `${name}Ms`;
  const hasMs = l[msName] !== undefined, hasText = l[name] !== undefined;
  const how = `write ${msName}: <milliseconds> or ${name}: "<duration>" such as "10s", "250ms", "1h"`;
  if (hasMs && hasText) throw new LimitError(i, goField, `is given twice, as ${name} and ${msName}: keep one`);
  if (!hasMs && !hasText) {
    if (optional) return undefined;
    throw new LimitError(i, goField, `is missing: ${how}`);
  }
  let us;
  if (hasMs) {
    const ms = l[msName];
    if (typeof ms !== "number" || !Number.isFinite(ms)) {
      throw new LimitError(i, goField, `${msName} must be a finite number of milliseconds, got ${shown(ms)}`);
    }
    us = ms * 1000;
  } else {
    const v = l[name];
    if (typeof v === "number") {
      throw new LimitError(i, goField, `${name}: ${v} names no unit (seconds or milliseconds?): write ${msName}: ${v} for ${v} ms, or ${name}: "${v}s" for ${v} seconds`);
    }
    us = typeof v === "string" ? parseDuration(v) : null;
    if (us === null) throw new LimitError(i, goField, `${name} must be a duration with units, such as "10s", "250ms", "1h30m" or "100us", got ${shown(v)}`);
  }
  const whole = Math.round(us);
  if (us > 0 && whole === 0) throw new LimitError(i, goField, `is below the resolution floor of 1 µs, got ${us} µs`);
  if (Math.abs(us - whole) > 1e-6 * Math.max(1, Math.abs(us) / 1e6)) {
    throw new LimitError(i, goField, `must be a whole number of microseconds, got ${us} µs`);
  }
  return whole;
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
    fields: ["max", "duration", "resolution"],
    durations: (w, i) => {
      const d = micros(w, i, "duration", "Duration");
      const r = micros(w, i, "resolution", "Resolution", true);
      return [d, r === undefined ? Math.trunc(d / 10) : r];
    },
    args(c, w, [d, r]) {
      const args = [c.count("Max", w.max, 1, 1e9), c.duration("Duration", d), c.duration("Resolution", r)];
      if (!c.error && r > d) c.fail("Resolution", `must be at most Duration, got ${show(r)} > ${show(d)}`);
      if (!c.error && Math.ceil(d / r) > 10000) c.fail("Resolution", `makes more than 10000 buckets in ${show(d)}`);
      return args;
    },
    quota: (w, [d]) => [w.max, d],
  },
  token_bucket: {
    fields: ["capacity", "refillAmount", "refillInterval"],
    durations: (b, i) => [micros(b, i, "refillInterval", "RefillInterval")],
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
    fields: ["max", "window"],
    durations: (g, i) => [micros(g, i, "window", "Window")],
    args: (c, g, [w]) => [c.count("Max", g.max, 1, 1e4), c.duration("Window", w)],
    quota: (g, [w]) => [g.max, w],
  },
  concurrency: {
    fields: ["max", "lease"],
    durations: (s, i) => [micros(s, i, "lease", "Lease")],
    args: (c, s, [l]) => [c.count("Max", s.max, 1, 1e6), c.duration("Lease", l)],
    quota: (s, [l]) => [s.max, l],
  },
  ar1: {
    fields: ["max", "factor", "resolution"],
    durations: (d, i) => [micros(d, i, "resolution", "Resolution")],
    args(c, d, [r]) {
      const f = d.factor;
      if (typeof f !== "number") c.fail("Factor", `must be a number, got ${shown(f)}`);
      const permille = Number.isFinite(f) ? Math.floor(f * 1000 + 0.5) : 0;
      if (!Number.isFinite(f) || permille < 1001 || permille > 1e9 || Math.abs(f * 1000 - permille) > 1e-6) {
        c.fail("Factor", `must be in [1.001, 10^6] with at most 3 decimals, got ${shown(f)}`);
      }
      return [c.count("Max", d.max, 1, 1e9), String(c.error ? 0 : permille), c.duration("Resolution", r)];
    },
    quota: (d, [r]) => [d.max, Math.ceil(r * d.factor / (d.factor - 1))],
  },
};

// The fields that are durations (given as <field>Ms or <field> with units).
const DURATION_FIELDS = new Set(["duration", "resolution", "refillInterval", "window", "lease"]);

/** render returns the unit, the limit arguments and the quotas of limits
 * for script; throws LimitError like the Go API. */
export function render(script, limits) {
  if (!Array.isArray(limits) || limits.length < 1 || limits.length > MAX_LIMITS) {
    throw new LimitError(-1, "limits", `must be 1 to ${MAX_LIMITS}, got ${Array.isArray(limits) ? limits.length : typeof limits}`);
  }
  const kind = KINDS[script];
  const known = kind.fields.flatMap((f) => (DURATION_FIELDS.has(f) ? [f, `${f}Ms`] : [f]));
  const durations = limits.map((l, i) => {
    if (l === null || typeof l !== "object") throw new LimitError(i, "limit", `must be an object, got ${String(l)}`);
    for (const name of Object.keys(l)) {
      if (!known.includes(name)) throw new LimitError(i, name, `is not a field of a ${script} limit; the fields are ${known.join(", ")}`);
    }
    return kind.durations(l, i);
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
