// Compiled (not run) by types.test.js: the declarations describe the API.
import { SlidingWindow, LimitError, type Result } from "ratelua";
import { rateLimit } from "ratelua/express";
import { Redis } from "ioredis";

const logins = new SlidingWindow(new Redis(), [{ max: 1, duration: 5000, resolution: 1000 }, { max: 5, duration: 3_600_000 }], { prefix: "login" });
async function decide(who: string): Promise<number> {
  const r: Result = await logins.allow(who);
  return r.allowed ? 0 : r.retryAfter;
}
const mw = rateLimit({ limits: [{ limiter: logins, name: "login" }], trustedProxies: ["10.0.0.0/8"] });
export { decide, mw, LimitError };
