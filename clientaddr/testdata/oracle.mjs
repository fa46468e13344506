// The Node side of TestClientAddrDifferential: reads cases (JSON, one a
// line, as in testdata/clientaddr.json) from stdin and writes what
// src/address.js answers, one a line; a line {"flush": true} flushes.
import { createInterface } from "node:readline";
import { OptionError, Resolver } from "../../node/src/address.js";

function answer(c) {
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

let out = [];
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  const c = JSON.parse(line);
  if (c.flush) {
    const text = out.join("");
    out = [];
    if (!process.stdout.write(text)) await new Promise((resolve) => process.stdout.once("drain", resolve));
    continue;
  }
  let a;
  try {
    a = answer(c);
  } catch (err) { // an exception is an answer Go compares
    a = { key: "", exception: `${err.name}: ${err.message}` };
  }
  out.push(JSON.stringify(a) + "\n");
}
process.stdout.write(out.join(""));
