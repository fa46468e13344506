// Types of ratelua/express.
import type { Limiter, RateluaError, Settlement } from "./index.js";
import type { IncomingMessage, ServerResponse } from "node:http";

export interface Limit {
  limiter: Limiter;
  /** The policy name; a limiter of several limits names limit i "<name>-<its window>". */
  name?: string;
  /** One policy name per limit, instead of name. */
  names?: string[];
  /** The event key; null or undefined: the limit does not apply. Default: the client's address. */
  key?: (req: IncomingMessage) => string | null | undefined;
  /** The events a request counts for; below 1: free. */
  cost?: (req: IncomingMessage) => number;
  /** Keys the limit never applies to. */
  exempt?: string[];
  /** Instead of cost: the estimate to reserve for a cost known after the
   * work; settled with settle(res, n) when the response closes. */
  reserve?: (req: IncomingMessage) => number;
  /** The reservation's lifetime ("2m"); or lifetimeMs. Default 5 minutes. */
  lifetime?: string;
  lifetimeMs?: number;
}

export interface Options {
  limits: Limit[];
  /** The reverse proxies (addresses, networks) whose proxyHeader is read, by
   * the rule of Go's ratehttp. Unset: the client is Express's req.ip (its
   * "trust proxy" setting decides), or the connection's address outside
   * Express; [] trusts no proxy whatever Express's setting. */
  trustedProxies?: string[];
  /** The field trustedProxies write; refused without trustedProxies. */
  proxyHeader?: "X-Forwarded-For" | "Forwarded" | "X-Real-IP";
  ipv4Prefix?: number;
  ipv6Prefix?: number;
  headers?: "ietf" | "ietf+legacy" | "none";
  skip?: (req: IncomingMessage) => boolean;
  onError?: (req: IncomingMessage, err: Error) => void;
  clock?: () => number;
  /** Called when a request's reservations are settled (null: a settle failed, see onError). */
  onSettled?: (req: IncomingMessage, settlements: (Settlement | null)[]) => void;
}

export interface Middleware {
  (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void): Promise<void>;
  /** The key of the request's client address: "192.0.2.1", "2001:db8:1:2::/64". */
  clientKey(req: IncomingMessage): string;
}

export function rateLimit(options: Options): Middleware;
export function short(ms: number): string;
/** Report the request's actual cost, settled when its response closes. */
export function settle(res: ServerResponse, actual: number, name?: string | null): void;
export class ConfigError extends RateluaError {}
