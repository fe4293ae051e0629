/**
 * `loadDesired` in a worker thread, so that a large loading leaves the main thread to the listing `plan` runs beside
 * it: its pages are followed up at once instead of between files. This module is both sides: `loadInWorker` starts
 * the thread on this file, which runs the loading and sends back the result, plain data.
 */
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import type { LoadOptions, LoadResult } from "../manifest/load.js";

/** What the thread is started with. */
interface LoadJob {
  edgeplanLoad: { paths: string[]; options: LoadOptions };
}

/** `loadDesired` on this thread, imported when needed (`plan` starts listing first). */
async function loadHere(paths: string[], options: LoadOptions): Promise<LoadResult> {
  const { loadDesired } = await import("../manifest/load.js");
  return loadDesired(paths, options);
}

/**
 * `loadDesired(paths, options)` run in a worker thread. Where the thread cannot start (the sources run without a
 * build: no load-worker.js beside this module), the loading runs on this thread.
 */
export function loadInWorker(paths: string[], options: LoadOptions): Promise<LoadResult> {
  return new Promise((resolve) => {
    const job: LoadJob = { edgeplanLoad: { paths, options } };
    const worker = new Worker(new URL("./load-worker.js", import.meta.url), { workerData: job });
    worker.once("message", (result: LoadResult) => {
      resolve(result);
      void worker.terminate();
    });
    worker.once("error", () => resolve(loadHere(paths, options)));
  });
}

const job = (workerData as Partial<LoadJob> | null)?.edgeplanLoad;
if (!isMainThread && parentPort && job) parentPort.postMessage(await loadHere(job.paths, job.options));
