// The Express middleware's reserve, then settle ({reserve} limits and
// settle(res, n)) on real servers: the reservation settles with what the
// handler reported when the response closes — sent, ended by an error, or
// its client gone — and is cancelled when the request never reaches the
// handler. Tokens per minute: a bucket of 10 refilled 10 per minute, the
// caller's clock standing still.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import express from "express";
import Redis from "ioredis";
import { SlidingWindow, TokenBucket } from "../index.js";
import { ConfigError, rateLimit, settle } from "../src/express.js";
import { eachTarget } from "./servers.js";

const T0 = Date.UTC(2025, 0, 1);
// GUARD bounds a test waiting for a settle that a bug never sends, so that
// it fails instead of hanging the run (a guard, not a measure of speed).
const GUARD = { timeout: 60e3 };
const WHO = "127.0.0.1";
const maxTokens = (req) => Number(new URL(req.url, "http://x").searchParams.get("max_tokens"));

// serve runs app on a port; settledOnce() resolves at the next request's
// settle (the middleware's onSettled), so no test sleeps.
async function serve(t, handler, limits) {
  const waiters = [];
  const app = express();
  const errors = [];
  app.post("/v1/chat", rateLimit({
    limits, onSettled: (req, out) => waiters.shift()?.(out), onError: (req, err) => errors.push(err),
  }), handler);
  app.use((err, req, res, next) => res.status(500).send("failed")); // eslint-disable-line no-unused-vars
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  t.after(() => server.close());
  const url = (n) => `http://127.0.0.1:${server.address().port}/v1/chat?max_tokens=${n}`;
  const settledOnce = () => new Promise((resolve) => waiters.push(resolve));
  return { url, settledOnce, errors };
}

const tpmOf = (client, suffix = "") => new TokenBucket(client, [{ capacity: 10, refillAmount: 10, refillInterval: "1m" }],
  { prefix: `express${randomUUID().slice(0, 8)}${suffix}`, clock: () => T0 });

test("the reported cost settles; nothing reported keeps the estimate", GUARD, (t) => eachTarget(t, async (t, client) => {
  const tpm = tpmOf(client);
  const used = new Map([["8", 3]]); // max_tokens -> the tokens the model used
  const { url, settledOnce } = await serve(t, (req, res) => {
    const n = used.get(req.query.max_tokens);
    if (n !== undefined) settle(res, n);
    res.send("done");
  }, [{ limiter: tpm, name: "tpm", reserve: maxTokens }]);
  let done = settledOnce();
  const first = await fetch(url(8), { method: "POST" });
  assert.equal(first.status, 200);
  assert.equal(first.headers.get("ratelimit"), '"tpm";r=2;t=48', "the fields are the reserve's (8 missing: 48 s to full)");
  await first.text();
  const [s] = await done;
  assert.ok(s.applied && s.result.remaining === 5 + 2, JSON.stringify(s));
  assert.equal((await tpm.peek(WHO)).remaining, 7);
  done = settledOnce();
  await (await fetch(url(4), { method: "POST" })).text();
  await done;
  assert.equal((await tpm.peek(WHO)).remaining, 3, "nothing reported: the 4 reserved stay spent");
  assert.equal(String(await client.type(tpm.key(WHO))), "string", "settled: no reservation left open");
}));

test("an error after the report still settles it", GUARD, (t) => eachTarget(t, async (t, client) => {
  const tpm = tpmOf(client);
  const { url, settledOnce } = await serve(t, (req, res) => {
    settle(res, 2);
    throw new Error("the model failed");
  }, [{ limiter: tpm, name: "tpm", reserve: maxTokens }]);
  const done = settledOnce();
  const r = await fetch(url(8), { method: "POST" });
  assert.equal(r.status, 500);
  await r.text();
  await done;
  assert.equal((await tpm.peek(WHO)).remaining, 8);
}));

