// Every key vector of the Go API (testdata/keyvectors.json): the same state
// key and ARGV, or the same refused limit and field. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { SlidingWindow, TokenBucket, ZSetLog, AR1, Semaphore, LimitError } from "../index.js";
import { versions } from "../src/scripts.js";

const file = process.env.RATELUA_KEYVECTORS || new URL("../../testdata/keyvectors.json", import.meta.url);
const { vectors } = JSON.parse(readFileSync(file, "utf8"));

const ms = (us) => us / 1000;
const KINDS = {
  sliding_window: [SlidingWindow, (m) => ({ max: m.max, durationMs: ms(m.duration_us), resolutionMs: ms(m.resolution_us) })],
  token_bucket: [TokenBucket, (m) => ({ capacity: m.capacity, refillAmount: m.refill_amount, refillIntervalMs: ms(m.refill_interval_us) })],
  zset_log: [ZSetLog, (m) => ({ max: m.max, windowMs: ms(m.window_us) })],
  ar1: [AR1, (m) => ({ max: m.max, factor: m.factor, resolutionMs: ms(m.resolution_us) })],
  concurrency: [Semaphore, (m) => ({ max: m.max, leaseMs: ms(m.lease_us) })],
};
// Never called: the vectors need no server.
const noClient = { evalsha() {}, call() {} };

function build(v) {
  const [Kind, limit] = KINDS[v.script];
  const options = { prefix: v.prefix, clock: () => v.now_us / 1000, version: v.version };
  if (Kind === Semaphore) {
    assert.ok(!v.count_denied, "a semaphore does not count denied acquires");
    return new Semaphore(noClient, limit(v.limits[0]), options);
  }
  return new Kind(noClient, v.limits.map(limit), { ...options, countDenied: v.count_denied });
}

test("the vectors cover every script, 16 limits, 400-byte keys", () => {
  assert.deepEqual(new Set(vectors.map((v) => v.script)), new Set(Object.keys(KINDS)));
  assert.equal(Math.max(...vectors.map((v) => v.limits.length)), 16);
  assert.ok(Math.max(...vectors.map((v) => v.event_key_hex.length / 2)) >= 400);
  const pinned = new Set(vectors.filter((v) => v.version).map((v) => `${v.script}@v${v.version}`));
  assert.deepEqual(pinned, new Set(Object.keys(KINDS).flatMap((s) => [5, 6, 7].map((n) => `${s}@v${n}`))), "every script pinned at every version");
});

test("the default is the newest version, as in Go", () => {
  for (const v of vectors) {
    if (!v.version || v.error) continue;
    const pinned = build(v), byDefault = build({ ...v, version: undefined });
    const eventKey = Buffer.from(v.event_key_hex, "hex");
    assert.equal(byDefault.version, Math.max(...versions(v.script)));
    if (v.version === byDefault.version) {
      assert.ok(byDefault.key(eventKey).equals(pinned.key(eventKey)));
    } else if (pinned.script.stateVersion !== byDefault.script.stateVersion) {
      assert.ok(!byDefault.key(eventKey).equals(pinned.key(eventKey)));
      assert.ok(pinned.key(eventKey).includes(`:v${pinned.script.stateVersion}:`));
    }
  }
});

test("every vector", () => {
  let checked = 0;
  for (const [i, v] of vectors.entries()) {
    if (v.error) {
      assert.throws(() => build(v), (err) => err instanceof LimitError && err.index === v.error.index && err.field === v.error.field,
        `vector ${i}: want ${JSON.stringify(v.error)}`);
      checked++;
      continue;
    }
    const limiter = build(v);
    const eventKey = Buffer.from(v.event_key_hex, "hex");
    assert.equal(limiter.key(eventKey).toString("hex"), v.key_hex, `vector ${i}: key`);
    assert.deepEqual(limiter.args(v.n), v.args, `vector ${i}: args`);
    const text = eventKey.toString("utf8");
    if (Buffer.from(text, "utf8").equals(eventKey)) {
      assert.equal(limiter.key(text).toString("hex"), v.key_hex, `vector ${i}: a string event key is its UTF-8 bytes`);
    }
    checked++;
  }
  assert.equal(checked, vectors.length);
});
