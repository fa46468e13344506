// Types of the ratelua package (the runtime is plain JavaScript, index.js).

/** A client: an ioredis Redis or Cluster, or a node-redis client or cluster. */
export type Client = object;
/** An event key: a string (as UTF-8) or bytes. */
export type EventKey = string | Uint8Array;

/** At most max events in any duration (ms), counted in buckets of resolution (ms; default duration / 10). */
export interface Window { max: number; duration: number; resolution?: number }
/** Up to capacity tokens, refilled by refillAmount every refillInterval (ms). */
export interface Bucket { capacity: number; refillAmount: number; refillInterval: number }
/** At most max events in any window (ms), exactly. */
export interface Log { max: number; window: number }
/** A count divided by factor (> 1, three decimals at most) every resolution (ms). */
export interface Decay { max: number; factor: number; resolution: number }

export interface Options {
  /** Starts every state key; no '{' or '}'. Default "ratelua". */
  prefix?: string;
  /** Record denied attempts too. */
  countDenied?: boolean;
  /** The caller's clock (a Date or ms since the epoch); default the server's clock. */
  clock?: (() => Date | number) | null;
  /** Admit a call that got no answer, with the error in Result.error. */
  failOpen?: boolean;
  /** FCALL the release's Functions library instead of EVALSHA. */
  functions?: boolean;
}

/** One decision. */
export interface Result {
  allowed: boolean;
  remaining: number;
  /** 0 when allowed; otherwise the wait in ms, or NEVER (-1). */
  retryAfter: number;
  /** The time in ms until the state is fresh again. */
  resetAfter: number;
  /** The 0-based limit that decided; -1 after a reset or without an answer. */
  limit: number;
  /** Under failOpen, the UnavailableError of a call admitted without an answer. */
  error: UnavailableError | null;
  retryAfterUs: number;
  resetAfterUs: number;
}

export const NEVER: -1;

export class Limiter {
  readonly limits: number;
  readonly unit: "ms" | "us";
  readonly prefix: string;
  quota(i: number): { max: number; window: number };
  key(eventKey: EventKey): Buffer;
  args(n: number, now?: string): string[];
  allow(eventKey: EventKey): Promise<Result>;
  allowN(eventKey: EventKey, n: number): Promise<Result>;
  peek(eventKey: EventKey): Promise<Result>;
  reset(eventKey: EventKey): Promise<void>;
  loadFunctions(): Promise<void>;
}
export class SlidingWindow extends Limiter { constructor(client: Client, windows: Window[], options?: Options) }
export class TokenBucket extends Limiter { constructor(client: Client, buckets: Bucket[], options?: Options) }
export class ZSetLog extends Limiter { constructor(client: Client, logs: Log[], options?: Options) }
export class AR1 extends Limiter { constructor(client: Client, decays: Decay[], options?: Options) }

export class RateluaError extends Error {}
export class LimitError extends RateluaError { index: number; field: string; reason: string }
export class ScriptError extends RateluaError { script: string }
export class UnavailableError extends RateluaError { script: string }

export function escapeTag(eventKey: EventKey): Buffer;