test("a client gone mid-stream still settles", GUARD, (t) => eachTarget(t, async (t, client) => {
  const tpm = tpmOf(client);
  // The settles sent: the middleware sends them as the response closes, so
  // the handler's own "close" listener (added after the middleware's)
  // sees whether one went out, and a settle never sent fails at once.
  let settles = 0;
  const send = tpm._settle.bind(tpm);
  tpm._settle = (...a) => { settles++; return send(...a); };
  let streaming, closed;
  const started = new Promise((resolve) => { streaming = resolve; });
  const sentAtClose = new Promise((resolve) => { closed = resolve; });
  const { url, settledOnce } = await serve(t, (req, res) => {
    res.once("close", () => closed(settles));
    res.write("token ");
    settle(res, 4);
    streaming();
    // The response never ends: the client hangs up.
  }, [{ limiter: tpm, name: "tpm", reserve: maxTokens }]);
  const done = settledOnce();
  const abort = new AbortController();
  const r = await fetch(url(8), { method: "POST", signal: abort.signal });
  await started;
  abort.abort();
  await r.text().catch(() => {});
  assert.equal(await sentAtClose, 1, "the response closed (its client gone) without a settle");
  await done;
  assert.equal((await tpm.peek(WHO)).remaining, 6);
}));

test("a request denied by another limit cancels its reservation; a report names its limit", GUARD, (t) => eachTarget(t, async (t, client) => {
  const tpm = tpmOf(client);
  const rpm = new SlidingWindow(client, [{ max: 1, durationMs: 60e3, resolutionMs: 1000 }], { prefix: `${tpm.prefix}r`, clock: () => T0 });
  const tpd = new TokenBucket(client, [{ capacity: 100, refillAmount: 100, refillInterval: "24h" }], { prefix: `${tpm.prefix}d`, clock: () => T0 });
  const { url, settledOnce } = await serve(t, (req, res) => {
    settle(res, 1, "tpm");
    settle(res, 6);
    res.send("done");
  }, [{ limiter: tpm, name: "tpm", reserve: maxTokens }, { limiter: tpd, name: "tpd", reserve: maxTokens }, { limiter: rpm, name: "rpm" }]);
  let done = settledOnce();
  assert.equal((await fetch(url(8), { method: "POST" })).status, 200);
  await done;
  assert.equal((await tpm.peek(WHO)).remaining, 9);
  assert.equal((await tpd.peek(WHO)).remaining, 94);
  done = settledOnce();
  const denied = await fetch(url(5), { method: "POST" });
  assert.equal(denied.status, 429);
  await denied.text();
  const out = await done;
  assert.ok(out.every((s) => s.applied), JSON.stringify(out));
  assert.equal((await tpm.peek(WHO)).remaining, 9, "the handler never ran: the 5 reserved came back");
  assert.equal((await tpd.peek(WHO)).remaining, 94);
}));

test("settle outside the middleware, bad reports and configuration errors", () => {
  assert.throws(() => settle({}, 1), /no rateLimit middleware/);
  assert.throws(() => settle({}, -1), (e) => e.field === "actual");
  const c = new Redis({ lazyConnect: true, enableOfflineQueue: false });
  const tb = new TokenBucket(c, [{ capacity: 10, refillAmount: 10, refillInterval: "1m" }]);
  const sw = new SlidingWindow(c, [{ max: 1, durationMs: 60e3 }], { version: 6 });
  assert.throws(() => rateLimit({ limits: [{ limiter: tb, name: "t", reserve: maxTokens, cost: maxTokens }] }), (e) => e instanceof ConfigError && /both cost and reserve/.test(e.message));
  assert.throws(() => rateLimit({ limits: [{ limiter: sw, name: "s", reserve: maxTokens }] }), /limit 0 reserves, but its limiter \(sliding_window@v6\)/);
  assert.throws(() => rateLimit({ limits: [{ limiter: tb, name: "t", lifetime: "1m" }] }), /lifetime but no reserve/);
});
