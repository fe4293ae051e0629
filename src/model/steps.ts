/**
 * Long pure work done in steps: a generator that yields between units of work (a document, an object, a route).
 * `runSteps` runs one through at once; an I/O edge may instead give the event loop a turn between steps
 * (`runInTurns` in src/manifest/steps.ts), so that requests in flight beside the work are followed up promptly.
 * Pure.
 */

/** Runs a generator of steps to its end and returns what it returns. */
export function runSteps<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
