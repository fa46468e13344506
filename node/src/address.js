// Client addresses behind trusted reverse proxies, by the rule of Go's
// clientaddr package, step for step, so that a Go, a Python and a Node
// service key one client the same way (testdata/clientaddr.json, written by
// Go, is the proof; a differential fuzz compares the three).
//
// The peer is the client unless it is one of the trusted proxies. Then the
// field the proxies write (X-Forwarded-For, Forwarded or X-Real-IP) is read
// from the right: the rightmost address that is not a trusted proxy is the
// client. A value that is not an address ends the walk at the trusted proxy
// that wrote it. Forwarded is parsed strictly (RFC 7239 with RFC 9110's lists
// and quoted strings) one field line at a time: a line that does not parse
// (an unbalanced quote, a stray byte, a parameter twice) ends the walk there,
// so that text a client wrote can never swallow, or pose as, what a proxy
// appended after it.
//
// Field values are strings as Node's http gives them: one character per byte
// (latin-1). Addresses are parsed as Go's net/netip parses them, not by
// node:net (whose rules differ at the edges).

const XFF = "X-Forwarded-For", FORWARDED = "Forwarded", XREALIP = "X-Real-Ip";
const HEADERS = { "": XFF, "x-forwarded-for": XFF, forwarded: FORWARDED, "x-real-ip": XREALIP };

/** OptionError is a Resolver option that is wrong: option names it as Go's
 * clientaddr.Options does (TrustedProxies, ProxyHeader, IPv4Prefix,
 * IPv6Prefix), index is the position in TrustedProxies (else -1). */
export class OptionError extends Error {
  constructor(option, index, reason) {
    super(`clientaddr: invalid option: ${index >= 0 ? `${option}[${index}]` : option} ${reason}`);
    this.name = "OptionError";
    this.option = option;
    this.index = index;
    this.reason = reason;
  }
}

const quote = (s) => JSON.stringify(s.length > 64 ? s.slice(0, 64) : s) + (s.length > 64 ? "..." : "");

/** Resolver finds client addresses with the rules of its options (those of
 * Go's clientaddr.Options): trustedProxies (addresses and networks),
 * proxyHeader ("X-Forwarded-For", the default, "Forwarded" or "X-Real-IP",
 * any case), ipv4Prefix and ipv6Prefix (0 means 32 and 64). Throws an
 * OptionError naming a wrong option. */
export class Resolver {
  constructor({ trustedProxies = [], proxyHeader = XFF, ipv4Prefix = 0, ipv6Prefix = 0 } = {}) {
    for (const [name, v] of [["IPv4Prefix", ipv4Prefix], ["IPv6Prefix", ipv6Prefix]]) {
      if (!Number.isInteger(v)) throw new OptionError(name, -1, `must be an integer, got ${typeof v === "number" ? v : typeof v}`);
    }
    this.v4bits = ipv4Prefix || 32;
    this.v6bits = ipv6Prefix || 64;
    if (this.v4bits < 1 || this.v4bits > 32) throw new OptionError("IPv4Prefix", -1, `must be 1 to 32 (0 means 32), got ${ipv4Prefix}`);
    if (this.v6bits < 1 || this.v6bits > 128) throw new OptionError("IPv6Prefix", -1, `must be 1 to 128 (0 means 64), got ${ipv6Prefix}`);
    if (!Array.isArray(trustedProxies)) throw new OptionError("TrustedProxies", -1, `must be an array of addresses and networks, got ${typeof trustedProxies}`);
    this.trusted = trustedProxies.map((s, i) => {
      if (typeof s !== "string") throw new OptionError("TrustedProxies", i, `must be a string, got ${typeof s}`);
      const p = parsePrefix(s);
      if (!p) throw new OptionError("TrustedProxies", i, `${quote(s)} is neither an address nor a network`);
      return p;
    });
    const header = typeof proxyHeader === "string" ? HEADERS[proxyHeader.toLowerCase()] : undefined;
    if (!header || !Object.hasOwn(HEADERS, proxyHeader.toLowerCase())) {
      throw new OptionError("ProxyHeader", -1, `${quote(String(proxyHeader))} must be X-Forwarded-For, Forwarded or X-Real-IP`);
    }
    this.header = header;
  }

