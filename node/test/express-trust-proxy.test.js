// The Express middleware and Express's "trust proxy" setting: without
// trustedProxies the key is the client Express finds (req.ip); with them,
// the middleware's own rule (Go's clientaddr), whatever the app trusts.
// Real Express apps on loopback; the last test on real servers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import express from "express";
import { SlidingWindow } from "../index.js";
import { rateLimit, ConfigError } from "../src/express.js";
import { eachTarget } from "./servers.js";

const fake = { limits: 1, quota: () => ({ max: 5, window: 60000 }) };

// serve runs an app whose route answers the middleware's key for the
// request; it resolves to {get(headers) -> key, close()}.
async function serve(trustProxy, options) {
  const app = express();
  if (trustProxy !== undefined) app.set("trust proxy", trustProxy);
  const mw = rateLimit({ limits: [{ limiter: fake, name: "api" }], ...options });
  app.get("/key", (req, res) => res.send(mw.clientKey(req)));
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const url = `http://127.0.0.1:${server.address().port}/key`;
  return {
    get: async (headers = {}) => (await fetch(url, { headers })).text(),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

test("without trustedProxies the key follows Express's trust proxy", async () => {
  const cases = [
    // [trust proxy, X-Forwarded-For, key]
    [undefined, "203.0.113.1", "127.0.0.1"],
    [false, "203.0.113.1", "127.0.0.1"],
    [true, "203.0.113.1", "203.0.113.1"],
    [true, "203.0.113.1, 198.51.100.2", "203.0.113.1"], // true trusts every hop: Express's rule
    ["loopback", "6.6.6.6, 203.0.113.2", "203.0.113.2"],
    [1, "6.6.6.6, 203.0.113.3", "203.0.113.3"],
    ["loopback", "2001:db8:1:2::7", "2001:db8:1:2::/64"],
    ["loopback", "::ffff:203.0.113.4", "203.0.113.4"],
    [true, "junk", "127.0.0.1"], // req.ip is the client's text: the connection's key
    ["10.0.0.0/8", "203.0.113.1", "127.0.0.1"], // the peer is not trusted
  ];
  for (const [trust, xff, want] of cases) {
    const s = await serve(trust, {});
    try {
      assert.equal(await s.get({ "x-forwarded-for": xff }), want, `trust proxy ${trust}, X-Forwarded-For ${xff}`);
    } finally {
      await s.close();
    }
  }
});

test("with trustedProxies the middleware's rule holds whatever Express trusts", async () => {
  const cases = [
    // [trust proxy, options, headers, key]
    [true, { trustedProxies: [] }, { "x-forwarded-for": "203.0.113.1" }, "127.0.0.1"],
    [false, { trustedProxies: ["127.0.0.1"] }, { "x-forwarded-for": "6.6.6.6, 203.0.113.5" }, "203.0.113.5"],
    [true, { trustedProxies: ["127.0.0.1"] }, { "x-forwarded-for": "203.0.113.5, junk" }, "127.0.0.1"],
    [true, { trustedProxies: ["127.0.0.0/8"], proxyHeader: "Forwarded" }, { forwarded: 'for=198.51.100.9;x=", for=203.0.113.6' }, "127.0.0.1"],
    [true, { trustedProxies: ["127.0.0.0/8"], proxyHeader: "Forwarded" }, { forwarded: 'for=198.51.100.9, for="203.0.113.6:443"' }, "203.0.113.6"],
  ];
  for (const [trust, options, headers, want] of cases) {
    const s = await serve(trust, options);
    try {
      assert.equal(await s.get(headers), want, `trust proxy ${trust}, ${JSON.stringify(options)}, ${JSON.stringify(headers)}`);
    } finally {
      await s.close();
    }
  }
});

test("options that cannot mean what they say are refused", () => {
  const limits = [{ limiter: fake, name: "api" }];
  assert.throws(() => rateLimit({ limits, proxyHeader: "Forwarded" }),
    (e) => e instanceof ConfigError && /proxyHeader "Forwarded" needs trustedProxies/.test(e.message) && /trust proxy/.test(e.message));
  assert.throws(() => rateLimit({ limits, trustProxy: true }), (e) => e instanceof ConfigError && /unknown option "trustProxy"/.test(e.message));
  assert.throws(() => rateLimit({ limits, trustedProxies: ["10.0.0.0/8"], ipv6Prefix: 129 }), (e) => e instanceof ConfigError && /ipv6Prefix must be 1 to 128/.test(e.message));
});

// Issue 30: behind app.set("trust proxy", true), three clients shared one
// key. At 1 request a minute each now has its own.
test("three clients behind trust proxy have a limit each", (t) => eachTarget(t, async (t, client) => {
  const now = Date.UTC(2025, 0, 1);
  const limiter = new SlidingWindow(client, [{ max: 1, durationMs: 60000, resolutionMs: 1000 }],
    { prefix: `trust${randomUUID().slice(0, 8)}`, clock: () => now });
  const app = express();
  app.set("trust proxy", true);
  app.get("/", rateLimit({ limits: [{ limiter, name: "api" }] }), (req, res) => res.send("ok"));
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  try {
    const url = `http://127.0.0.1:${server.address().port}/`;
    const statuses = [];
    for (const round of [1, 2]) {
      for (const ip of ["203.0.113.1", "203.0.113.2", "203.0.113.3"]) {
        statuses.push(`${round}:${ip}:${(await fetch(url, { headers: { "x-forwarded-for": ip } })).status}`);
      }
    }
    assert.deepEqual(statuses, ["1:203.0.113.1:200", "1:203.0.113.2:200", "1:203.0.113.3:200",
      "2:203.0.113.1:429", "2:203.0.113.2:429", "2:203.0.113.3:429"]);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}));
