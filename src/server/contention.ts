/**
 * What a store does with a transaction that lost a race (a deadlock, a busy database file, a lock it chose not to
 * wait for): roll it back and run it again, with a short jittered wait, while a time bound allows; past the bound,
 * give up with `StoreContentionError`, which the pipeline answers as 503 with `Retry-After` (app.ts). A transaction
 * that lost is always rolled back whole, so the request it carried changed nothing and may be sent again.
 */
import type { StoreObserver, TransactionOutcome } from "./store.js";

/** How long one request may spend losing races before it is refused as contended. */
export const CONTENTION_BUDGET_MS = 2000;
/** The `Retry-After` of the 503 answered past the budget, in seconds. */
export const CONTENTION_RETRY_AFTER_S = 1;
/** The first wait between two attempts is at most this; each further one doubles, up to `MAX_WAIT_MS`. */
const FIRST_WAIT_MS = 5;
const MAX_WAIT_MS = 100;

/**
 * Thrown inside a transaction to have the store roll it back and run it again from the start (a lock that could
 * not be taken without risking a deadlock).
 */
export class TransactionConflict extends Error {
  override name = "TransactionConflict";
}

/** Thrown by `Store.transaction` when its transaction kept losing races for the whole budget; nothing was committed. */
export class StoreContentionError extends Error {
  override name = "StoreContentionError";
  constructor(
    readonly attempts: number,
    readonly elapsedMs: number,
    options: { cause: unknown },
  ) {
    super(
      `the transaction lost ${attempts} race${attempts === 1 ? "" : "s"} with concurrent ones in ${Math.round(elapsedMs)} ms (last: ${(options.cause as Error).message ?? String(options.cause)})`,
      options,
    );
  }
}

export interface ContentionOptions {
  budgetMs?: number;
  /** Told how the transaction ended and of each race it lost. */
  observer?: StoreObserver | undefined;
  /** The short reason of a lost race, for the observer. */
  raceReason?: (err: unknown) => string;
  /** A number in [0, 1) per draw, for the jitter. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `attempt` until it resolves, or throws an error that `lostRace` does not recognise (rethrown as it is). An
 * attempt that lost a race runs again after a jittered wait (full jitter, 5 ms doubling up to 100 ms), unless that
 * would end past the budget: then `StoreContentionError`, with the last loss as its cause. `attempt` must leave
 * nothing behind when it throws (the stores roll back before they rethrow).
 */
export async function retryLostRaces<T>(attempt: () => Promise<T>, lostRace: (err: unknown) => boolean, options: ContentionOptions = {}): Promise<T> {
  const { budgetMs = CONTENTION_BUDGET_MS, random = Math.random, sleep = pause, now = () => performance.now(), observer, raceReason } = options;
  const started = now();
  const ended = (outcome: TransactionOutcome): void => observer?.transaction((now() - started) / 1000, outcome);
  for (let attempts = 1; ; attempts++) {
    try {
      const result = await attempt();
      ended("committed");
      return result;
    } catch (err) {
      if (!lostRace(err)) {
        ended("rolled_back");
        throw err;
      }
      observer?.lostRace(raceReason?.(err) ?? "conflict");
      const wait = random() * Math.min(MAX_WAIT_MS, FIRST_WAIT_MS * 2 ** (attempts - 1));
      const elapsed = now() - started;
      if (elapsed + wait >= budgetMs) {
        ended("contended");
        throw new StoreContentionError(attempts, elapsed, { cause: err });
      }
      await sleep(wait);
    }
  }
}
