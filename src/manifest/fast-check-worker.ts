/**
 * The main thread's side of the worker thread that runs the fast checks of manifest texts (fast-worker.ts), so that
 * a large loading leaves the main thread free for the requests `plan` makes meanwhile. Started by the caller before
 * the loader is even imported (its start then overlaps the rest of the start-up); `loadDesired` sends it the texts
 * and closes it. This module imports no part of the loader. When the worker cannot run, every text is checked on
 * the main thread.
 */
import { Worker } from "node:worker_threads";
import type { FastCheck } from "./check-text.js";

/** A text to check, by its index among the files found. */
export interface Ask {
  index: number;
  text: string;
  display: string;
}

/** The checks of a text (null: the full way). */
export interface Answer {
  index: number;
  checks: FastCheck[] | null;
}

/** Texts in, their fast checks out; undefined when the worker failed. */
export class FastCheckWorker {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, (checks: FastCheck[] | null | undefined) => void>();
  private readonly answered = new Map<number, FastCheck[] | null>();
  private failed = false;
  private closed = false;

  constructor() {
    this.worker = new Worker(new URL("./fast-worker.js", import.meta.url));
    this.worker.on("message", ({ index, checks }: Answer) => {
      const resolve = this.waiting.get(index);
      if (resolve) resolve(checks);
      else this.answered.set(index, checks);
    });
    const fail = (): void => {
      this.failed = true;
      for (const resolve of this.waiting.values()) resolve(undefined);
      this.waiting.clear();
    };
    this.worker.on("error", fail);
    this.worker.on("exit", fail);
  }

  /** Sends a text to be checked (texts are checked in the order they are sent). */
  send(index: number, text: string, display: string): void {
    if (!this.failed) this.worker.postMessage({ index, text, display } satisfies Ask);
  }

  /** The checks of a text sent; undefined when the worker failed (check the text here). */
  checks(index: number): Promise<FastCheck[] | null | undefined> {
    if (this.answered.has(index)) return Promise.resolve(this.answered.get(index));
    if (this.failed) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiting.set(index, resolve));
  }

  /** Stops the worker (again: nothing). */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.worker.removeAllListeners("exit");
    await this.worker.terminate();
  }
}
