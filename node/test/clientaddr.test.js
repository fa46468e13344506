// Every case of testdata/clientaddr.json, written by Go's clientaddr: the
// Node resolver (src/address.js, which the Express middleware uses) gives the
// same key, or refuses the same option. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { OptionError, Resolver } from "../src/address.js";

const file = process.env.RATELUA_CLIENTADDR_VECTORS || new URL("../../testdata/clientaddr.json", import.meta.url);
const { cases } = JSON.parse(readFileSync(file, "utf8"));

/** answer is what the Node resolver answers to a case, in the table's form. */
export function answer(c) {
  const o = c.options;
  let r;
  try {
    r = new Resolver({ trustedProxies: o.trusted_proxies ?? [], proxyHeader: o.proxy_header, ipv4Prefix: o.ipv4_prefix, ipv6Prefix: o.ipv6_prefix });
  } catch (err) {
    if (!(err instanceof OptionError)) throw err;
    return { key: "", error: { option: err.option, index: err.index } };
  }
  return { key: r.key(c.peer, c.fields) };
}

test("the table covers the issues", () => {
  assert.ok(cases.filter((c) => c.name.startsWith("H1")).length >= 3);
  const v6 = new Set(cases.filter((c) => c.name.startsWith("IPv6 /")).map((c) => c.options.ipv6_prefix));
  assert.equal(v6.size, 128);
  assert.ok(cases.some((c) => c.name.startsWith("mapped ::ffff:0.0.0.0/96")));
});

test("every case", () => {
  let checked = 0;
  for (const [i, c] of cases.entries()) {
    const want = c.error ? { key: "", error: c.error } : { key: c.key };
    assert.deepEqual(answer(c), want, `case ${i}: ${c.name}: ${JSON.stringify(c)}`);
    checked++;
  }
  assert.equal(checked, cases.length);
});