  /** isTrusted reports whether addr (4 or 16 bytes) is a trusted proxy. */
  isTrusted(addr) {
    return this.trusted.some((p) => p.bytes.length === addr.length && equal(mask(addr, p.bits), p.bytes));
  }

  /** addr returns the client's address (4 or 16 bytes), or null when peer
   * holds no IP address. peer is "192.0.2.1", "192.0.2.1:4711",
   * "[2001:db8::1]:443" or "::ffff:192.0.2.1"; fields are the values of the
   * header in the order received, one per field line, read only when the
   * peer is trusted. */
  addr(peer, fields) {
    let client = parseAddr(peer);
    if (!client || !this.isTrusted(client)) return client;
    for (let line = fields.length - 1; line >= 0; line--) {
      const hops = this.header === FORWARDED ? forwardedFor(fields[line])
        : fields[line].split(",").map((h) => trimOWS(h)).filter((h) => h !== "");
      if (!hops) return client;
      for (let i = hops.length - 1; i >= 0; i--) {
        const a = this.header === FORWARDED ? nodeAddr(hops[i]) : parseAddr(hops[i]);
        if (!a) return client;
        client = a;
        if (!this.isTrusted(a)) return a;
      }
    }
    return client;
  }

  /** key returns the key of the client's address grouped by the prefix
   * lengths: "192.0.2.1", "2001:db8:1:2::/64"; a peer that holds no IP
   * address is the key as it is. */
  key(peer, fields) {
    const a = this.addr(peer, fields);
    return a ? this.group(a) : peer;
  }

  /** group writes addr as a key: itself, or its network at the family's
   * prefix length. */
  group(addr) {
    const bits = addr.length === 4 ? this.v4bits : this.v6bits;
    if (bits === addr.length * 8) return formatIP(addr);
    return `${formatIP(mask(addr, bits))}/${bits}`;
  }
}

const equal = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const trimOWS = (s) => s.replace(/^[ \t]+|[ \t]+$/g, "");
const isDigits = (s) => /^[0-9]+$/.test(s);
const MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255];
const isMapped = (b) => b.length === 16 && MAPPED.every((x, i) => b[i] === x);
const unmap = (b) => (isMapped(b) ? b.slice(12) : b);

/** mask keeps the first bits of b. */
export function mask(b, bits) {
  const out = Uint8Array.from(b);
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - 8 * i));
    out[i] &= (0xff << (8 - keep)) & 0xff;
  }
  return out;
}

// net/netip's parsers.

function parseIPv4Fields(s) {
  const fields = new Uint8Array(4);
  let val = 0, dig = 0, pos = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c >= "0" && c <= "9") {
      if (dig === 1 && val === 0) return null; // a leading zero
      val = val * 10 + (c.charCodeAt(0) - 48);
      dig++;
      if (val > 255) return null;
    } else if (c === ".") {
      if (i === 0 || i === s.length - 1 || s[i - 1] === ".") return null;
      if (pos === 3) return null;
      fields[pos++] = val;
      val = 0;
      dig = 0;
    } else return null;
  }
  if (pos < 3) return null;
  fields[3] = val;
  return fields;
}

const hexValue = (c) => (/^[0-9a-fA-F]$/.test(c) ? parseInt(c, 16) : -1);

function parseIPv6(s) {
  let zone = "";
  const z = s.indexOf("%");
  if (z >= 0) {
    zone = s.slice(z + 1);
    s = s.slice(0, z);
    if (zone === "") return null;
  }
  const ip = new Uint8Array(16);
  let ellipsis = -1;
  if (s.startsWith("::")) {
    ellipsis = 0;
    s = s.slice(2);
    if (s === "") return { bytes: ip, zone };
  }
  let i = 0;
  while (i < 16) {
    let off = 0, acc = 0;
    for (; off < s.length; off++) {
      const v = hexValue(s[off]);
      if (v < 0) break;
      acc = acc * 16 + v;
      if (off > 3 || acc > 0xffff) return null;
    }
    if (off === 0) return null;
    if (off < s.length && s[off] === ".") {
      if (ellipsis < 0 && i !== 12) return null;
      if (i + 4 > 16) return null;
      const v4 = parseIPv4Fields(s);
      if (!v4) return null;
      ip.set(v4, i);
      s = "";
      i += 4;
      break;
    }
    ip[i] = acc >> 8;
    ip[i + 1] = acc & 0xff;
    i += 2;
    s = s.slice(off);
    if (s === "") break;
    if (s[0] !== ":" || s.length === 1) return null;
    s = s.slice(1);
    if (s[0] === ":") {
      if (ellipsis >= 0) return null;
      ellipsis = i;
      s = s.slice(1);
      if (s === "") break;
    }
  }
  if (s !== "") return null;
  if (i < 16) {
    if (ellipsis < 0) return null;
    const n = 16 - i;
    ip.copyWithin(ellipsis + n, ellipsis, i);
    ip.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) return null;
  return { bytes: ip, zone };
}

