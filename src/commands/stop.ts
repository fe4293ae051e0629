/**
 * Ctrl-C during an apply: the AbortSignal that stops a run gracefully (no new change starts, the requests in flight
 * finish), from SIGINT and SIGTERM, or from a caller's own signal.
 */
import type { CommandIO } from "./io.js";

export interface Stop {
  signal: AbortSignal;
  /** The signal's name (`SIGINT`), or `aborted` for the caller's AbortSignal; undefined when nothing stopped the run. */
  by(): string | undefined;
  dispose(): void;
}

/**
 * The AbortSignal of a run. Without a caller's signal, SIGINT and SIGTERM abort it; a second one restores the
 * default handling and re-raises it, so the process ends at once. `lost`, when it aborts, stops the run too, and
 * `by()` then names it.
 */
export function wireStop(io: CommandIO, external: AbortSignal | undefined, lost?: { signal: AbortSignal; by: string }): Stop {
  const controller = new AbortController();
  let by: string | undefined;
  // The run's lease was taken away (src/apply/lease.ts): stop as Ctrl-C does, saying why.
  const onLost = (): void => {
    if (!lost) return;
    by ??= lost.by;
    io.stderr(`${(lost.signal.reason as Error).message}: no new change starts; the requests in flight finish\n`);
    controller.abort();
  };
  if (lost?.signal.aborted) onLost();
  else lost?.signal.addEventListener("abort", onLost, { once: true });
  const disposeLost = (): void => lost?.signal.removeEventListener("abort", onLost);
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
