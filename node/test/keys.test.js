// Event keys as strings: distinct strings never share a state key (issue
// 30, L5: "a\uD800" was written as "a\uFFFD"); a lone surrogate, which has
// no UTF-8 form, is refused before any round trip. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SlidingWindow, TokenBucket, Semaphore, LimitError } from "../index.js";

// A client that fails the test if a call reaches it.
const noClient = { evalsha() { throw new Error("a round trip"); }, call() { throw new Error("a round trip"); } };
const limiters = [
  new SlidingWindow(noClient, [{ max: 5, durationMs: 60000, resolutionMs: 1000 }]),
  new TokenBucket(noClient, [{ capacity: 5, refillAmount: 1, refillIntervalMs: 1000 }]),
  new Semaphore(noClient, { max: 2, leaseMs: 30000 }),
];

const LONE = ["a\uD800", "\uDC00", "a\uDFFFb", "\uD800\uD800", "\uDE42\uD83D", "x".repeat(200) + "\uD800"];
const WELL_FORMED = ["a", "a\uFFFD", "a\uFFFD\uFFFD", "\uD83D\uDE42", "é", "", "{", "\uFFFD", "x".repeat(200) + "\uFFFD"];

test("a lone surrogate is refused, naming the event key and where", async () => {
  for (const l of limiters) {
    for (const k of LONE) {
      assert.throws(() => l.key(k), (e) => e instanceof LimitError && e.field === "eventKey" && /lone surrogate U\+D[89A-F][0-9A-F]{2} at index \d+/.test(e.message),
        `${l.constructor.name} key(${JSON.stringify(k)})`);
    }
    const call = l instanceof Semaphore ? l.acquire("a\uD800") : l.allow("a\uD800");
    await assert.rejects(call, (e) => e instanceof LimitError && e.field === "eventKey");
  }
});

test("distinct well-formed strings have distinct state keys, their UTF-8 bytes", () => {
  for (const l of limiters) {
    const keys = WELL_FORMED.map((k) => l.key(k).toString("hex"));
    assert.equal(new Set(keys).size, WELL_FORMED.length, `${l.constructor.name}: ${keys}`);
    for (const k of WELL_FORMED) assert.deepEqual(l.key(k), l.key(Buffer.from(k, "utf8")));
  }
});
