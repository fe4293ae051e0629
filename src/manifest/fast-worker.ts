/**
 * The worker thread of `FastCheckWorker` (fast-check-worker.ts): it runs the fast read and the schema checks of
 * manifest texts (`fastChecks`) and answers each `{index, text, display}` with `{index, checks}` (null: the text
 * goes the full way, on the main thread).
 */
import { setPriority } from "node:os";
import { isMainThread, parentPort } from "node:worker_threads";
import { runSteps } from "../model/steps.js";
import type { Answer, Ask } from "./fast-check-worker.js";
import { fastChecks, type FastCheck } from "./check-text.js";

/**
 * The nice value of this thread: on Linux a nice value belongs to a thread, and this one gives way to the main
 * thread (and to a server on the same machine), so that the requests `plan` makes while it loads are followed up at
 * once. It still gets every idle cycle, and at 10 about a tenth of what a thread at 0 gets of a core both want:
 * slowed, never starved. Elsewhere the value is the whole process's, so it is left alone.
 */
export const WORKER_NICE = 10;

if (!isMainThread && parentPort) {
  if (process.platform === "linux") {
    try {
      setPriority(WORKER_NICE);
    } catch {
      // Not allowed here: run at the process's priority.
    }
  }
  const port = parentPort;
  port.on("message", ({ index, text, display }: Ask) => {
    let checks: FastCheck[] | null;
    try {
      checks = runSteps(fastChecks(text, display));
    } catch {
      checks = null;
    }
    port.postMessage({ index, checks } satisfies Answer);
  });
}
