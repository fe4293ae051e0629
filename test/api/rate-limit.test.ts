import { describe, expect, it } from "vitest";
import { Semaphore, SlidingWindowLimiter } from "../../src/api/rate-limit.js";
import { faultDraws } from "../../src/server/faults.js";
import { FakeClock, settle } from "./fake-clock.js";

interface Run {
  start: number;
  end: number;
}

/**
 * Runs `arrivals.length` requests through a limiter on a fake clock: request i asks at `arrivals[i]` and lasts
 * `durations[i]`. Returns when every request ended.
 */
async function simulate(limiter: SlidingWindowLimiter, clock: FakeClock, arrivals: number[], durations: number[]): Promise<Run[]> {
  const runs: Run[] = [];
  const all = arrivals.map(async (at, i) => {
    await clock.sleep(at);
    const slot = await limiter.acquire();
    const start = clock.now();
    await clock.sleep(durations[i] as number);
    slot.done();
    runs.push({ start, end: clock.now() });
  });
  let finished = false;
  const done = Promise.all(all).then(() => {
    finished = true;
  });
  for (let i = 0; i < 10_000 && !finished; i++) await clock.advance(50);
  await done;
  return runs;
}

/**
 * The server's view: a request reaches it at some moment between its start and its end. Whatever those moments,
 * no window of length W may hold more than N arrivals. Worst case for request j arriving at its start s_j: every
 * other request i that started before s_j and ended after s_j - W may have arrived inside (s_j - W, s_j].
 */
function worstWindow(runs: Run[], windowMs: number): number {
  let worst = 0;
  for (const j of runs) {
    const inWindow = runs.filter((i) => i !== j && i.start <= j.start && i.end > j.start - windowMs).length + 1;
    worst = Math.max(worst, inWindow);
  }
  return worst;
}

describe("Semaphore", () => {
  it("lets at most `size` holders in, in arrival order", async () => {
    const sem = new Semaphore(2);
    const order: number[] = [];
    const holders = [1, 2, 3, 4].map(async (n) => {
      await sem.acquire();
      order.push(n);
    });
    await settle();
    expect(order).toEqual([1, 2]);
    expect(sem.inUse).toBe(2);
    sem.release();
    await settle();
    expect(order).toEqual([1, 2, 3]);
    sem.release();
    sem.release();
    sem.release();
    await Promise.all(holders);
    expect(order).toEqual([1, 2, 3, 4]);
    expect(sem.inUse).toBe(0);
  });

  it("refuses a size below 1", () => {
    expect(() => new Semaphore(0)).toThrow("semaphore size must be a whole number >= 1, got 0");
  });
});

describe("SlidingWindowLimiter", () => {
  it("starts N at once, then waits until the window after their ends has passed", async () => {
    const clock = new FakeClock();
    const limiter = new SlidingWindowLimiter({ count: 5, windowMs: 1000 }, clock);
    const runs = await simulate(limiter, clock, Array(12).fill(0), Array(12).fill(10));
    const starts = runs.map((r) => r.start).sort((a, b) => a - b);
    // Margin: 5 ms + 1/1000 of the window = 6 ms.
    expect(starts.slice(0, 5)).toEqual([0, 0, 0, 0, 0]);
    for (const s of starts.slice(5, 10)) expect(s).toBeCloseTo(10 + 1000 + 6, 2);
    for (const s of starts.slice(10)) expect(s).toBeCloseTo(2 * (10 + 1000 + 6), 2);
    expect(worstWindow(runs, 1000)).toBe(5);
    expect(clock.pending).toBe(0);
  });

  it("counts requests in flight: a long request holds its place until W after it ends", async () => {
    const clock = new FakeClock();
    const limiter = new SlidingWindowLimiter({ count: 2, windowMs: 100 }, clock);
    const runs = await simulate(limiter, clock, [0, 0, 0], [500, 10, 10]);
    const third = runs.map((r) => r.start).sort((a, b) => a - b)[2] as number;
    // The 10 ms request frees its place at 10 + 100 + 5.1, long before the 500 ms one ends.
    expect(third).toBeCloseTo(10 + 100 + 5.1, 2);
    expect(worstWindow(runs, 100)).toBe(2);
  });

  it("never lets the server see more than N requests in any window (randomized schedules)", async () => {
    for (let seed = 1; seed <= 8; seed++) {
      const random = faultDraws(seed); // a fixed sequence: the randomized schedule is the same on every run
      const clock = new FakeClock();
      const limit = { count: 1 + Math.floor(random() * 6), windowMs: 200 + Math.floor(random() * 800) };
      const limiter = new SlidingWindowLimiter(limit, clock);
      const n = 30;
      const arrivals = Array.from({ length: n }, () => Math.floor(random() * 3000));
      const durations = Array.from({ length: n }, () => 1 + Math.floor(random() * 300));
      const runs = await simulate(limiter, clock, arrivals, durations);
      expect(runs).toHaveLength(n);
      expect(worstWindow(runs, limit.windowMs)).toBeLessThanOrEqual(limit.count);
    }
  });

  it("serves waiters in order", async () => {
    const clock = new FakeClock();
    const limiter = new SlidingWindowLimiter({ count: 1, windowMs: 100 }, clock);
    const order: number[] = [];
    const first = await limiter.acquire();
    const waiting = [1, 2, 3].map(async (n) => {
      const slot = await limiter.acquire();
      order.push(n);
      slot.done();
    });
    first.done();
    for (let i = 0; i < 10 && order.length < 3; i++) await clock.advance(200);
    await Promise.all(waiting);
    expect(order).toEqual([1, 2, 3]);
  });

  it("refuses a count below 1 and an empty window", () => {
    expect(() => new SlidingWindowLimiter({ count: 0, windowMs: 1000 })).toThrow("rate limit count must be >= 1, got 0");
    expect(() => new SlidingWindowLimiter({ count: 1, windowMs: 0 })).toThrow("rate limit window must be > 0 ms, got 0");
  });
});
