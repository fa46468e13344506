// The Express middleware: the login case on real servers, and its
// client-address rules without one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import express from "express";
import { SlidingWindow } from "../index.js";
import { rateLimit, short, ConfigError } from "../src/express.js";
import { eachTarget } from "./servers.js";

const fake = { limits: 1, quota: () => ({ max: 5, window: 60000 }) };
const mw = (options) => rateLimit({ limits: [{ limiter: fake, name: "api" }], ...options });
const req = (peer, headers = {}) => ({ socket: { remoteAddress: peer }, headers, headersDistinct: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])) });

test("policy names", () => {
  assert.deepEqual([5000, 3600e3, 5400e3, 1500, 250, 1.5].map(short), ["5s", "1h", "1h30m", "1.5s", "250ms", "1.5ms"]);
});

test("client keys", () => {
  const cases = [
    ["192.0.2.1", {}, {}, "192.0.2.1"],
    ["2001:db8:1:2:3::1", {}, {}, "2001:db8:1:2::/64"],
    ["10.0.0.1", { "x-forwarded-for": "203.0.113.9, 10.0.0.2" }, { trustedProxies: ["10.0.0.0/8"] }, "203.0.113.9"],
    ["10.0.0.1", { "x-forwarded-for": "203.0.113.9" }, {}, "10.0.0.1"],
    ["10.0.0.1", { "x-forwarded-for": "198.51.100.1, junk, 10.0.0.3" }, { trustedProxies: ["10.0.0.0/8"] }, "10.0.0.3"],
    ["10.0.0.1", { forwarded: 'for="[2001:db8::1]:80";proto=https' }, { trustedProxies: ["10.0.0.1"], proxyHeader: "Forwarded" }, "2001:db8::/64"],
    ["::ffff:192.0.2.7", {}, { ipv4Prefix: 24 }, "192.0.2.0/24"],
  ];
  for (const [peer, headers, options, want] of cases) assert.equal(mw(options).clientKey(req(peer, headers)), want, peer);
});

test("configuration errors", () => {
  assert.throws(() => mw({ trustedProxies: ["nope"] }), (e) => e instanceof ConfigError && /trustedProxies\[0\]/.test(e.message));
  assert.throws(() => mw({ proxyHeader: "X-Client" }), /proxyHeader/);
  assert.throws(() => rateLimit({ limits: [{ limiter: fake }] }), /no name/);
});

test("the login case behind Express", (t) => eachTarget(t, async (t, client) => {
  const now = Date.UTC(2025, 0, 1);
  const logins = new SlidingWindow(client, [{ max: 1, durationMs: 5000, resolutionMs: 1000 }, { max: 5, durationMs: 3600e3, resolutionMs: 600e3 }],
    { prefix: `express${randomUUID().slice(0, 8)}`, clock: () => now });
  const app = express();
  app.post("/login", rateLimit({ limits: [{ limiter: logins, name: "login" }] }), (req, res) => res.send("ok"));
  const server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  try {
    const url = `http://127.0.0.1:${server.address().port}/login`;
    const first = await fetch(url, { method: "POST" });
    assert.equal(first.status, 200);
    assert.equal(await first.text(), "ok");
    assert.equal(first.headers.get("ratelimit-policy"), '"login-5s";q=1;w=5, "login-1h";q=5;w=3600');
    assert.equal(first.headers.get("ratelimit"), '"login-5s";r=0;t=5');
    const second = await fetch(url, { method: "POST" });
    assert.equal(second.status, 429);
    assert.equal(second.headers.get("retry-after"), "5");
    assert.equal(second.headers.get("content-type"), "application/problem+json");
    assert.deepEqual(await second.json(), {
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded", title: "Quota Exceeded", status: 429,
      detail: 'policy "login-5s" allows this request in 5 s', "violated-policies": ["login-5s"],
    });
  } finally {
    server.close();
  }
}));
