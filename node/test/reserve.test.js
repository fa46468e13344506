// Reserve, then settle (token_bucket v7) on real servers: single nodes and
// six-node clusters of redis-server and valkey-server, through ioredis and
// node-redis (see servers.js); the checks made before any round trip need
// no server. The bucket holds 10 tokens refilled 10 per minute (one per
// 6 s) and the caller's clock stands still unless a test moves it, so every
// number follows from lua/README.md's contract.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import Redis from "ioredis";
import {
  AR1, LimitError, NotSupportedError, SlidingWindow, TokenBucket, UnavailableError, ZSetLog, newReservationId,
} from "../index.js";
import { reserves } from "../src/reservation.js";
import { SCRIPTS } from "../src/scripts.js";
import { eachTarget } from "./servers.js";

const T0 = Date.UTC(2025, 0, 1);
const fresh = () => `api-key-${randomUUID()}-{é}%`;

function bucket(client, clock, options = {}) {
  return new TokenBucket(client, [{ capacity: 10, refillAmount: 10, refillInterval: "1m" }], { prefix: "llm", clock: () => clock.t, ...options });
}

const typeOf = async (client, key) => String(await client.type(key));

test("a reserve, then a settle refunds what was not used", (t) => eachTarget(t, async (t, client) => {
  const clock = { t: T0 }, who = fresh();
  const tpm = bucket(client, clock);
  const r = await tpm.reserve(who, 6);
  assert.ok(r.allowed && r.result.remaining === 4 && r.result.limit === 0, JSON.stringify(r.result));
  assert.ok(r.id >= 1 && r.id <= 2 ** 52 && r.estimate === 6);
  assert.equal(await typeOf(client, tpm.key(who)), "hash", "an open reservation makes the Go API's key a hash");
  const s = await r.settle(2);
  assert.ok(s.applied && s.result.allowed && s.result.remaining === 8 && s.result.limit === 0, JSON.stringify(s));
  assert.equal(await typeOf(client, tpm.key(who)), "string", "the last settle writes v6's string again");
  assert.equal(await r.settle(2), s, "a settle answered is not sent again");
  assert.ok(r.settled);
  const again = await tpm.reservation(who, r.id).settle(2);
  assert.ok(!again.applied && again.result.remaining === 8 && again.result.limit === -1 && again.result.retryAfter === -1 && !again.result.allowed);
  assert.equal((await tpm.peek(who)).remaining, 8);
}));

test("an overrun is charged, never denied, and later calls wait", (t) => eachTarget(t, async (t, client) => {
  const clock = { t: T0 }, who = fresh();
  const tpm = bucket(client, clock);
  const r = await tpm.reserve(who, 5);
  assert.equal(r.result.remaining, 5);
  const s = await r.settle(12);
  // 10 - 12 = -2 tokens: one token is 3 refills of 6 s away.
  assert.ok(s.applied && !s.result.allowed && s.result.remaining === 0 && s.result.retryAfterUs === 18e6, JSON.stringify(s));
  const denied = await tpm.allow(who);
  assert.ok(!denied.allowed && denied.retryAfterUs === 18e6);
  clock.t += 18e3;
  assert.ok((await tpm.allow(who)).allowed, "the debt paid off, a call passes");
}));

test("cancel gives the whole estimate back; a denied reserve holds nothing", (t) => eachTarget(t, async (t, client) => {
  const clock = { t: T0 }, who = fresh();
  const tpm = bucket(client, clock);
  const r = await tpm.reserve(who, 4);
  assert.equal(r.result.remaining, 6);
  const c = await r.cancel();
  assert.ok(c.applied && c.result.remaining === 10);
  assert.equal(await r.cancel(), c);
  const held = await tpm.reserve(who, 8);
  const denied = await tpm.reserve(who, 5);
  assert.ok(!denied.allowed && denied.result.remaining === 2 && denied.result.retryAfterUs === 18e6);
  assert.equal(await denied.settle(0), null);
  assert.equal(await denied.cancel(), null);
  assert.equal((await tpm.peek(who)).remaining, 2);
  assert.equal((await held.settle(8)).result.remaining, 2);
}));

test("a reservation past its lifetime is not settled; one never settled stays spent", (t) => eachTarget(t, async (t, client) => {
  const clock = { t: T0 }, who = fresh();
  const tpm = bucket(client, clock);
  const r = await tpm.reserve(who, 6, { lifetime: "1s" });
  clock.t += 1000;
  const s = await r.cancel();
  assert.ok(!s.applied && s.result.remaining === 4, JSON.stringify(s));
  clock.t += 12e3;
  assert.equal((await tpm.peek(who)).remaining, 6, "its tokens refill from its expiry (held until then) as any others");
}));

// loseFirstSettle makes the limiter's first settle fail: before it reaches
// the server, or after the server applied it (its reply lost).
function loseFirstSettle(limiter, lostReply) {
  const c = limiter._client, call = c.call.bind(c);
  const state = { settles: 0 };
  c.call = async (command, target, key, args) => {
    if (String(args[3]).startsWith("settle:") && ++state.settles === 1) {
      if (lostReply) await call(command, target, key, args);
      const e = new Error("connect ECONNRESET (planted)");
      e.code = "ECONNRESET";
      throw e;
    }
    return call(command, target, key, args);
  };
  return state;
}

