/**
 * Throughput controls of the client: a semaphore bounding the requests in flight, and a sliding-window limiter
 * keeping a run under the server's request budget. Both take a `Clock` so that tests drive time by hand.
 *
 * Why a sliding window and not a token bucket: the server counts requests per ROLLING window (N requests in any
 * window of length W). A bucket of capacity N refilled at N/W lets a client send N at once and N more spread over
 * the next W: up to 2N inside one window, and so 429s. The limiter below guarantees that in any window of length W
 * the server receives at most N of our requests.
 *
 * Why a slot is freed W after its request COMPLETED (not after it started): the client cannot know when a request
 * reached the server, only that it did so between the start and the end of the exchange (a new connection's
 * handshake or a queued write can delay the arrival past the start). Counting each request as "in the window" from
 * its start until W after its end is therefore safe whatever the arrival time; it costs one round-trip per slot,
 * which is small next to a window.
 */
import type { RateLimit } from "../model/syntax.js";

/** The time source of the limiter and of retry backoff; `now` in milliseconds from any fixed origin. */
export interface Clock {
  now(): number;
  /** Resolves after `ms`, or early (never rejecting) when `signal` aborts; an aborted sleep leaves no timer behind. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock: a monotonic `performance.now()` and `setTimeout`. */
export const systemClock: Clock = {
  now: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(
        () => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        },
        Math.max(0, ms),
      );
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
};

/**
 * A counting semaphore: at most `size` holders at once, waiters served in order, urgent ones first. Urgent is for
 * the requests of a chain (list pages, each naming the next): a chain cannot be overlapped with itself, so every
 * wait it makes behind an independent request lengthens the whole run.
 */
export class Semaphore {
  private held = 0;
  private readonly waiters: Array<() => void> = [];
  private readonly urgentWaiters: Array<() => void> = [];

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`semaphore size must be a whole number >= 1, got ${size}`);
  }

  /** Resolves when a place is free; the caller must call `release()` exactly once afterwards. */
  acquire(urgent = false): Promise<void> {
    if (this.held < this.size && this.waiters.length === 0 && this.urgentWaiters.length === 0) {
      this.held++;
      return Promise.resolve();
    }
    return new Promise((resolve) => (urgent ? this.urgentWaiters : this.waiters).push(resolve));
  }

  release(): void {
    const next = this.urgentWaiters.shift() ?? this.waiters.shift();
    // The place passes straight to the next waiter: `held` stays the same.
    if (next) next();
    else this.held--;
  }

  /** Holders right now (for tests and stats). */
  get inUse(): number {
    return this.held;
  }
}

/** A place in the limiter's window; `done()` is called once when the request's exchange has ended. */
export interface LimiterSlot {
  done(): void;
}

/**
 * Sliding-window limiter: a request may start only while fewer than `count` requests are either in flight or ended
 * less than `windowMs` (+ a small margin for clock rounding between two processes) ago. Waiters are served in order.
 */
export class SlidingWindowLimiter {
  /** End times of finished requests still inside the window, ascending. */
  private readonly ends: number[] = [];
  private inFlight = 0;
  private readonly queue: Array<() => void> = [];
  private readonly urgentQueue: Array<() => void> = [];
  private pumping = false;
  private wake: (() => void) | null = null;
  private readonly marginMs: number;

  constructor(
    readonly limit: RateLimit,
    private readonly clock: Clock = systemClock,
  ) {
    if (!Number.isInteger(limit.count) || limit.count < 1) throw new RangeError(`rate limit count must be >= 1, got ${limit.count}`);
    if (!(limit.windowMs > 0)) throw new RangeError(`rate limit window must be > 0 ms, got ${limit.windowMs}`);
    // Both sides round to whole milliseconds and the server may sit in another process: keep a few ms apart.
    this.marginMs = 5 + limit.windowMs / 1000;
  }

  /**
   * Resolves when a request may start; the returned slot's `done()` must be called when its exchange ends. Urgent
   * requests (a chain's, see Semaphore) go before the others that wait.
   */
  acquire(urgent = false): Promise<LimiterSlot> {
    return new Promise<LimiterSlot>((resolve) => {
      const admit = (): void => {
        this.inFlight++;
        let released = false;
        resolve({
          done: () => {
            if (released) return;
            released = true;
            this.inFlight--;
            this.ends.push(this.clock.now());
            this.poke();
          },
        });
      };
      (urgent ? this.urgentQueue : this.queue).push(admit);
      void this.pump();
    });
  }

  /** Requests counted in the window at this moment (in flight plus recently ended). */
  used(): number {
    this.prune(this.clock.now());
    return this.inFlight + this.ends.length;
  }

  private prune(now: number): void {
    const horizon = now - this.limit.windowMs - this.marginMs;
    while (this.ends.length > 0 && (this.ends[0] as number) <= horizon) this.ends.shift();
  }

  private poke(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** Admits queued requests in order while the window has room; one pump runs at a time. */
  private async pump(): Promise<void> {
    if (this.pumping) {
      this.poke();
      return;
    }
    this.pumping = true;
    try {
      while (this.queue.length + this.urgentQueue.length > 0) {
        const now = this.clock.now();
        this.prune(now);
        if (this.inFlight + this.ends.length < this.limit.count) {
          ((this.urgentQueue.shift() ?? this.queue.shift()) as () => void)();
          continue;
        }
        // Full: wait until the oldest ended request leaves the window, or until an in-flight one ends.
        const woken = new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        const oldest = this.ends[0];
        if (oldest === undefined) await woken;
        else {
          // The timer is cancelled when woken early, so a finished run never waits for a stale window timer.
          const cancel = new AbortController();
          await Promise.race([woken, this.clock.sleep(oldest + this.limit.windowMs + this.marginMs - now + 0.001, cancel.signal)]);
          cancel.abort();
        }
        this.wake = null;
      }
    } finally {
      this.pumping = false;
    }
  }
}
