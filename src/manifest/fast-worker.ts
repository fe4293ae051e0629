/**
 * The worker thread of `FastCheckWorker` (fast-check-worker.ts): it runs the fast read and the schema checks of
 * manifest texts (`fastChecks`) and answers each `{index, text, display}` with `{index, checks}` (null: the text
 * goes the full way, on the main thread).
 */
import { isMainThread, parentPort } from "node:worker_threads";
import { runSteps } from "../model/steps.js";
import type { Answer, Ask } from "./fast-check-worker.js";
import { fastChecks, type FastCheck } from "./check-text.js";

if (!isMainThread && parentPort) {
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
