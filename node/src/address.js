// Client addresses, read as ratehttp reads them: IPv4-mapped IPv6 as IPv4,
// no zone, networks masked to a prefix and written as Go's netip writes them.
import { isIPv4, isIPv6 } from "node:net";

/** parseIP returns the bytes of an address (4 or 16), or null. */
export function parseIP(s) {
  s = s.split("%")[0];
  if (isIPv4(s)) return Uint8Array.from(s.split(".").map(Number));
  if (!isIPv6(s)) return null;
  let tail = [];
  if (s.includes(".")) { // an IPv4 tail
    const i = s.lastIndexOf(":");
    const v4 = parseIP(s.slice(i + 1));
    tail = [(v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]];
    s = s.slice(0, i + 1) + "0";
    s = s.endsWith("::0") ? s.slice(0, -1) : s.slice(0, -2);
  }
  const [head, rest] = s.includes("::") ? s.split("::") : [s, null];
  const parse = (p) => (p ? p.split(":").map((x) => parseInt(x, 16)) : []);
  const h = parse(head), r = parse(rest);
  const groups = rest === null ? [...h, ...tail] : [...h, ...new Array(8 - h.length - r.length - tail.length).fill(0), ...r, ...tail];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => { out[2 * i] = g >> 8; out[2 * i + 1] = g & 255; });
  return unmap(out);
}

function unmap(b) {
  if (b.length === 16 && b.slice(0, 10).every((x) => x === 0) && b[10] === 255 && b[11] === 255) return b.slice(12);
  return b;
}

/** formatIP writes an address as Go's netip does (RFC 5952 for IPv6). */
export function formatIP(b) {
  if (b.length === 4) return Array.from(b).join(".");
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

/** mask keeps the first bits of b. */
export function mask(b, bits) {
  const out = Uint8Array.from(b);
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - 8 * i));
    out[i] &= keep === 8 ? 255 : (0xff << (8 - keep)) & 0xff;
  }
  return out;
}

/** parseAddr reads an address as proxies write it: 192.0.2.1,
 * 192.0.2.1:8080, 2001:db8::1, [2001:db8::1]:8080. */
export function parseAddr(s) {
  s = s.trim();
  if (s.startsWith("[")) {
    const end = s.indexOf("]");
    if (end < 0 || !isPort(s.slice(end + 1))) return null;
    const inner = s.slice(1, end);
    if (isIPv4(inner)) return null;
    return parseIP(inner);
  }
  if ((s.match(/:/g) || []).length === 1) {
    const [host, port] = s.split(":");
    if (!/^\d{1,5}$/.test(port) || Number(port) > 65535 || !isIPv4(host)) return null;
    return parseIP(host);
  }
  return parseIP(s);
}

function isPort(s) {
  return s === "" || /^:\d{1,5}$/.test(s);
}

/** parsePrefix reads a trusted proxy: a network or one address; throws. */
export function parsePrefix(s) {
  s = s.trim();
  let [addr, bits] = s.split("/");
  const raw = addr.split("%")[0];
  const mapped = isIPv6(raw) && parseIP(raw)?.length === 4;
  const b = parseIP(raw);
  if (!b) throw new Error(`not an address: ${JSON.stringify(addr)}`);
  let n = bits === undefined ? b.length * 8 : Number(bits);
  if (bits !== undefined) {
    if (!/^\d+$/.test(bits)) throw new Error(`bad prefix length ${JSON.stringify(bits)}`);
    if (mapped) n -= 96;
    if (n < 0 || n > b.length * 8) throw new Error(`prefix length ${bits} out of range`);
  }
  return { bytes: mask(b, n), bits: n };
}

/** contains reports whether prefix p holds address b. */
export function contains(p, b) {
  return p.bytes.length === b.length && mask(b, p.bits).every((x, i) => x === p.bytes[i]);
}

/** splitQuoted splits s at sep outside quoted strings. */
export function splitQuoted(s, sep) {
  const parts = [];
  let quoted = false, escaped = false, start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (escaped) escaped = false;
    else if (quoted && c === "\\") escaped = true;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === sep) { parts.push(s.slice(start, i)); start = i + 1; }
  }
  parts.push(s.slice(start));
  return parts;
}

function unquote(s) {
  if (s.length < 2 || s[0] !== '"' || s[s.length - 1] !== '"') return s;
  let out = "";
  for (let i = 1; i < s.length - 1; i++) {
    if (s[i] === "\\" && i + 1 < s.length - 1) i++;
    out += s[i];
  }
  return out;
}

/** forwardedFor returns the for= value of each element of Forwarded fields. */
export function forwardedFor(values) {
  const out = [];
  for (const v of values) {
    for (const element of splitQuoted(v, ",")) {
      let hop = "";
      for (const pair of splitQuoted(element, ";")) {
        const i = pair.indexOf("=");
        const name = i < 0 ? pair : pair.slice(0, i);
        if (name.trim().toLowerCase() === "for") hop = unquote((i < 0 ? "" : pair.slice(i + 1)).trim());
      }
      out.push(hop);
    }
  }
  return out;
}
