// Every key vector of the Go API (testdata/keyvectors.json): the same state
// key and ARGV, or the same refused limit and field. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { SlidingWindow, TokenBucket, ZSetLog, AR1, Semaphore, LimitError } from "../index.js";

const file = process.env.RATELUA_KEYVECTORS || new URL("../../testdata/keyvectors.json", import.meta.url);
const { vectors } = JSON.parse(readFileSync(file, "utf8"));

const ms = (us) => us / 1000;
const KINDS = {
  sliding_window: [SlidingWindow, (m) => ({ max: m.max, duration: ms(m.duration_us), resolution: ms(m.resolution_us) })],
  token_bucket: [TokenBucket, (m) => ({ capacity: m.capacity, refillAmount: m.refill_amount, refillInterval: ms(m.refill_interval_us) })],
  zset_log: [ZSetLog, (m) => ({ max: m.max, window: ms(m.window_us) })],
  ar1: [AR1, (m) => ({ max: m.max, factor: m.factor, resolution: ms(m.resolution_us) })],
  concurrency: [Semaphore, (m) => ({ max: m.max, lease: ms(m.lease_us) })],
};
// Never called: the vectors need no server.
const noClient = { evalsha() {}, call() {} };

function build(v) {
  const [Kind, limit] = KINDS[v.script];
  if (Kind === Semaphore) return new Semaphore(noClient, limit(v.limits[0]), { prefix: v.prefix, countDenied: v.count_denied, clock: () => v.now_us / 1000 });
  return new Kind(noClient, v.limits.map(limit), { prefix: v.prefix, countDenied: v.count_denied, clock: () => v.now_us / 1000 });
}

test("the vectors cover every script, 16 limits, 400-byte keys", () => {
  assert.deepEqual(new Set(vectors.map((v) => v.script)), new Set(Object.keys(KINDS)));
  assert.equal(Math.max(...vectors.map((v) => v.limits.length)), 16);
  assert.ok(Math.max(...vectors.map((v) => v.event_key_hex.length / 2)) >= 400);
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
