/**
 * The one owner of a command's outcome in its process (the CLI's `main` and the Action's entry): a command exits 0
 * only when it said so. Until its outcome is settled, an unhandled rejection, an uncaught exception or the event loop
 * running empty (a promise that never settles: nothing is left to run, and Node would end the process with exit 0)
 * is an error exit, 1, with a message that says the command did not finish and what it was waiting for. A command
 * that runs until a signal (`serve`) keeps the loop busy, so only a real error reaches it.
 */
import { errorOutcome } from "../model/errors.js";

/** What the guard needs of `process` (a stand-in in tests). */
export interface OutcomeProcess {
  on(event: "beforeExit", listener: () => void): unknown;
  on(event: "unhandledRejection", listener: (reason: unknown) => void): unknown;
  on(event: "uncaughtException", listener: (err: Error) => void): unknown;
  exitCode?: number | string | null | undefined;
  exit(code: number): never;
}

/** What the process waits for, process-wide (`waitingFor`). */
const pending = new Map<number, string>();
let nextPending = 0;

/**
 * Records that the process waits for `what` (`GET /edges/https/edg_1`, a request's answer); call the returned
 * function when it ends. The guard names what is still waited for when a command ends before it finished.
 */
export function waitingFor(what: string): () => void {
  const id = nextPending++;
  pending.set(id, what);
  return () => void pending.delete(id);
}

/** How a command's promise becomes the process's exit code. */
export interface CommandOutcome {
  /** Names the command that runs (`state list`), for the message of one that does not finish. */
  running(command: string): void;
  /**
   * Waits for the command: its exit code, or the message and exit code `errorOutcome` gives its error (said with
   * `say`). Once settled, a later unhandled error still ends the process with 1, never 0.
   */
  settle(result: Promise<number>): Promise<void>;
}

/**
 * Installs the guard on `proc` (once per process); `say` reports a message (stderr for the CLI, an annotation for
 * the Action), without the `edgeplan: ` prefix.
 */
export function guardOutcome(proc: OutcomeProcess, say: (message: string) => void): CommandOutcome {
  let command = "the command";
  let settled = false;
  const unfinished = (what: string): string => {
    const waiting = [...new Set(pending.values())];
    const on = waiting.length > 0 ? `, waiting for ${waiting.slice(0, 3).join(", ")}${waiting.length > 3 ? ` and ${waiting.length - 3} more` : ""}` : "";
    return `${command} ended before it finished${on}: ${what}; its work is not complete: run it again (--verbose shows each request)`;
  };
  // An error nobody handled may leave work half done: the process ends now, with 1, whether or not it had settled.
  const unhandled = (err: unknown): never => {
    say(settled ? errorText(err) : unfinished(`an error was not handled: ${errorText(err)}`));
    return proc.exit(1);
  };
  proc.on("beforeExit", () => {
    if (settled) return;
    settled = true;
    say(unfinished("nothing was left to run and it reported no outcome (an internal error of edgeplan)"));
    proc.exitCode = 1;
  });
  proc.on("uncaughtException", unhandled);
  proc.on("unhandledRejection", unhandled);
  return {
    running(name) {
      command = name;
    },
    async settle(result) {
      let code: number;
      try {
        code = await result;
      } catch (err) {
        const outcome = errorOutcome(err);
        if (outcome.message) say(outcome.message);
        code = outcome.exitCode;
      }
      if (settled) return;
      settled = true;
      proc.exitCode = code;
    },
  };
}

function errorText(err: unknown): string {
  return errorOutcome(err).message;
}
