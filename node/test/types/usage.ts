// Compiled (not run) by types.test.js: the declarations describe the API.
import { SlidingWindow, Semaphore, LeaseLostError, LimitError, TokenBucket, DEFAULT_LIFETIME_MS, type Reservation, type Result, type Settlement } from "ratelua";
import { rateLimit } from "ratelua/express";
import { Redis } from "ioredis";

const logins = new SlidingWindow(new Redis(), [{ max: 1, durationMs: 5000, resolutionMs: 1000 }, { max: 5, duration: "1h", resolution: "10m" }], { prefix: "login" });
// @ts-expect-error a bare number names no unit
new SlidingWindow(new Redis(), [{ max: 10, duration: 60 }]);
// @ts-expect-error one of duration and durationMs
new SlidingWindow(new Redis(), [{ max: 10, duration: "60s", durationMs: 60_000 }]);
const pinned = new SlidingWindow(new Redis(), [{ max: 10, durationMs: 60_000 }], { version: 5 });
const v: number = pinned.version;
async function decide(who: string): Promise<number> {
  const r: Result = await logins.allow(who);
  return r.allowed ? 0 : r.retryAfter;
}
const mw = rateLimit({ limits: [{ limiter: logins, name: "login" }], trustedProxies: ["10.0.0.0/8"] });
const exports = new Semaphore(new Redis(), { max: 10, lease: "30s" }, { prefix: "export" });
async function exportFor(tenant: string): Promise<number> {
  const { lease, result } = await exports.acquire(tenant);
  if (lease === null) return result.retryAfter;
  try {
    await lease.renew();
  } catch (err) {
    if (err instanceof LeaseLostError) return err.leaseId;
  } finally {
    await lease.release();
  }
  const deadline: number | null = lease.deadline;
  return deadline ?? 0;
}
async function tokens(key: string, maxTokens: number, used: () => number): Promise<boolean> {
  const tpm = new TokenBucket(new Redis(), [{ capacity: 10_000, refillAmount: 10_000, refillInterval: "1m" }]);
  if (!tpm.reserves) return false;
  const r: Reservation = await tpm.reserve(key, maxTokens, { lifetime: "2m" });
  if (!r.allowed) return false;
  const s: Settlement | null = await r.settle(used());
  await tpm.reservation(key, r.id).cancel();
  return s !== null && s.applied && r.result !== null && r.result.remaining >= DEFAULT_LIFETIME_MS * 0;
}
export { decide, exportFor, mw, LimitError, v, tokens };