/** parseIP is netip.ParseAddr: {bytes (4 or 16, IPv4-mapped kept as 16),
 * zone}, or null. */
export function parseIP(s) {
  for (const c of s) {
    if (c === ".") {
      const b = parseIPv4Fields(s);
      return b && { bytes: b, zone: "" };
    }
    if (c === ":") return parseIPv6(s);
    if (c === "%") return null;
  }
  return null;
}

/** parseAddr reads an address as proxies write it in X-Forwarded-For and
 * X-Real-IP, and as peers are written: 192.0.2.1, 192.0.2.1:8080,
 * 2001:db8::1, [2001:db8::1]:8080; IPv4-mapped as IPv4; without a zone.
 * It returns the address's bytes (4 or 16) or null. */
export function parseAddr(s) {
  s = trimOWS(s);
  if (s.startsWith("[")) {
    const end = s.indexOf("]");
    if (end < 0) return null;
    const rest = s.slice(end + 1);
    if (!(rest === "" || (rest.length >= 2 && rest.length <= 6 && rest[0] === ":" && isDigits(rest.slice(1))))) return null;
    const a = parseIP(s.slice(1, end));
    if (!a || a.bytes.length === 4) return null;
    return unmap(a.bytes);
  }
  const parts = s.split(":");
  if (parts.length === 2) { // IPv4 and a port (netip.ParseAddrPort)
    const [host, port] = parts;
    if (host === "" || !isDigits(port) || Number(port) > 65535) return null;
    const a = parseIP(host);
    return a && a.bytes.length === 4 ? a.bytes : null;
  }
  const a = parseIP(s);
  return a ? unmap(a.bytes) : null;
}

// Go's strings.TrimSpace (unicode.IsSpace).
const SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000";
function trimSpace(s) {
  let a = 0, b = s.length;
  while (a < b && SPACE.includes(s[a])) a++;
  while (b > a && SPACE.includes(s[b - 1])) b--;
  return s.slice(a, b);
}

/** parsePrefix reads a trusted proxy, a network or one address, as {bytes
 * (masked), bits}, or null; a network of IPv4-mapped addresses of /96 or
 * longer as IPv4. */
export function parsePrefix(s) {
  s = trimSpace(s);
  if (s.includes("/")) {
    const i = s.lastIndexOf("/");
    const a = parseIP(s.slice(0, i));
    if (!a || a.zone !== "") return null;
    const bitsText = s.slice(i + 1);
    // netip.ParsePrefix: decimal digits, no sign, no leading zero.
    if (!isDigits(bitsText) || (bitsText.length > 1 && bitsText[0] === "0")) return null;
    let b = a.bytes, bits = Number(bitsText);
    if (bits > b.length * 8) return null;
    if (isMapped(b) && bits >= 96) {
      b = b.slice(12);
      bits -= 96;
    }
    return { bytes: mask(b, bits), bits };
  }
  const a = parseIP(s);
  if (!a) return null;
  const b = unmap(a.bytes);
  return { bytes: b, bits: b.length * 8 };
}

/** formatIP writes an address as Go's netip does (RFC 5952 for IPv6: the
 * first longest run of two or more zero groups as ::). */
