// Semaphore (script concurrency) on real servers: single nodes and six-node
// clusters of redis-server and valkey-server, through ioredis and node-redis.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import Redis from "ioredis";
import { Semaphore, LeaseLostError, LimitError, NEVER, ScriptError, UnavailableError } from "../index.js";
import { eachTarget } from "./servers.js";

const T0 = Date.UTC(2025, 0, 1);
const fresh = () => `job-${randomUUID()}-{é}%`;

test("acquire up to max, deny with retryAfter, release frees a slot", (t) => eachTarget(t, async (t, client) => {
  let now = T0;
  const who = fresh();
  const sem = new Semaphore(client, { max: 3, leaseMs: 30e3 }, { prefix: "node-sem", clock: () => now });
  assert.ok((await sem.peek(who)).allowed);
  assert.equal(Number(await client.exists(sem.key(who))), 0, "peek holds nothing");
  const leases = [];
  for (const want of [2, 1, 0]) {
    const { lease, result } = await sem.acquire(who);
    assert.ok(lease && result.allowed && result.remaining === want && result.limit === 0, JSON.stringify(result));
    leases.push(lease);
  }
  assert.equal(new Set(leases.map((l) => l.id)).size, 3);
  assert.equal(Number(await client.exists(sem.key(who))), 1, "the state lives under the Go API's key");
  now += 10e3;
  const denied = await sem.acquire(who);
  assert.ok(denied.lease === null && !denied.result.allowed && denied.result.retryAfter === 20e3, JSON.stringify(denied.result));
  await leases[1].release();
  assert.equal((await sem.peek(who)).remaining, 1, "a release frees its slot");
  const again = await sem.acquire(who);
  assert.ok(again.lease && !leases.some((l) => l.id === again.lease.id), "lease ids are not handed out twice");
  await leases[1].release(); // a second release does nothing
  await assert.rejects(leases[1].renew(), (e) => e instanceof LeaseLostError && /was released/.test(e.message));
  const never = await sem.acquireN(who, 4);
  assert.ok(never.lease === null && never.result.retryAfter === NEVER);
  await assert.rejects(sem.acquireN(who, 0), LimitError);
}));

test("renew, loss at the deadline, reset", (t) => eachTarget(t, async (t, client) => {
  let now = T0;
  const who = fresh();
  const sem = new Semaphore(client, { max: 1, leaseMs: 10e3 }, { clock: () => now });
  const { lease } = await sem.acquire(who);
  const first = lease.deadline;
  now += 8e3;
  await lease.renew();
  assert.equal(lease.deadline, first + 8e3);
  now += 8e3;
  assert.ok(!(await sem.acquire(who)).result.allowed, "the renewed lease still holds the slot");
  now += 10e3;
  assert.ok(lease.lost && /deadline/.test(lease.error.message), "the holder sees the loss without a round trip");
  await assert.rejects(lease.renew(), LeaseLostError);
  await assert.rejects(lease.release(), LeaseLostError);
  const other = await sem.acquire(who);
  assert.ok(other.result.allowed, "the expired lease's slot came back");
  await sem.reset(who);
  await assert.rejects(other.lease.renew(), (e) => e instanceof LeaseLostError && /server does not hold it/.test(e.message));
  assert.ok(other.lease.lost);
}));

test("the server's clock and FCALL share one semaphore", (t) => eachTarget(t, async (t, client) => {
  const who = fresh();
  const sem = new Semaphore(client, { max: 1, leaseMs: 5000 });
  const byFcall = new Semaphore(client, { max: 1, leaseMs: 5000 }, { functions: true });
  const { lease, result } = await sem.acquire(who);
  assert.ok(result.allowed && result.resetAfter > 4000 && result.resetAfter <= 5000);
  assert.ok(!(await byFcall.acquire(who)).result.allowed);
  await lease.renew();
  await lease.release();
  const held = await byFcall.acquire(who);
  assert.ok(held.result.allowed);
  await held.lease.release();
}));

test("fail-open, refusals, an answer is never admitted", (t) => eachTarget(t, async (t, client) => {
  const down = new Redis({ port: 1, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  await assert.rejects(new Semaphore(down, { max: 1, leaseMs: 5000 }).acquire("x"), UnavailableError);
  const open = await new Semaphore(down, { max: 1, leaseMs: 5000 }, { failOpen: true }).acquire("x");
  assert.ok(open.result.allowed && open.result.error instanceof UnavailableError && open.lease.local);
  await open.lease.renew();
  await open.lease.release();
  down.disconnect();
  assert.throws(() => new Semaphore(client, { max: 0, leaseMs: 5000 }), (e) => e instanceof LimitError && e.field === "Max");
  assert.throws(() => new Semaphore(client, { max: 1, leaseMs: 0 }), (e) => e instanceof LimitError && e.field === "Lease");
  assert.throws(() => new Semaphore(client, { max: 1, leaseMs: 5000 }, { countDenied: true }), (e) => e.field === "CountDenied");
  const who = fresh();
  const sem = new Semaphore(client, { max: 1, leaseMs: 5000 }, { failOpen: true });
  await client.set(sem.key(who), "not a sorted set");
  // v6 names another script's state (v5 answered WRONGTYPE).
  await assert.rejects(sem.acquire(who), (e) => e instanceof ScriptError && /holds a string that is not a concurrency state/.test(e.message));
  assert.equal(await client.get(sem.key(who)), "not a sorted set");
}));
