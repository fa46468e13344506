// An Express middleware (any (req, res, next) server will do: it uses only
// res.setHeader, res.statusCode and res.end) with the same fields as
// ratelua's Go ratehttp: RateLimit-Policy and RateLimit
// (draft-ietf-httpapi-ratelimit-headers), Retry-After, an RFC 9457
// problem+json body on 429 and 503, and the same trusted-proxy rules.
import { RateluaError } from "./errors.js";
import { checkActual } from "./reservation.js";
import { OptionError, Resolver, parseAddr } from "./address.js";

const MAX_SF_INTEGER = 999_999_999_999_999;
const QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded";
const HEADERS = ["ietf", "ietf+legacy", "none"];
const OPTION_NAMES = { TrustedProxies: "trustedProxies", ProxyHeader: "proxyHeader", IPv4Prefix: "ipv4Prefix", IPv6Prefix: "ipv6Prefix" };
const OPTIONS = ["limits", "trustedProxies", "proxyHeader", "ipv4Prefix", "ipv6Prefix", "headers", "skip", "onError", "clock", "onSettled"];

// RESERVED is the property of a response holding its request's reservations
// and the costs its handler reported (see settle).
const RESERVED = Symbol("ratelua.reservations");

/** settle(res, actual, name) reports the actual cost of the request whose
 * response res is, for every limit that reserved for it (or only for the
 * limit named name). The middleware settles with it when the response
 * closes: sent, ended by an error, or its client gone; report it before
 * ending the response. A later report replaces an earlier one. A request
 * whose limits reserved nothing (an estimate below 1, an exempt key) takes
 * the report and sends nothing. It throws when no rateLimit middleware with
 * a reserving limit ran for res (nothing would settle), and a LimitError
 * for an actual that is not an integer in [0, 2^52]. */
export function settle(res, actual, name = null) {
  checkActual(actual);
  const held = res && res[RESERVED];
  if (!held) throw new TypeError("ratelua/express: settle: no rateLimit middleware whose limits reserve ({reserve}) ran for this response: nothing would settle its cost");
  held.actual.set(name, actual);
}

/** ConfigError is a mistake in the middleware's options or limits. */
export class ConfigError extends RateluaError {
  constructor(message) { super(`ratelua/express: invalid configuration: ${message}`); this.name = "ConfigError"; }
}

const ceilSeconds = (us) => Math.min(Math.ceil(us / 1e6), MAX_SF_INTEGER);
const sfString = (s) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

/** short writes a window (ms) the short way, as the Go API names policies:
 * 5s, 1h, 1h30m; 1.5s, 250ms otherwise. */
export function short(ms) {
  const us = Math.round(ms * 1000);
  if (us > 0 && us % 1e6 === 0) {
    const s = us / 1e6, h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    return (h ? `${h}h` : "") + (m ? `${m}m` : "") + (sec ? `${sec}s` : "");
  }
  const frac = (v, unit) => {
    const whole = Math.floor(v / unit), f = v % unit;
    return f ? `${whole}.${String(f).padStart(String(unit).length - 1, "0").replace(/0+$/, "")}` : String(whole);
  };
  if (us < 1000) return `${us}µs`;
  if (us < 1e6) return frac(us, 1000) + "ms";
  const h = Math.floor(us / 3.6e9), m = Math.floor((us % 3.6e9) / 6e7);
  return (h ? `${h}h` : "") + (h || m ? `${m}m` : "") + frac(us % 6e7, 1e6) + "s";
}

function checkName(name) {
  if (!name) return "is empty";
  const b = Buffer.from(name, "utf8");
  for (let i = 0; i < b.length; i++) {
    if (b[i] < 0x20 || b[i] > 0x7e) return `has byte 0x${b[i].toString(16).padStart(2, "0")} at ${i}: an sf-string holds printable ASCII only`;
  }
  return null;
}

/** problemBody is JSON as Go's encoding/json writes it, and a newline. */
export function problemBody(p) {
  return JSON.stringify(p).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026") + "\n";
}

/** rateLimit returns the middleware. Options: limits ([{limiter, name,
 * names, key(req) -> string|null (null: not limited; default the client's
 * address), cost(req) -> number, exempt: [keys]}]), trustedProxies,
 * proxyHeader ("X-Forwarded-For", "Forwarded", "X-Real-IP"), ipv4Prefix,
 * ipv6Prefix (0: 32 and 64), headers ("ietf", "ietf+legacy", "none"),
 * skip(req), onError(req, err), clock() (ms, for X-RateLimit-Reset),
 * onSettled(req, settlements) (called when a request's reservations are
 * settled).
 *
 * A limit with reserve(req) -> number (instead of cost) reserves that
 * estimate for a cost known only after the work (LLM tokens, response
 * bytes; the limiter must take reserve: token_bucket v7), for lifetime
 * ("2m", or lifetimeMs; default 5 minutes). When the response closes — sent,
 * ended by an error, or its client gone — it settles with what the handler
 * reported by settle(res, n), or with the estimate when it reported nothing
 * (the reservation stays spent). A request that never reaches the handler
 * (another limit denied it, or could not decide it) cancels its
 * reservations.
 *
 * The client's address: without trustedProxies the middleware follows
 * Express's "trust proxy" setting: the address is req.ip, which Express
 * reads from X-Forwarded-For through the proxies that setting trusts (the
 * connection's address when the app trusts none, or outside Express); a
 * req.ip that is no address (a client's text, when the app trusts every
 * hop) counts as the connection's address. With trustedProxies (an empty
 * array included) it ignores Express's setting and reads proxyHeader by the
 * rule of Go's ratehttp (package clientaddr): the rightmost address that is
 * not a trusted proxy, Forwarded parsed strictly. */
