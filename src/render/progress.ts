/**
 * The progress line of a running apply, the same words on a terminal's live line and in a CI log's plain lines:
 * `45/150 changes done (2 failed), 11.8 requests/s, about 12 s left`, or `stopping: finishing the writes in flight` in place of the time once
 * the run is stopping. Reads the counts only. Pure.
 */
import { durationText } from "./common.js";

export interface ProgressState {
  /** Changes ended: done, failed, or skipped. */
  finished: number;
  failed: number;
  skipped: number;
  total: number;
  /** Requests per second since the first write. */
  requestsPerSecond: number;
  /** Time left, in whole seconds; null when unknown. */
  secondsLeft: number | null;
  /** The run is stopping (Ctrl-C, a lost lease): no change starts, so the time left of the whole plan means nothing. */
  stopping?: boolean;
}

/** The progress line, without a newline. */
export function renderProgressLine(p: ProgressState): string {
  const bad = [p.failed > 0 ? `${p.failed} failed` : "", p.skipped > 0 ? `${p.skipped} skipped` : ""].filter(Boolean).join(", ");
  const rate = `${p.requestsPerSecond.toFixed(1)} requests/s`;
  const left =
    p.finished >= p.total
      ? "finished"
      : p.stopping === true
        ? "stopping: finishing the writes in flight"
        : p.secondsLeft === null
          ? "time left unknown"
          : `${durationText(p.secondsLeft)} left`;
  return `${p.finished}/${p.total} changes done${bad ? ` (${bad})` : ""}, ${rate}, ${left}`;
}
