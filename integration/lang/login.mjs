// The login case (1 attempt per 5 s AND 5 per hour per address) with the
// installed ratelua package, as the README shows it:
//
//   node login.mjs HOST:PORT PREFIX ADDRESS
//
// Two attempts: prints one JSON line per decision and where ratelua was
// loaded from.
import Redis from "ioredis";
import { SlidingWindow } from "ratelua";

const [addr, prefix, who] = process.argv.slice(2);
const [host, port] = [addr.slice(0, addr.lastIndexOf(":")), Number(addr.slice(addr.lastIndexOf(":") + 1))];
const client = new Redis({ host, port });
const logins = new SlidingWindow(client, [
  { max: 1, durationMs: 5_000, resolutionMs: 1_000 }, // 1 per 5 s, in 1 s buckets
  { max: 5, durationMs: 3_600_000, resolutionMs: 600_000 }, // 5 per hour, in 10 min buckets
], { prefix });
for (let i = 0; i < 2; i++) {
  const r = await logins.allow(who);
  console.log(JSON.stringify({ allowed: r.allowed, remaining: r.remaining, retry_after: r.retryAfter / 1000, limit: r.limit, module: import.meta.resolve("ratelua") }));
}
await client.quit();
