/** The API's clock from the `Date` of its answers: the offset a rollout's timing uses. */
import { describe, expect, it } from "vitest";
import { ApiClock, CLOCK_TOLERANCE_MS } from "../../src/api/api-clock.js";

const T = Date.parse("2026-01-01T12:00:00.000Z");
const date = (ms: number): string => new Date(ms).toUTCString();

/** A clock whose local time is `local`, told of one answer sent at `local` and received 40 ms later. */
function seen(local: number, apiAt: number): ApiClock {
  const clock = new ApiClock(() => local);
  clock.observe(local, local + 40, date(apiAt));
  return clock;
}

describe("ApiClock", () => {
  it("is the local clock while no answer is dated, or an answer's Date is unreadable", () => {
    const clock = new ApiClock(() => T);
    clock.observe(T, T + 5, undefined);
    clock.observe(T, T + 5, "yesterday at noon");
    expect([clock.offset(), clock.now()]).toEqual([0, T]);
  });

  it("corrects a local clock two hours fast to within a second of the API's, and never past it", () => {
    const fast = T + 2 * 3600_000 + 300;
    const clock = seen(fast, T + 300);
    // The header says 12:00:00 (its whole second): the API was at most at 12:00:00.999 when it answered.
    expect(clock.offset()).toBe(T + 1000 - fast);
    expect(clock.now() - (T + 300)).toBeGreaterThanOrEqual(0);
    expect(clock.now() - (T + 300)).toBeLessThan(1000);
    const slow = seen(T - 3600_000, T + 300);
    expect(slow.now()).toBe(T - 40);
  });

  it("makes no correction within what a Date header can tell, nor within the tolerance of a busy server", () => {
    expect(seen(T + 700, T + 650).offset()).toBe(0);
    expect(seen(T + 1000 + CLOCK_TOLERANCE_MS - 1, T).offset()).toBe(0);
    expect(seen(T + 1000 + CLOCK_TOLERANCE_MS + 1, T).offset()).toBe(-CLOCK_TOLERANCE_MS - 1);
  });

  it("narrows the offset with each answer, and starts again from the latest when a clock was set meanwhile", () => {
    let local = T + 10_000;
    const clock = new ApiClock(() => local);
    clock.observe(local, local + 10, date(T));
    local = T + 10_900;
    clock.observe(local, local + 10, date(T + 1000));
    // The first answer bounds the offset by -9000, the second by at least -9910: the nearest to 0 is -9000.
    expect(clock.offset()).toBe(-9000);
    clock.observe(local, local + 10, date(T + 3600_000));
    expect(clock.offset()).toBe(T + 3600_000 - (local + 10));
  });
});
