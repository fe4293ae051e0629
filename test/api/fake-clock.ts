/** A hand-driven clock for the limiter and backoff tests: time moves only when `advance` is called. */
import type { Clock } from "../../src/api/rate-limit.js";

interface Timer {
  at: number;
  resolve: () => void;
}

export class FakeClock implements Clock {
  t = 0;
  private timers: Timer[] = [];
  /** Every sleep asked for, in ms (for backoff assertions). */
  readonly sleeps: number[] = [];

  now(): number {
    return this.t;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timer: Timer = { at: this.t + Math.max(0, ms), resolve };
      this.timers.push(timer);
      signal?.addEventListener(
        "abort",
        () => {
          this.timers = this.timers.filter((x) => x !== timer);
          resolve();
        },
        { once: true },
      );
    });
  }

  /** Pending timers (a finished run must leave none behind). */
  get pending(): number {
    return this.timers.length;
  }

  /** Moves time forward by `ms`, firing due timers in order and letting promise chains settle after each. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (let guard = 0; guard < 100_000; guard++) {
      await settle();
      this.timers.sort((a, b) => a.at - b.at);
      const next = this.timers[0];
      if (!next || next.at > end) break;
      this.timers.shift();
      this.t = Math.max(this.t, next.at);
      next.resolve();
    }
    this.t = end;
    await settle();
  }
}

/** Lets pending promise callbacks run (a few macrotask turns). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
}
