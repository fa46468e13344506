// A Node instance of the cross-language tests (integration/lang_test.go),
// the twin of worker.py: one JSON command per line on stdin, one JSON
// answer per line on stdout.
//
//   node worker.mjs PACKAGE_DIR ioredis|node-redis single HOST:PORT | cluster HOST:PORT,...
//
// PACKAGE_DIR is the ratelua package (node/ of the repository): the worker
// loads it, ioredis, node-redis and express from there.
import { createInterface } from "node:readline";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [pkgDir, lib, topology, addrList] = process.argv.slice(2);
const require = createRequire(path.join(path.resolve(pkgDir), "package.json"));
const ratelua = await import(pathToFileURL(path.join(path.resolve(pkgDir), "index.js")));
const { rateLimit } = await import(pathToFileURL(path.join(path.resolve(pkgDir), "src/express.js")));
const addrs = addrList.split(",").map((a) => ({ host: a.slice(0, a.lastIndexOf(":")), port: Number(a.slice(a.lastIndexOf(":") + 1)) }));

let client;
if (lib === "ioredis") {
  const Redis = require("ioredis");
  client = topology === "cluster" ? new Redis.Cluster(addrs) : new Redis(addrs[0]);
} else {
  const { createClient, createCluster } = require("redis");
  client = topology === "cluster"
    ? createCluster({ rootNodes: addrs.map((a) => ({ url: `redis://${a.host}:${a.port}` })) })
    : createClient({ url: `redis://${addrs[0].host}:${addrs[0].port}` });
  await client.connect();
}

const ms = (us) => us / 1000;
const KINDS = {
  sliding_window: ["SlidingWindow", (m) => ({ max: m.max, durationMs: ms(m.duration_us), resolutionMs: ms(m.resolution_us) })],
  token_bucket: ["TokenBucket", (m) => ({ capacity: m.capacity, refillAmount: m.refill_amount, refillIntervalMs: ms(m.refill_interval_us) })],
  zset_log: ["ZSetLog", (m) => ({ max: m.max, windowMs: ms(m.window_us) })],
  ar1: ["AR1", (m) => ({ max: m.max, factor: m.factor, resolutionMs: ms(m.resolution_us) })],
};

let nowUs = null;
const limiters = new Map();
function limiter(cmd, clocked) {
  const cache = JSON.stringify([cmd.script, cmd.limits, cmd.prefix, cmd.count_denied ?? false, cmd.version ?? null, clocked]);
  if (!limiters.has(cache)) {
    const [name, limit] = KINDS[cmd.script];
    limiters.set(cache, new ratelua[name](client, cmd.limits.map(limit), {
      prefix: cmd.prefix, countDenied: cmd.count_denied ?? false, clock: clocked ? () => nowUs / 1000 : null,
      version: cmd.version ?? null,
    }));
  }
  return limiters.get(cache);
}

async function http(cmd) {
  const express = require("express");
  const [, limit] = KINDS.sliding_window;
  const logins = new ratelua.SlidingWindow(client, cmd.limits.map(limit), { prefix: cmd.prefix, clock: () => nowUs / 1000 });
  const app = express();
  app.post("/login", rateLimit({ limits: [{ limiter: logins, name: "login" }], trustedProxies: ["127.0.0.1"] }), (req, res) => {
    res.type("text/plain").send("ok");
  });
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const responses = [];
  try {
    for (const req of cmd.requests) {
      nowUs = req.at_us;
      const res = await fetch(`http://127.0.0.1:${server.address().port}/login`, { method: "POST", headers: { "X-Forwarded-For": req.xff } });
      const headers = {};
      for (const [k, v] of res.headers) headers[k.toLowerCase()] = v;
      responses.push({ status: res.status, headers, body: await res.text() });
    }
  } finally {
    server.close();
  }
  return responses;
}

async function handle(cmd) {
  switch (cmd.op) {
    case "call": {
      nowUs = cmd.now_us;
      const l = limiter(cmd, cmd.now_us !== null);
      const key = Buffer.from(cmd.key_hex, "hex");
      if (cmd.n < 0) {
        await l.reset(key);
        return { reset: true };
      }
      const r = cmd.n > 0 ? await l.allowN(key, cmd.n) : await l.peek(key);
      return { allowed: r.allowed, remaining: r.remaining, retry_after_us: r.retryAfterUs, reset_after_us: r.resetAfterUs, limit: r.limit };
    }
    case "reserve":
    case "settle": {
      // As worker.py's: a reserve (the id drawn by the package), or a settle
      // of a reservation any process made, through Limiter.reservation.
      nowUs = cmd.now_us;
      const l = limiter(cmd, true);
      const key = Buffer.from(cmd.key_hex, "hex");
      let r, extra;
      if (cmd.op === "reserve") {
        const res = await l.reserve(key, cmd.estimate, { lifetimeMs: ms(cmd.lifetime_us) });
        r = res.result;
        extra = { id: res.id };
      } else {
        const s = await l.reservation(key, cmd.id).settle(cmd.actual);
        r = s.result;
        extra = { applied: s.applied };
      }
      return { allowed: r.allowed, remaining: r.remaining, retry_after_us: r.retryAfterUs, reset_after_us: r.resetAfterUs, limit: r.limit, ...extra };
    }
    case "burst": {
      const l = limiter(cmd, false);
      const key = Buffer.from(cmd.key_hex, "hex");
      let admitted = 0;
      for (let i = 0; i < cmd.count; i++) if ((await l.allow(key)).allowed) admitted++;
      return { admitted };
    }
    case "hold": {
      // As worker.py's hold: acquires on a semaphore, each lease held
      // counted in counter_hex.
      const sem = new ratelua.Semaphore(client, { max: cmd.slots.max, leaseMs: ms(cmd.slots.lease_us) }, { prefix: cmd.prefix });
      const key = Buffer.from(cmd.key_hex, "hex");
      const counter = Buffer.from(cmd.counter_hex, "hex");
      const sleep = (t) => new Promise((resolve) => setTimeout(resolve, t));
      let acquired = 0, denied = 0, peak = 0;
      for (let i = 0; i < cmd.rounds; i++) {
        const { lease } = await sem.acquire(key);
        if (!lease) {
          denied++;
          await sleep(cmd.hold_ms / 10);
          continue;
        }
        acquired++;
        peak = Math.max(peak, Number(await client.incr(counter)));
        await sleep(cmd.hold_ms);
        await client.decr(counter);
        await lease.release();
        await sleep(cmd.hold_ms / 2); // a turn for the others
      }
      return { acquired, denied, peak };
    }
    case "http":
      return { responses: await http(cmd) };
  }
  return { error: `unknown op ${cmd.op}` };
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  let out;
  try {
    out = await handle(JSON.parse(line));
  } catch (err) {
    out = { error: `${err.name}: ${err.message}` };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
if (lib === "ioredis") await client.quit(); else await client.close();
