// Replay calls through ratelua-client for the conformance test.
//
//   node examples/node/conformance.js --addr HOST:PORT [--cluster] < calls.json
//
// stdin is a JSON list of calls, each {"script": NAME, "version": N, "key":
// KEY, "args": [ARGV...]}; they run in order through snippet.decide (the
// README's snippet) and each prints one JSON line: the five integers of the
// reply, or {"error": MESSAGE} with the server's message less a leading "ERR ".
"use strict";

const fs = require("node:fs");
const { parseArgs } = require("node:util");
const { Redis, Cluster } = require("ioredis");

const { decide } = require("./snippet");

// connect returns a client that gives up after a few reconnection attempts,
// so that an unreachable server fails the calls instead of queueing them.
function connect(addr, cluster) {
  const i = addr.lastIndexOf(":");
  const node = { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
  const giveUp = (times) => (times > 3 ? null : 100 * times);
  const client = cluster
    ? new Cluster([node], { clusterRetryStrategy: giveUp, redisOptions: { maxRetriesPerRequest: 1 } })
    : new Redis({ ...node, retryStrategy: giveUp, maxRetriesPerRequest: 1 });
  client.on("error", (err) => console.error(`ioredis: ${err.message}`));
  return client;
}

async function main() {
  const { values } = parseArgs({ options: { addr: { type: "string" }, cluster: { type: "boolean", default: false } } });
  if (!values.addr) throw new Error("usage: conformance.js --addr HOST:PORT [--cluster] < calls.json");
  const calls = JSON.parse(fs.readFileSync(0, "utf8"));
  const client = connect(values.addr, values.cluster);
  try {
    for (const c of calls) {
      let line;
      try {
        const r = await decide(client, c.script, c.version, c.key, c.args);
        line = [r.allowed ? 1 : 0, r.remaining, r.retryAfter, r.resetAfter, r.limitIndex];
      } catch (err) {
        const msg = String(err && err.message);
        line = { error: msg.startsWith("ERR ") ? msg.slice(4) : msg };
      }
      process.stdout.write(JSON.stringify(line) + "\n");
    }
  } finally {
    client.disconnect();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
