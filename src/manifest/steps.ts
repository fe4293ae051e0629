/**
 * Long work done in steps. The loader's pure parts are generators that yield between units of work (a document, an
 * object); `runSteps` runs them through at once, `runInTurns` gives the event loop a turn whenever it has run for
 * `SLICE_MS`, so that requests started beside the loading (`plan` lists the live objects meanwhile) are answered
 * and followed up within a slice rather than after the whole loading.
 */

/** Longest the loader runs without giving the event loop a turn, in ms. */
export const SLICE_MS = 2;

/** Runs a generator of steps to its end and returns what it returns. */
export function runSteps<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Gives the event loop a turn when `SLICE_MS` have passed since the last one. */
export class Turns {
  private last = performance.now();

  async take(): Promise<void> {
    if (performance.now() - this.last < SLICE_MS) return;
    await new Promise((resolve) => setImmediate(resolve));
    this.last = performance.now();
  }
}

/** Runs a generator of steps to its end, taking a turn (see `Turns`) between steps. */
export async function runInTurns<T>(steps: Generator<void, T>, turns: Turns): Promise<T> {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await turns.take();
  }
}
