// The limiters on real servers: single nodes and six-node clusters of
// redis-server and valkey-server, through ioredis and node-redis.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import Redis from "ioredis";
import { SlidingWindow, TokenBucket, ZSetLog, AR1, NEVER, LimitError, ScriptError, UnavailableError } from "../index.js";
import { eachTarget } from "./servers.js";

const T0 = Date.UTC(2025, 0, 1);
const fresh = () => `user-${randomUUID()}-{é}%`;
const login = (client, options) =>
  new SlidingWindow(client, [{ max: 1, durationMs: 5000, resolutionMs: 1000 }, { max: 5, durationMs: 3600e3, resolutionMs: 600e3 }], { prefix: "login", ...options });

// exists asks either client whether key exists.
const exists = (client, key) => (typeof client.evalSha === "function" ? client.exists(key) : client.exists(key));

test("the login case", (t) => eachTarget(t, async (t, client) => {
  let now = T0;
  const who = fresh();
  const logins = login(client, { clock: () => now });
  const first = await logins.allow(who);
  assert.ok(first.allowed && first.remaining === 0 && first.limit === 0);
  assert.equal(Number(await exists(client, logins.key(who))), 1, "the state lives under the Go API's key");
  const denied = await logins.allow(who);
  assert.ok(!denied.allowed && denied.limit === 0 && denied.retryAfter > 4000 && denied.retryAfter <= 5000, JSON.stringify(denied));
  for (let i = 0; i < 4; i++) {
    now += i === 0 ? denied.retryAfter : 5000;
    assert.ok((await logins.allow(who)).allowed, `attempt ${i}`);
  }
  now += 5000;
  const sixth = await logins.allow(who);
  assert.ok(!sixth.allowed && sixth.limit === 1 && sixth.retryAfter > 3000e3, "the sixth in an hour waits for the hour");
  await logins.reset(who);
  assert.equal(Number(await exists(client, logins.key(who))), 0);
  assert.ok((await logins.allow(who)).allowed);
}));

const makers = {
  sliding_window: (c, o) => new SlidingWindow(c, [{ max: 3, durationMs: 60e3, resolutionMs: 1000 }], o),
  token_bucket: (c, o) => new TokenBucket(c, [{ capacity: 3, refillAmount: 1, refillIntervalMs: 60e3 }], o),
  zset_log: (c, o) => new ZSetLog(c, [{ max: 3, windowMs: 60e3 }], o),
  ar1: (c, o) => new AR1(c, [{ max: 3, factor: 2, resolutionMs: 60e3 }], o),
};

test("every script, at the default version and pinned to v5 and v6", (t) => eachTarget(t, async (t, client) => {
  for (const [name, make] of Object.entries(makers).flatMap(([n, m]) => [[n, m, undefined], [`${n}@v5`, m, 5], [`${n}@v6`, m, 6]].map(([a, b, v]) => [a, (c, o) => b(c, { ...o, version: v })]))) {
    const who = fresh();
    const limiter = make(client, { clock: () => T0, prefix: "node" });
    assert.equal(limiter.version, name.endsWith("@v5") ? 5 : name.endsWith("@v6") ? 6 : 7);
    assert.ok(limiter.key(who).includes(`:v${limiter.script.stateVersion}:`));
    assert.ok((await limiter.peek(who)).allowed, name);
    assert.equal(Number(await exists(client, limiter.key(who))), 0, `${name}: peek records nothing`);
    assert.equal((await limiter.allowN(who, 2)).remaining, 1, name);
    assert.equal((await limiter.allow(who)).remaining, 0, name);
    const r = await limiter.allow(who);
    assert.ok(!r.allowed && r.retryAfter > 0, name);
    const never = await limiter.allowN(who, 4);
    assert.ok(!never.allowed && never.retryAfter === NEVER, name);
    await limiter.reset(who);
    assert.ok((await limiter.allowN(who, 3)).allowed, name);
    await assert.rejects(limiter.allowN(who, 0), (e) => e instanceof LimitError && /invalid n: must be/.test(e.message));
  }
}));

test("NOSCRIPT and FCALL", (t) => eachTarget(t, async (t, client, { name, lib }) => {
  const who = fresh();
  const flush = async (...command) => {
    if (lib === "ioredis") {
      const nodes = name.endsWith("cluster") ? client.nodes("all") : [client];
      await Promise.all(nodes.map((n) => n.call(...command).catch(() => {})));
    } else if (Array.isArray(client.masters)) {
      const nodes = [...client.masters, ...(client.replicas || [])];
      await Promise.all(nodes.map(async (m) => (await client.nodeClient(m)).sendCommand(command).catch(() => {})));
    } else {
      await client.sendCommand(command).catch(() => {});
    }
  };
  await flush("SCRIPT", "FLUSH");
  assert.ok((await login(client).allow(who)).allowed, "EVAL after NOSCRIPT");
  await flush("FUNCTION", "DELETE", login(client).script.library.replace(/\.library\.lua$/, ""));
  const r = await login(client, { functions: true }).allow(who);
  assert.ok(!r.allowed && r.limit === 0, "FCALL loads the library and shares the state of EVALSHA");
  // Pinned to v5: FCALL names v5's function, from v5's library.
  await flush("FUNCTION", "DELETE", login(client, { version: 5 }).script.library.replace(/\.library\.lua$/, ""));
  const byFcallV5 = login(client, { functions: true, version: 5 });
  assert.ok(byFcallV5.script.function.endsWith("_v5") && !byFcallV5.key(who).equals(login(client).key(who)));
  assert.ok((await byFcallV5.allow(who)).allowed, "v5 has its own state");
  const v5 = await login(client, { version: 5 }).allow(who);
  assert.ok(!v5.allowed && v5.limit === 0, "EVALSHA of v5 shares the state of v5's FCALL");
}));

test("fail open and closed; an answer is never admitted", (t) => eachTarget(t, async (t, client) => {
  const down = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  down.on("error", () => {});
  await assert.rejects(login(down).allow("x"), UnavailableError);
  const r = await login(down, { failOpen: true }).allow("x");
  assert.ok(r.allowed && r.error instanceof UnavailableError);
  down.disconnect();
  const limiter = login(client, { failOpen: true });
  const who = fresh();
  await client.set(limiter.key(who), "not a hash");
  await assert.rejects(limiter.allow(who), ScriptError);
}));