export function rateLimit(options = {}) {
  for (const name of Object.keys(options)) {
    if (!OPTIONS.includes(name)) throw new ConfigError(`unknown option ${JSON.stringify(name)} (the options are ${OPTIONS.join(", ")})`);
  }
  const {
    limits = [], trustedProxies, proxyHeader, ipv4Prefix = 0, ipv6Prefix = 0,
    headers = "ietf", skip = null, onError = null, clock = Date.now, onSettled = null,
  } = options;
  if (limits.length === 0) throw new ConfigError("no limit");
  if (!HEADERS.includes(headers)) throw new ConfigError(`headers ${JSON.stringify(headers)} is not one of ${HEADERS.join(", ")}`);
  if (trustedProxies === undefined && proxyHeader !== undefined) {
    throw new ConfigError(`proxyHeader ${JSON.stringify(proxyHeader)} needs trustedProxies: without them the middleware follows Express's "trust proxy" setting (req.ip), which reads X-Forwarded-For only`);
  }
  let resolver;
  try {
    resolver = new Resolver({ trustedProxies: trustedProxies ?? [], proxyHeader: proxyHeader ?? "X-Forwarded-For", ipv4Prefix, ipv6Prefix });
  } catch (err) {
    if (!(err instanceof OptionError)) throw err;
    throw new ConfigError(`${OPTION_NAMES[err.option]}${err.index >= 0 ? `[${err.index}]` : ""} ${err.reason}`);
  }
  const header = resolver.header.toLowerCase();
  const followExpress = trustedProxies === undefined;

  const seen = new Map(), items = [];
  const built = limits.map((l, i) => {
    if (!l || !l.limiter) throw new ConfigError(`limit ${i} has no limiter`);
    if (l.reserve) {
      if (l.cost) throw new ConfigError(`limit ${i} has both cost and reserve: keep one`);
      if (!l.limiter.reserves) throw new ConfigError(`limit ${i} reserves, but its limiter (${l.limiter.script}) does not take reserve and settle (token_bucket v7 does)`);
    } else if (l.lifetime !== undefined || l.lifetimeMs !== undefined) {
      throw new ConfigError(`limit ${i} has a lifetime but no reserve`);
    }
    const count = l.limiter.limits;
    let names = l.names;
    if (names && names.length !== count) throw new ConfigError(`limit ${i} has ${names.length} names for a limiter of ${count} limits`);
    if (!names && !l.name) throw new ConfigError(`limit ${i} has no name`);
    if (!names) names = count === 1 ? [l.name] : Array.from({ length: count }, (_, j) => `${l.name}-${short(l.limiter.quota(j).window)}`);
    const policies = names.map((name, j) => {
      const why = checkName(name);
      if (why) throw new ConfigError(`limit ${i}: policy name ${JSON.stringify(name)} ${why}`);
      const { max, window } = l.limiter.quota(j);
      if (seen.has(name)) {
        throw new ConfigError(seen.get(name) === i ? `limit ${i} names two policies ${JSON.stringify(name)}: set names`
          : `limits ${seen.get(name)} and ${i} both name a policy ${JSON.stringify(name)}`);
      }
      seen.set(name, i);
      const windowUs = Math.round(window * 1000);
      items.push(`${sfString(name)};q=${max};w=${Math.max(1, ceilSeconds(windowUs))}`);
      return { name, item: sfString(name), quota: max, windowUs };
    });
    const lifetime = l.lifetime !== undefined ? { lifetime: l.lifetime } : l.lifetimeMs !== undefined ? { lifetimeMs: l.lifetimeMs } : {};
    return { limiter: l.limiter, name: l.name ?? null, key: l.key, cost: l.cost, reserve: l.reserve, lifetime, exempt: new Set(l.exempt || []), policies };
  });
  const policy = items.join(", ");

  /** clientKey is the key of the request's client address. */
  function clientKey(req) {
    const peer = String(req.socket?.remoteAddress ?? "");
    if (followExpress) {
      const ip = typeof req.ip === "string" ? parseAddr(req.ip) : null;
      return ip ? resolver.group(ip) : resolver.key(peer, []);
    }
    let fields = req.headersDistinct ? req.headersDistinct[header] : req.headers?.[header];
    if (fields === undefined) fields = [];
    else if (!Array.isArray(fields)) fields = [String(fields)];
    return resolver.key(peer, fields);
  }

  function setFields(res, rep, denied) {
    if (headers === "none") return;
    res.setHeader("RateLimit-Policy", policy);
    if (!rep.p) return;
    let value = `${rep.p.item};r=${Math.min(rep.res.remaining, MAX_SF_INTEGER)}`;
    if (rep.wait >= 0) value += `;t=${ceilSeconds(rep.wait)}`;
    res.setHeader("RateLimit", value);
    if (denied && rep.wait >= 0) res.setHeader("Retry-After", String(ceilSeconds(rep.wait)));
    if (headers === "ietf+legacy") {
      res.setHeader("X-RateLimit-Limit", String(rep.p.quota));
      res.setHeader("X-RateLimit-Remaining", String(Math.min(rep.res.remaining, MAX_SF_INTEGER)));
      if (rep.wait >= 0) res.setHeader("X-RateLimit-Reset", String(Math.ceil((clock() + rep.wait / 1000) / 1000)));
    }
  }

  function problem(res, status, body) {
    const data = problemBody(body);
    res.statusCode = status;
    res.setHeader("Content-Type", "application/problem+json");
    res.setHeader("Content-Length", String(Buffer.byteLength(data)));
    res.setHeader("X-Content-Type-Options", "nosniff");
    res.end(data);
  }

  // settleAll settles the reservations taken for a request: with the cost
  // reported for the limit's name, else for every limit, else the estimate;
  // with 0 (a cancel) when the handler never ran.
  async function settleAll(req, held, mine, ran) {
    const out = await Promise.all(mine.map(async ({ l, r }) => {
      const actual = !ran ? 0 : held.actual.has(l.name) ? held.actual.get(l.name) : held.actual.has(null) ? held.actual.get(null) : r.estimate;
      try {
        return await r.settle(actual);
      } catch (err) {
        if (onError) onError(req, err);
        return null;
      }
    }));
    if (onSettled) onSettled(req, out);
  }

  const middleware = async function rateLimitMiddleware(req, res, next) {
    if (skip && skip(req)) return next();
    const rep = { p: null, res: null, wait: -1 }; // wait: t in µs, -1 none
    let client = null;
    const mine = [];
    let held = null;
    if (built.some((l) => l.reserve)) {
      held = res[RESERVED] ??= { actual: new Map() }; // shared with an outer middleware's
    }
    // refuse ends a request that never reaches the handler: its
    // reservations come back first.
    const refuse = async (status, body) => {
      if (mine.length > 0) await settleAll(req, held, mine, false);
      return problem(res, status, body);
    };
    for (const l of built) {
      let key;
      if (!l.key) key = client ??= clientKey(req);
      else if ((key = l.key(req)) == null) continue;
      if (l.exempt.has(key)) continue;
      let n = 1;
      if ((l.cost || l.reserve) && (n = (l.cost || l.reserve)(req)) < 1) continue;
      let r;
      try {
        if (l.reserve) {
          const reservation = await l.limiter.reserve(key, n, l.lifetime);
          r = reservation.result;
          if (reservation.allowed) mine.push({ l, r: reservation });
        } else {
          r = await l.limiter.allowN(key, n);
        }
      } catch (err) {
        if (onError) onError(req, err);
        setFields(res, rep, false);
        return refuse(503, { type: "about:blank", title: "Service Unavailable", status: 503, detail: "the rate limiter could not decide this request" });
      }
      if (r.error) {
        if (onError) onError(req, r.error);
        continue;
      }
      consider(rep, l, r);
      if (!r.allowed) {
        setFields(res, rep, true);
        const p = rep.p, body = { type: QUOTA_EXCEEDED, title: "Quota Exceeded", status: 429 };
        if (headers !== "none") {
          body.detail = rep.res.retryAfterUs < 0
            ? `this request costs ${n}, more than policy ${JSON.stringify(p.name)} allows (${p.quota}): it can never pass`
            : `policy ${JSON.stringify(p.name)} allows this request in ${ceilSeconds(rep.res.retryAfterUs)} s`;
        }
        body["violated-policies"] = [p.name];
        return refuse(429, body);
      }
    }
    setFields(res, rep, false);
    if (mine.length > 0) {
      // "close" comes after "finish", or alone when the response ends early
      // (an error, its client gone).
      res.once("close", () => { settleAll(req, held, mine, true); });
    }
    return next();
  };
  middleware.clientKey = clientKey;
  return middleware;
}

// consider keeps the result whose deciding limit is closest to running out.
function consider(rep, l, r) {
  if (r.limit < 0 || r.limit >= l.policies.length) return;
  const p = l.policies[r.limit];
  const wait = !r.allowed ? (r.retryAfterUs < 0 ? -1 : r.retryAfterUs) : Math.min(p.windowUs, r.resetAfterUs);
  if (rep.p) {
    if (r.allowed !== rep.res.allowed) { if (r.allowed) return; }
    else if (!r.allowed) { if (!longer(wait, rep.wait)) return; }
    else if (r.remaining !== rep.res.remaining) { if (r.remaining > rep.res.remaining) return; }
    else if (!longer(wait, rep.wait)) return;
  }
  Object.assign(rep, { p, res: r, wait });
}

const longer = (a, b) => (b < 0 ? false : a < 0 ? true : a > b);
