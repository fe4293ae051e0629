/**
 * Limits and test faults of the server: a rolling-window rate limit and an in-flight limit per account, the source
 * of the fault draws, and the parsers of their flags. All are off unless configured.
 */
import { EdgeplanError } from "../model/errors.js";
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
  take(account: string, now: number): void {
    let ring = this.rings.get(account);
    if (!ring) {
      ring = { times: new Float64Array(this.count).fill(-Infinity), next: 0 };
      this.rings.set(account, ring);
    }
    const oldest = ring.times[ring.next] as number;
    if (now - oldest < this.windowMs) {
      const seconds = Math.max(1, Math.ceil((oldest + this.windowMs - now) / 1000));
      throw new HttpError(
        429,
        "ERR_NGROK_226",
        `too many requests: this API key may make ${this.count} requests per ${formatWindow(this.windowMs)}; retry after ${seconds} s`,
        {},
        { "Retry-After": String(seconds) },
      );
    }
    ring.times[ring.next] = now;
    ring.next = (ring.next + 1) % this.count;
  }
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

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/** Parses `N/WINDOW` (`20/1s`, `120/60s`, `5/500ms`, `100/1m`, `10/s`). Throws an EdgeplanError saying the form. */
export function parseRateLimit(text: string): { count: number; windowMs: number } {
  const m = /^\s*(\d+)\s*\/\s*(\d*(?:\.\d+)?)\s*(ms|s|m|min|h)\s*$/.exec(text);
  const count = m ? Number(m[1]) : NaN;
  const amount = m ? (m[2] === "" ? 1 : Number(m[2])) : NaN;
  const windowMs = m ? amount * (UNITS[m[3] as string] as number) : NaN;
  if (!m || !Number.isInteger(count) || count < 1 || !(windowMs >= 1)) {
    throw new EdgeplanError(`--rate-limit "${text}" is not N/WINDOW with N >= 1 and a window like 1s, 60s, 500ms or 1m (e.g. 120/60s)`);
  }
  return { count, windowMs: Math.round(windowMs) };
}

/** Parses `MS` or `MIN-MAX` milliseconds. */
export function parseLatency(text: string): [number, number] {
  const m = /^\s*(\d+)\s*(?:-\s*(\d+)\s*)?$/.exec(text);
  const lo = m ? Number(m[1]) : NaN;
  const hi = m ? Number(m[2] ?? m[1]) : NaN;
  if (!m || !(hi >= lo)) {
    throw new EdgeplanError(`--latency "${text}" is not MS or MIN-MAX in milliseconds with MIN <= MAX (e.g. 50 or 20-200)`);
  }
  return [lo, hi];
}

/** Parses a probability 0..1. */
export function parseProbability(flag: string, text: string): number {
  const p = /^\s*\d*(?:\.\d+)?\s*$/.test(text) && text.trim() !== "" ? Number(text) : NaN;
  if (!(p >= 0 && p <= 1)) throw new EdgeplanError(`${flag} "${text}" is not a probability from 0 to 1 (e.g. 0.1)`);
  return p;
}

/** Parses a whole number >= `min` (and <= `max` when given). */
export function parseWholeNumber(flag: string, text: string, min: number, max?: number): number {
  const n = /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= (max ?? Infinity))) {
    throw new EdgeplanError(`${flag} "${text}" is not a whole number ${max === undefined ? `>= ${min}` : `from ${min} to ${max}`}`);
  }
  return n;
}
