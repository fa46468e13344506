// Types of the ratelua package (the runtime is plain JavaScript, index.js).

/** A client: an ioredis Redis or Cluster, or a node-redis client or cluster. */
export type Client = object;
/** An event key: a string (as UTF-8) or bytes. */
export type EventKey = string | Uint8Array;

/** A duration with units: "10s", "1.5s", "250ms", "1h30m", "100us" (units us, µs, ms, s, m, h). */
export type DurationText = string;
/** Duration field F, given with its unit: FMs (milliseconds, exact to the
 * microsecond) or F (a DurationText). A bare number in F is refused: it
 * could be seconds or milliseconds. */
type Duration<F extends string> =
  | ({ [K in `${F}Ms`]: number } & { [K in F]?: never })
  | ({ [K in F]: DurationText } & { [K in `${F}Ms`]?: never });
type OptionalDuration<F extends string> = Duration<F> | ({ [K in F]?: never } & { [K in `${F}Ms`]?: never });

/** At most max events in any duration, counted in buckets of resolution (default duration / 10). */
export type Window = { max: number } & Duration<"duration"> & OptionalDuration<"resolution">;
/** Up to capacity tokens, refilled by refillAmount every refillInterval. */
export type Bucket = { capacity: number; refillAmount: number } & Duration<"refillInterval">;
/** At most max events in any window, exactly. */
export type Log = { max: number } & Duration<"window">;
/** A count divided by factor (> 1, three decimals at most) every resolution. */
export type Decay = { max: number; factor: number } & Duration<"resolution">;

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
  /** The script version: default (undefined) the newest, 6; 5 pins release 0.1.0's scripts (the same keys as Go's Options.Version). */
  version?: number;
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
  /** The script version the limiter calls. */
  readonly version: number;
  quota(i: number): { max: number; window: number };
  key(eventKey: EventKey): Buffer;
  args(n: number, now?: string): string[];
  allow(eventKey: EventKey): Promise<Result>;
  allowN(eventKey: EventKey, n: number): Promise<Result>;
  peek(eventKey: EventKey): Promise<Result>;
  reset(eventKey: EventKey): Promise<void>;
  loadFunctions(): Promise<void>;
  /** Whether the script takes reserve and settle (token_bucket v7). */
  readonly reserves: boolean;
  /** Reserve estimate units; NotSupportedError where the script refuses the modes. */
  reserve(eventKey: EventKey, estimate: number, options?: ReserveOptions): Promise<Reservation>;
  /** A handle on a reservation reserved elsewhere, by its id. */
  reservation(eventKey: EventKey, id: number): Reservation;
  reservationArgs(n: number, mode: string, now?: string): string[];
}

/** reserve's options: the lifetime as text ("2m") or in ms (default 5
 * minutes), and the id (default a random one). */
export type ReserveOptions = { id?: number } & OptionalDuration<"lifetime">;

/** The answer to a settle or a cancel: applied false when the script
 * applied nothing (the id unknown, expired, settled already, or reset). */
export interface Settlement { applied: boolean; result: Result }

/** Units reserved, to settle once the work's cost is known. */
export class Reservation {
  readonly id: number;
  readonly eventKey: EventKey;
  readonly estimate: number;
  readonly result: Result | null;
  readonly settlement: Settlement | null;
  readonly allowed: boolean;
  readonly settled: boolean;
  /** null for a denied reservation; the earlier answer after one. */
  settle(actual: number): Promise<Settlement | null>;
  cancel(): Promise<Settlement | null>;
}
export const DEFAULT_LIFETIME_MS: number;
export function newReservationId(): number;
export class NotSupportedError extends RateluaError { script: string; operation: string }

export class SlidingWindow extends Limiter { constructor(client: Client, windows: Window[], options?: Options) }
export class TokenBucket extends Limiter { constructor(client: Client, buckets: Bucket[], options?: Options) }
export class ZSetLog extends Limiter { constructor(client: Client, logs: Log[], options?: Options) }
export class AR1 extends Limiter { constructor(client: Client, decays: Decay[], options?: Options) }

/** At most max slots held at once, each by a lease unless renewed. */
export type Slots = { max: number } & Duration<"lease">;
/** A Semaphore's options: countDenied does not apply (a denied acquire holds nothing). */
export type SemaphoreOptions = Omit<Options, "countDenied">;

/** Slots held on one semaphore key until released or lost. No background
 * renewal: call renew() more often than the lease time. */
export class Lease {
  readonly eventKey: EventKey;
  readonly slots: number;
  /** The lease id the server handed out (0 for a local lease). */
  readonly id: number;
  /** Admitted by failOpen without an answer: renew and release do nothing. */
  readonly local: boolean;
  /** When the lease is lost unless renewed (ms since the epoch); null for a local lease. */
  readonly deadline: number | null;
  /** Why the lease was lost; null while held. */
  readonly error: LeaseLostError | null;
  readonly lost: boolean;
  /** Extend the lease to a full lease time from now; rejects with LeaseLostError when no longer held. */
  renew(): Promise<void>;
  /** Give the slots back; a second release does nothing. */
  release(): Promise<void>;
}

/** What an acquire answers: a Lease when allowed, null when denied. */
export interface Acquired { lease: Lease | null; result: Result }

/** At most slots.max slots held at once per event key (script concurrency). */
export class Semaphore {
  constructor(client: Client, slots: Slots, options?: SemaphoreOptions);
  readonly slots: { max: number; leaseMs: number };
  readonly unit: "ms" | "us";
  readonly prefix: string;
  /** The script version the semaphore calls. */
  readonly version: number;
  key(eventKey: EventKey): Buffer;
  args(n: number, now?: string): string[];
  acquire(eventKey: EventKey): Promise<Acquired>;
  acquireN(eventKey: EventKey, n: number): Promise<Acquired>;
  /** Resolves when the background releases of acquires whose outcome was unknown have ended. */
  settled(): Promise<void>;
  peek(eventKey: EventKey): Promise<Result>;
  reset(eventKey: EventKey): Promise<void>;
  loadFunctions(): Promise<void>;
}
/** The Go API's name (NewConcurrency) for a Semaphore. */
export const Concurrency: typeof Semaphore;

export class RateluaError extends Error {}
export class LeaseLostError extends RateluaError { leaseId: number; reason: string }
export class LimitError extends RateluaError { index: number; field: string; reason: string }
export class ScriptError extends RateluaError { script: string }
export class UnavailableError extends RateluaError { script: string }

export function escapeTag(eventKey: EventKey): Buffer;
