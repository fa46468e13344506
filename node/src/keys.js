// State keys, exactly as the Go API builds them:
// <prefix>:{<escaped event key>}:<script>:v<state version>:<limits hash>.
import { createHash } from "node:crypto";
import { LimitError } from "./errors.js";

/** The longest escaped event key kept as it is; a longer one is replaced by
 * "%H" and the hex SHA-256 of the event key. */
export const MAX_EVENT_KEY = 128;
/** The longest prefix, in bytes. */
export const MAX_PREFIX = 128;

const LONE_SURROGATE = /\p{Surrogate}/u; // in u mode a pair is one code point: only a lone half matches

/** eventKeyBytes returns an event key as bytes: a string as UTF-8. A string
 * with a lone surrogate has no UTF-8 form (Buffer.from would write U+FFFD
 * for it, so "a\uD800" and "a\uFFFD" would share a state key) and is
 * refused with a LimitError: distinct event keys never share a state key,
 * as in Go (bytes) and Python (which refuses it too); a Buffer carries
 * bytes that are not text. */
export function eventKeyBytes(eventKey) {
  if (typeof eventKey === "string") {
    if (!(eventKey.isWellFormed ? eventKey.isWellFormed() : !LONE_SURROGATE.test(eventKey))) {
      const at = eventKey.search(LONE_SURROGATE);
      const code = eventKey.charCodeAt(at).toString(16).toUpperCase();
      throw new LimitError(-1, "eventKey", `has a lone surrogate U+${code} at index ${at}, which has no UTF-8 form: pass a Buffer for bytes that are not text`);
    }
    return Buffer.from(eventKey, "utf8");
  }
  if (eventKey instanceof Uint8Array) return Buffer.from(eventKey.buffer, eventKey.byteOffset, eventKey.byteLength);
  throw new TypeError(`ratelua: an event key is a string or a Buffer, got ${typeof eventKey}`);
}

const PCT = 0x25, OPEN = 0x7b, CLOSE = 0x7d;

/** escapeTag makes an event key safe inside a {hash tag}: '%', '{' and '}'
 * are percent-encoded; an empty key is "%"; an escaped form longer than 128
 * bytes is "%H" and the hex SHA-256 of the event key. */
export function escapeTag(eventKey) {
  const raw = eventKeyBytes(eventKey);
  if (raw.length === 0) return Buffer.from("%");
  let escaped = raw;
  if (raw.includes(PCT) || raw.includes(OPEN) || raw.includes(CLOSE)) {
    const out = [];
    for (const c of raw) {
      if (c === PCT) out.push(0x25, 0x32, 0x35);
      else if (c === OPEN) out.push(0x25, 0x37, 0x42);
      else if (c === CLOSE) out.push(0x25, 0x37, 0x44);
      else out.push(c);
    }
    escaped = Buffer.from(out);
  }
  if (escaped.length > MAX_EVENT_KEY) {
    return Buffer.from("%H" + createHash("sha256").update(raw).digest("hex"));
  }
  return escaped;
}

/** checkPrefix refuses a prefix that would make state keys ambiguous. */
export function checkPrefix(prefix) {
  if (typeof prefix !== "string" || prefix === "") throw new LimitError(-1, "Prefix", "is empty");
  const n = Buffer.byteLength(prefix);
  if (n > MAX_PREFIX) throw new LimitError(-1, "Prefix", `must be at most ${MAX_PREFIX} bytes, got ${n}`);
  if (/[{}]/.test(prefix)) throw new LimitError(-1, "Prefix", `may not contain '{' or '}', got ${JSON.stringify(prefix)}`);
}

/** limitsHash is 8 hex digits of the SHA-1 of the script's state version,
 * the unit and the limit arguments. */
export function limitsHash(name, stateVersion, unit, args) {
  return createHash("sha1").update(`${name}@v${stateVersion} ${unit} ${args.join(" ")}`).digest("hex").slice(0, 8);
}

/** stateKey is the state key of eventKey, as a Buffer. */
export function stateKey(prefix, eventKey, name, stateVersion, hash) {
  return Buffer.concat([Buffer.from(prefix + ":{"), escapeTag(eventKey), Buffer.from(`}:${name}:v${stateVersion}:${hash}`)]);
}
