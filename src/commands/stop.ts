/**
 * Ctrl-C during an apply: the AbortSignal that stops a run gracefully (no new change starts, the requests in flight
 * finish), from SIGINT and SIGTERM, or from a caller's own signal.
 */
import type { CommandIO } from "./io.js";

export interface Stop {
  signal: AbortSignal;
  /** The signal's name (`SIGINT`), `aborted` for the caller's AbortSignal, or a cause's `by`; undefined when nothing stopped the run. */
  by(): string | undefined;
  dispose(): void;
}

/** Something besides a signal that stops a run (the lease taken away, the API gone): when `signal` aborts, `line` says why. */
export interface StopCause {
  signal: AbortSignal;
  /** What `by()` answers once it stopped the run. */
  by: string;
  /** The one line printed on stderr, from the signal's reason. */
  line(reason: unknown): string;
}

/**
 * The AbortSignal of a run. Without a caller's signal, SIGINT and SIGTERM abort it; a second one restores the
 * default handling and re-raises it, so the process ends at once. Each of `causes`, when it aborts, stops the run
 * too (the first one to abort is what `by()` names), printing its line.
 */
export function wireStop(io: CommandIO, external: AbortSignal | undefined, causes: readonly StopCause[] = []): Stop {
  const controller = new AbortController();
  let by: string | undefined;
  const listeners = causes.map((cause) => {
    const onCause = (): void => {
      by ??= cause.by;
      io.stderr(`edgeplan: ${cause.line(cause.signal.reason)}: no new change starts; the requests in flight finish\n`);
      controller.abort();
    };
    if (cause.signal.aborted) onCause();
    else cause.signal.addEventListener("abort", onCause, { once: true });
    return () => cause.signal.removeEventListener("abort", onCause);
  });
  const disposeLost = (): void => {
    for (const remove of listeners) remove();
  };
  if (external) {
    const onAbort = (): void => {
      by ??= "aborted";
      controller.abort();
    };
    if (external.aborted) onAbort();
    else external.addEventListener("abort", onAbort, { once: true });
    return {
      signal: controller.signal,
      by: () => by,
      dispose: () => {
        disposeLost();
        external.removeEventListener("abort", onAbort);
      },
    };
  }
  const onSignal = (signal: NodeJS.Signals): void => {
    if (controller.signal.aborted) {
      dispose();
      process.kill(process.pid, signal);
      return;
    }
    by = signal;
    io.stderr(`\n${signal} received: no new request will start; waiting for the requests in flight to finish (send ${signal} again to stop at once)\n`);
    controller.abort();
  };
  const dispose = (): void => {
    disposeLost();
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  return { signal: controller.signal, by: () => by, dispose };
}
