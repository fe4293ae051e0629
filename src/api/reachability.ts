/**
 * Whether the API is still there, as the client's requests tell it. A request that ends without any answer after
 * its retries (connection refused or reset, a name that does not resolve) is one failure; any answer, even an
 * error, ends a run of them. After `threshold` failures in a row, across requests, the API is taken as gone:
 * `gone` aborts (its reason the first failure's cause), and the client sends nothing more (docs/reliability.md,
 * "When the API is gone"). Retries within one request are unchanged: a single transient failure never counts,
 * only a request that exhausted them. Pure: no clock, no I/O.
 */

/** Requests in a row that got no answer at all, each after its retries, before the API is taken as gone. */
export const GONE_AFTER_REQUESTS = 3;

/** Why the API is taken as gone: the first failure of the run of them, and how many requests there were. */
export interface GoneCause {
  /** The base URL's origin. */
  origin: string;
  /** `connection refused (ECONNREFUSED)`. */
  what: string;
  /** Attempts the first failed request made. */
  attempts: number;
  /** Requests in a row that got no answer. */
  requests: number;
}

export class Reachability {
  private readonly controller = new AbortController();
  private streak = 0;
  private first: Omit<GoneCause, "requests"> | null = null;

  constructor(private readonly threshold = GONE_AFTER_REQUESTS) {}

  /** Aborted once the API is taken as gone; its reason is the GoneCause. */
  get gone(): AbortSignal {
    return this.controller.signal;
  }

  /** The cause, once gone. */
  cause(): GoneCause | null {
    return this.gone.aborted ? (this.gone.reason as GoneCause) : null;
  }

  /** A request got an answer (whatever its status): the API is there. */
  answered(): void {
    if (this.gone.aborted) return;
    this.streak = 0;
    this.first = null;
  }

  /** A request ended with no answer after its retries. */
  noAnswer(origin: string, what: string, attempts: number): void {
    if (this.gone.aborted) return;
    this.streak++;
    this.first ??= { origin, what, attempts };
    if (this.streak >= this.threshold) this.controller.abort({ ...this.first, requests: this.streak } satisfies GoneCause);
  }
}

/** The one line that says why a run stopped: `the API at ORIGIN stopped answering: ...`. */
export function describeGone(cause: GoneCause): string {
  return (
    `the API at ${cause.origin} stopped answering: ${cause.requests} requests in a row got no answer ` +
    `(the first after ${cause.attempts} attempt${cause.attempts === 1 ? "" : "s"}: ${cause.what}); check that the server is up and --api-url`
  );
}
