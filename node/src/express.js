// An Express middleware (any (req, res, next) server will do: it uses only
// res.setHeader, res.statusCode and res.end) with the same fields as
// ratelua's Go ratehttp: RateLimit-Policy and RateLimit
// (draft-ietf-httpapi-ratelimit-headers), Retry-After, an RFC 9457
// problem+json body on 429 and 503, and the same trusted-proxy rules.
import { RateluaError } from "./errors.js";
import { contains, forwardedFor, formatIP, mask, parseAddr, parsePrefix } from "./address.js";

const MAX_SF_INTEGER = 999_999_999_999_999;
const QUOTA_EXCEEDED = "https://iana.org/assignments/http-problem-types#quota-exceeded";
const HEADERS = ["ietf", "ietf+legacy", "none"];
const PROXY_HEADERS = { "x-forwarded-for": "x-forwarded-for", forwarded: "forwarded", "x-real-ip": "x-real-ip" };

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
 * skip(req), onError(req, err), clock() (ms, for X-RateLimit-Reset). */
export function rateLimit(options = {}) {
  const {
    limits = [], trustedProxies = [], proxyHeader = "X-Forwarded-For", ipv4Prefix = 0, ipv6Prefix = 0,
    headers = "ietf", skip = null, onError = null, clock = Date.now,
  } = options;
  if (limits.length === 0) throw new ConfigError("no limit");
  if (!HEADERS.includes(headers)) throw new ConfigError(`headers ${JSON.stringify(headers)} is not one of ${HEADERS.join(", ")}`);
  const v4bits = ipv4Prefix || 32, v6bits = ipv6Prefix || 64;
  if (v4bits < 1 || v4bits > 32) throw new ConfigError(`ipv4Prefix must be 1 to 32 (0 means 32), got ${ipv4Prefix}`);
  if (v6bits < 1 || v6bits > 128) throw new ConfigError(`ipv6Prefix must be 1 to 128 (0 means 64), got ${ipv6Prefix}`);
  const trusted = trustedProxies.map((s, i) => {
    try { return parsePrefix(s); } catch (err) {
      throw new ConfigError(`trustedProxies[${i}] ${JSON.stringify(s)} is neither an address nor a network: ${err.message}`);
    }
  });
  const header = PROXY_HEADERS[String(proxyHeader).toLowerCase()];
  if (!header) throw new ConfigError(`proxyHeader ${JSON.stringify(proxyHeader)} must be X-Forwarded-For, Forwarded or X-Real-IP`);

  const seen = new Map(), items = [];
  const built = limits.map((l, i) => {
    if (!l || !l.limiter) throw new ConfigError(`limit ${i} has no limiter`);
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
    return { limiter: l.limiter, key: l.key, cost: l.cost, exempt: new Set(l.exempt || []), policies };
  });
  const policy = items.join(", ");

  const isTrusted = (b) => trusted.some((p) => contains(p, b));
  function clientAddr(req) {
    const peer = parseAddr(String(req.socket?.remoteAddress ?? ""));
    if (!peer || !isTrusted(peer)) return peer;
    let values = req.headersDistinct ? req.headersDistinct[header] : req.headers[header] && [req.headers[header]];
    if (!values || values.length === 0) return peer;
    const hops = header === "forwarded" ? forwardedFor(values) : values.flatMap((v) => v.split(","));
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const a = parseAddr(hops[i]);
      if (!a) return client;
      client = a;
      if (!isTrusted(a)) return a;
    }
    return client;
  }
  /** clientKey is the key of the request's client address. */
  function clientKey(req) {
    const addr = clientAddr(req);
    if (!addr) return String(req.socket?.remoteAddress ?? "");
    const bits = addr.length === 4 ? v4bits : v6bits;
    if (bits === addr.length * 8) return formatIP(addr);
    return `${formatIP(mask(addr, bits))}/${bits}`;
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

  const middleware = async function rateLimitMiddleware(req, res, next) {
    if (skip && skip(req)) return next();
    const rep = { p: null, res: null, wait: -1 }; // wait: t in µs, -1 none // wait: t in µs, -1 none
    let client = null;
    for (const l of built) {
      let key;
      if (!l.key) key = client ??= clientKey(req);
      else if ((key = l.key(req)) == null) continue;
      if (l.exempt.has(key)) continue;
      let n = 1;
      if (l.cost && (n = l.cost(req)) < 1) continue;
      let r;
      try {
        r = await l.limiter.allowN(key, n);
      } catch (err) {
        if (onError) onError(req, err);
        setFields(res, rep, false);
        return problem(res, 503, { type: "about:blank", title: "Service Unavailable", status: 503, detail: "the rate limiter could not decide this request" });
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
        return problem(res, 429, body);
      }
    }
    setFields(res, rep, false);
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