export function formatIP(b) {
  if (b.length === 4) return Array.from(b).join(".");
  if (isMapped(b)) return "::ffff:" + Array.from(b.slice(12)).join(".");
  const g = [];
  for (let i = 0; i < 16; i += 2) g.push((b[i] << 8) | b[i + 1]);
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (best < 0) return hex.join(":");
  return hex.slice(0, best).join(":") + "::" + hex.slice(best + bestLen).join(":");
}

// Forwarded (RFC 7239), strictly.

const TCHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/;
const isTchar = (c) => TCHAR.test(c);
function isQdtext(c) {
  const o = c.charCodeAt(0);
  return o === 9 || o === 32 || o === 0x21 || (o >= 0x23 && o <= 0x5b) || (o >= 0x5d && o <= 0x7e) || o >= 0x80;
}
function isQuotable(c) {
  const o = c.charCodeAt(0);
  return o === 9 || (o >= 0x20 && o !== 0x7f);
}

class Parser {
  constructor(s) { this.s = s; this.i = 0; }
  done() { return this.i >= this.s.length; }
  peek() { return this.s[this.i]; }
  skipOWS() { while (!this.done() && (this.peek() === " " || this.peek() === "\t")) this.i++; }

  element() {
    const seen = new Set();
    let hop = "";
    for (;;) {
      this.skipOWS();
      if (!this.done() && this.peek() !== ";" && this.peek() !== ",") {
        const pair = this.pair();
        if (!pair) return null;
        const name = pair[0].toLowerCase();
        if (seen.has(name)) return null;
        seen.add(name);
        if (name === "for") hop = pair[1];
        this.skipOWS();
      }
      if (this.done() || this.peek() === ",") return hop;
      if (this.peek() !== ";") return null;
      this.i++;
    }
  }

  pair() {
    const name = this.token();
    if (name === "" || this.done() || this.peek() !== "=") return null;
    this.i++;
    if (!this.done() && this.peek() === '"') {
      const value = this.quoted();
      return value === null ? null : [name, value];
    }
    const value = this.token();
    return value === "" ? null : [name, value];
  }

  token() {
    const start = this.i;
    while (!this.done() && isTchar(this.peek())) this.i++;
    return this.s.slice(start, this.i);
  }

  quoted() {
    this.i++; // the opening quote
    let out = "";
    while (!this.done()) {
      const c = this.peek();
      this.i++;
      if (c === '"') return out;
      if (c === "\\") {
        if (this.done() || !isQuotable(this.peek())) return null;
        out += this.peek();
        this.i++;
      } else if (isQdtext(c)) out += c;
      else return null;
    }
    return null; // no closing quote
  }
}

/** forwardedFor returns the for= value of each element of one Forwarded
 * field line, left to right, unquoted ("" for an element without one), or
 * null when the line is not well-formed. */
export function forwardedFor(line) {
  const p = new Parser(line);
  const hops = [];
  p.skipOWS();
  while (!p.done()) {
    if (p.peek() === ",") {
      p.i++;
      p.skipOWS();
      continue;
    }
    const hop = p.element();
    if (hop === null) return null;
    hops.push(hop);
    p.skipOWS();
    if (p.done()) break;
    if (p.peek() !== ",") return null;
    p.i++;
    p.skipOWS();
  }
  return hops;
}

function isNodePort(s) {
  if (s === "") return false;
  if (s[0] === "_") return /^_[0-9A-Za-z._-]+$/.test(s);
  return s.length <= 5 && isDigits(s);
}

/** nodeAddr reads the address of a for= value, strictly (RFC 7239, 6):
 * IPv4address [":" node-port] or "[" IPv6address "]" [":" node-port]. */
export function nodeAddr(v) {
  let host, port;
  if (v.startsWith("[")) {
    const end = v.indexOf("]");
    if (end < 0) return null;
    host = v.slice(1, end);
    port = v.slice(end + 1);
  } else {
    const i = v.indexOf(":");
    host = i < 0 ? v : v.slice(0, i);
    port = i < 0 ? "" : v.slice(i);
  }
  if (port !== "" && (port[0] !== ":" || !isNodePort(port.slice(1)))) return null;
  const a = parseIP(host);
  if (!a || a.zone !== "" || (a.bytes.length === 4) !== !v.startsWith("[")) return null;
  return unmap(a.bytes);
}