for (const lostReply of [false, true]) {
  test(`a settle retried applies once (${lostReply ? "reply" : "request"} lost)`, (t) => eachTarget(t, async (t, client) => {
    const clock = { t: T0 }, who = fresh();
    const tpm = bucket(client, clock, { failOpen: true });
    const state = loseFirstSettle(tpm, lostReply);
    const r = await tpm.reserve(who, 6);
    assert.equal(r.result.remaining, 4);
    await assert.rejects(r.settle(1), UnavailableError, "even under failOpen: the caller retries");
    assert.ok(!r.settled);
    await assert.rejects(r.settle(2), /retry with 1/);
    const s = await r.settle(1);
    assert.equal(state.settles, 2);
    assert.ok(s.applied === !lostReply && s.result.remaining === 9, JSON.stringify(s));
    assert.equal((await tpm.peek(who)).remaining, 9);
  }));
}

test("a reservation made elsewhere is settled by its id; a reserve retried with its id records once", (t) => eachTarget(t, async (t, client) => {
  const clock = { t: T0 }, who = fresh();
  const gateway = bucket(client, clock), worker = bucket(client, clock);
  const r = await gateway.reserve(who, 9);
  const s = await worker.reservation(who, r.id).settle(3);
  assert.ok(s.applied && s.result.remaining === 7);
  assert.ok(!(await gateway.reservation(who, r.id).cancel()).applied);
  const id = newReservationId();
  const first = await gateway.reserve(who, 3, { id });
  const again = await gateway.reserve(who, 3, { id });
  assert.ok(first.result.remaining === 4 && again.allowed && again.result.remaining === 4);
  assert.equal((await again.cancel()).result.remaining, 7);
}));

// Checked before any round trip: no server needed. The client is never
// connected: a call would fail the test (no connection, no offline queue).
const idle = () => new Redis({ lazyConnect: true, enableOfflineQueue: false });

test("a script without the modes is refused before any call", async () => {
  const c = idle();
  const makers = {
    "sliding_window@v6": () => new SlidingWindow(c, [{ max: 3, durationMs: 60e3, resolutionMs: 1000 }], { version: 6 }),
    "zset_log@v6": () => new ZSetLog(c, [{ max: 3, windowMs: 60e3 }], { version: 6 }),
    ar1: () => new AR1(c, [{ max: 3, factor: 2, resolutionMs: 60e3 }]),
    "token_bucket@v6": () => new TokenBucket(c, [{ capacity: 3, refillAmount: 1, refillIntervalMs: 60e3 }], { version: 6 }),
    "token_bucket@v5": () => new TokenBucket(c, [{ capacity: 3, refillAmount: 1, refillIntervalMs: 60e3 }], { version: 5 }),
  };
  for (const [name, make] of Object.entries(makers)) {
    const l = make();
    assert.ok(!l.reserves, `${l.script} takes the modes now: move it to the real-server tests`);
    await assert.rejects(l.reserve("k", 1), (e) => e instanceof NotSupportedError && e.message.includes(`${l.script} does not support reserve`), name);
    assert.throws(() => l.reservation("k", 1), NotSupportedError, name);
  }
});

test("which scripts take the modes follows the manifest", () => {
  const taking = [...SCRIPTS.values()].filter(reserves).map(String);
  assert.ok(taking.includes("token_bucket@v7") && taking.includes("zset_log@v7") && taking.includes("sliding_window@v7"), String(taking));
  assert.ok(taking.every((s) => s.endsWith("@v7")), String(taking));
});

test("bad input is refused naming it", async () => {
  const l = new TokenBucket(idle(), [{ capacity: 3, refillAmount: 1, refillIntervalMs: 60e3 }]);
  const cases = [
    [() => l.reserve("k", 0), "estimate"],
    [() => l.reserve("k", 2 ** 52 + 1), "estimate"],
    [() => l.reserve("k", 1.5), "estimate"],
    [() => l.reserve("k", "3"), "estimate"],
    [() => l.reserve("k", 1, { lifetimeMs: 0 }), "lifetime"],
    [() => l.reserve("k", 1, { lifetime: 30 }), "lifetime"],
    [() => l.reserve("k", 1, { lifetime: "soon" }), "lifetime"],
    [() => l.reserve("k", 1, { lifetime: "1s", lifetimeMs: 1000 }), "lifetime"],
    [() => l.reserve("k", 1, { ttl: "1s" }), "ttl"],
    [() => l.reserve("k", 1, { id: 0 }), "id"],
    [() => l.reserve("k", 1, { id: 2 ** 52 + 1 }), "id"],
    [async () => l.reservation("k", "7"), "id"],
    [() => l.reservation("k", 7).settle(-1), "actual"],
    [() => l.reservation("k", 7).settle(2 ** 52 + 1), "actual"],
    [() => l.reservation("k", 7).settle(0.5), "actual"],
  ];
  for (const [call, field] of cases) {
    await assert.rejects(call, (e) => e instanceof LimitError && e.field === field, `${call}`);
  }
});

test("the arguments are the contract's", () => {
  const l = new TokenBucket(idle(), [{ capacity: 10, refillAmount: 10, refillInterval: "1m" }], { clock: () => T0 });
  assert.deepEqual(l.reservationArgs(6, "reserve:41:120000"), ["6", "ms", String(T0), "reserve:41:120000", "10", "10", "60000"]);
  const us = new TokenBucket(idle(), [{ capacity: 10, refillAmount: 1, refillInterval: "1500us" }], { countDenied: true });
  assert.deepEqual(us.reservationArgs(1, "settle:2").slice(1, 4), ["us", "", "settle:2"]);
  assert.equal(us.args(1)[3], "1");
});

test("a lifetime is rounded up to the unit; the default is 5 minutes", async () => {
  const { reserveOptions } = await import("../src/reservation.js");
  assert.equal(reserveOptions("ms", { lifetime: "500us" }).units, 1);
  assert.equal(reserveOptions("ms", {}).units, 300000);
  assert.equal(reserveOptions("us", { lifetimeMs: 2.5 }).units, 2500);
  assert.equal(reserveOptions("ms", { id: 41 }).id, 41);
});
