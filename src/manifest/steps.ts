/**
 * Giving the event loop a turn during long work done in steps (src/model/steps.ts): `runInTurns` takes a turn
 * whenever the work has run for `SLICE_MS`, so that requests started beside it (`plan` lists the live objects while
 * the manifests load and while the routes' part of the plan is built) are answered and followed up within a slice
 * rather than after the whole work.
 */

/** Longest the work runs without giving the event loop a turn, in ms. */
export const SLICE_MS = 2;

/**
 * When to give the event loop a turn: `if (turns.due()) await turns.take()` between steps. The check is apart
 * because awaiting costs a tick of its own even when nothing waits, and a loading has tens of thousands of steps.
 */
export class Turns {
  private last = performance.now();

  /** Whether `SLICE_MS` have passed since the last turn. */
  due(): boolean {
    return performance.now() - this.last >= SLICE_MS;
  }

  /** Gives the event loop a turn. */
  async take(): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    this.last = performance.now();
  }
}

/** Runs a generator of steps to its end, taking a turn (see `Turns`) between steps when one is due. */
export async function runInTurns<T>(steps: Generator<void, T>, turns: Turns): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (turns.due()) await turns.take();
  }
}
