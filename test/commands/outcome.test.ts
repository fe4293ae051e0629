/**
 * The outcome guard (src/commands/outcome.ts) with a stand-in for `process`: an event loop that empties before the
 * command settled, an unhandled rejection and an uncaught exception are exit 1 with a message, never 0; a settled
 * command keeps its code, and an error after it still makes the exit 1.
 */
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { guardOutcome, waitingFor } from "../../src/commands/outcome.js";
import { ApiError } from "../../src/model/errors.js";

/** A stand-in for `process` whose `exit` records the code instead of ending anything. */
function fakeProcess(): EventEmitter & { exitCode?: number | string | null; exited?: number; exit(code: number): never; said: string[] } {
  const proc = Object.assign(new EventEmitter(), {
    said: [] as string[],
    exitCode: undefined as number | string | null | undefined,
    exited: undefined as number | undefined,
    exit(code: number): never {
      proc.exited = code;
      return undefined as never;
    },
  });
  return proc;
}

describe("guardOutcome", () => {
  it("an event loop emptied before the outcome: exit 1, naming the command and the requests still waited for", () => {
    const proc = fakeProcess();
    const guard = guardOutcome(proc, (m) => proc.said.push(m));
    guard.running("edgeplan export");
    const done = waitingFor("GET /edges/https?limit=100");
    void guard.settle(new Promise<number>(() => undefined));
    proc.emit("beforeExit");
    done();
    expect(proc.exitCode).toBe(1);
    expect(proc.said).toEqual([
      "edgeplan export ended before it finished, waiting for GET /edges/https?limit=100: nothing was left to run and it reported no outcome " +
        "(an internal error of edgeplan); its work is not complete: run it again (--verbose shows each request)",
    ]);
  });

  it("a settled command keeps its exit code through beforeExit; its error gives errorOutcome's message and code", async () => {
    const proc = fakeProcess();
    const guard = guardOutcome(proc, (m) => proc.said.push(m));
    await guard.settle(Promise.reject(new ApiError("GET", "/backends/weighted?limit=100", 500, undefined, "injected", undefined)));
    proc.emit("beforeExit");
    expect({ code: proc.exitCode, said: proc.said }).toEqual({ code: 1, said: ["GET /backends/weighted?limit=100: 500: injected"] });
    const ok = fakeProcess();
    await guardOutcome(ok, (m) => ok.said.push(m)).settle(Promise.resolve(2));
    ok.emit("beforeExit");
    expect({ code: ok.exitCode, said: ok.said }).toEqual({ code: 2, said: [] });
  });

  it("an unhandled rejection or an uncaught exception, before or after the outcome: exit 1 at once, with the error", async () => {
    const proc = fakeProcess();
    const guard = guardOutcome(proc, (m) => proc.said.push(m));
    guard.running("edgeplan apply");
    proc.emit("unhandledRejection", new Error("boom"));
    expect(proc.exited).toBe(1);
    expect(proc.said[0]).toMatch(/^edgeplan apply ended before it finished: an error was not handled: internal error: Error: boom\n/);
    const after = fakeProcess();
    await guardOutcome(after, (m) => after.said.push(m)).settle(Promise.resolve(0));
    after.emit("uncaughtException", new Error("late"));
    expect(after.exited).toBe(1);
    expect(after.said[0]).toMatch(/^internal error: Error: late\n/);
  });
});
