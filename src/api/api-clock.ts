/**
 * The API's clock as the client sees it: every answer's `Date` header (whole seconds, RFC 9110) bounds the offset
 * between the API's clock and this machine's. Rollout steps are timed with it (their marker times are compared by
 * any runner, on any machine), so a runner whose clock is hours off neither takes a step early nor waits for hours.
 */

/** Corrections this small are not made: HTTP servers cache the `Date` text for a second, a busy one longer. */
export const CLOCK_TOLERANCE_MS = 2000;

/** What one answer tells of the offset (API minus local, ms): between `lo` and `hi`. */
interface Bounds {
  lo: number;
  hi: number;
}

/**
 * The offset of the API's clock from this machine's, from the `Date` headers of the answers seen. An answer dated
 * `D` (a whole second) was made between sending at local `sent` and the answer at local `received`, so the offset
 * is within [D - received, D + 1000 - sent]; the answers' bounds are intersected. The offset used is the one of
 * those bounds nearest to 0, the least correction that makes the local clock agree with every answer; 0 when that
 * is within `CLOCK_TOLERANCE_MS` (a busy server may date an answer with the second before). No `Date` header seen:
 * 0, the local clock.
 */
export class ApiClock {
  private bounds: Bounds | null = null;

  /** `wall`: this machine's clock in ms since the epoch (tests pass a fake one). */
  constructor(private readonly wall: () => number = Date.now) {}

  /** This machine's time now: a request's `sent`, an answer's `received`. */
  local(): number {
    return this.wall();
  }

  /** Takes one answer's `Date` header into account; a missing or unreadable one tells nothing. */
  observe(sent: number, received: number, date: string | undefined): void {
    const at = date === undefined ? Number.NaN : Date.parse(date);
    if (Number.isNaN(at)) return;
    const seen: Bounds = { lo: at - received, hi: at + 1000 - sent };
    const b = this.bounds;
    const joined = b === null ? seen : { lo: Math.max(b.lo, seen.lo), hi: Math.min(b.hi, seen.hi) };
    // Bounds that no longer meet: one of the clocks was set meanwhile; the latest answer is what holds now.
    this.bounds = joined.lo <= joined.hi ? joined : seen;
  }

  /** The API's clock minus this machine's, in ms (0 when they agree, or no answer was dated). */
  offset(): number {
    const b = this.bounds;
    if (b === null) return 0;
    const least = b.lo > 0 ? b.lo : Math.min(b.hi, 0);
    return Math.abs(least) > CLOCK_TOLERANCE_MS ? least : 0;
  }

  /** The API's time now, in ms since the epoch. */
  now(): number {
    return this.wall() + this.offset();
  }
}
