/**
 * Limits and test faults of the server: a rolling-window rate limit and an in-flight limit per account, the source
 * of the fault draws (their flags are parsed in src/model/syntax.ts). All are off unless configured.
 */
import { HttpError } from "./http-error.js";

/**
 * At most `count` requests per account in any rolling `windowMs`. Each account keeps the times of its last
 * `count` accepted requests in a ring: a request is refused when the oldest of them is still inside the window,
 * and told to come back when it leaves. Refused requests do not count.
 */
export class RateLimiter {
  private readonly rings = new Map<string, { times: Float64Array; next: number }>();

  constructor(
    readonly count: number,
    readonly windowMs: number,
  ) {}

  /** Counts one request of `account`; throws 429 ERR_NGROK_226 with `Retry-After` when over the limit. */
  take(account: string, now: number = Date.now()): void {
    let ring = this.rings.get(account);
    if (!ring) {
      ring = { times: new Float64Array(this.count).fill(-Infinity), next: 0 };
      this.rings.set(account, ring);
    }
    const oldest = ring.times[ring.next] as number;
    if (now - oldest < this.windowMs) throw rateLimited(this.count, this.windowMs, oldest + this.windowMs - now);
    ring.times[ring.next] = now;
    ring.next = (ring.next + 1) % this.count;
  }
}

/** The 429 ERR_NGROK_226 of a request over `count` per `windowMs`, told to come back in `waitMs`. */
export function rateLimited(count: number, windowMs: number, waitMs: number): HttpError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return new HttpError(
    429,
    "ERR_NGROK_226",
    `too many requests: this API key may make ${count} requests per ${formatWindow(windowMs)}; retry after ${seconds} s`,
    {},
    { "Retry-After": String(seconds) },
  );
}

/** At most `max` requests of one account being answered at once. */
export class InflightLimiter {
  private readonly counts = new Map<string, number>();

  constructor(readonly max: number) {}

  /** Takes a slot; throws 429 ERR_NGROK_225 when all are taken. Call `release` when the answer is done. */
  acquire(account: string): void {
    const n = this.counts.get(account) ?? 0;
    if (n >= this.max) {
      throw new HttpError(
        429,
        "ERR_NGROK_225",
        `too many requests in flight: this API key may have ${this.max} requests in flight at once; wait for answers before sending more`,
        {},
        { "Retry-After": "1" },
      );
    }
    this.counts.set(account, n + 1);
  }

  release(account: string): void {
    const n = (this.counts.get(account) ?? 1) - 1;
    if (n <= 0) this.counts.delete(account);
    else this.counts.set(account, n);
  }
}

/**
 * The numbers in [0, 1) that decide the faults (fail, latency, drop). Without a seed they are Math.random; with one
 * they are a fixed sequence (mulberry32), so the same requests arriving in the same order meet the same faults.
 */
export function faultDraws(seed?: number): () => number {
  if (seed === undefined) return Math.random;
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function formatWindow(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0 && ms >= 60_000) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
