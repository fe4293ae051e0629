/**
 * What a command may touch of its process: output streams, environment, working directory, and whether a person
 * sits at the terminal. The CLI passes the real process; tests and the GitHub Action pass their own.
 */
import { createInterface } from "node:readline/promises";
import { EdgeplanError, formatDiagnostic, type Diagnostic } from "../model/errors.js";
import { Redactor } from "../model/redact.js";

export interface CommandIO {
  /** The command's product (a plan, a manifest listing): stdout, so `> file` captures exactly it. */
  stdout(text: string): void;
  /** Progress, warnings and errors. */
  stderr(text: string): void;
  env: Record<string, string | undefined>;
  cwd: string;
  stdoutIsTTY: boolean;
  stdinIsTTY: boolean;
  /** The terminal stderr writes to, when it is one (the live progress line of apply draws on it). */
  stderrTerminal?: NodeJS.WriteStream;
  /** Asks a question on the terminal and returns the answer (only called when stdinIsTTY); EndOfInputError when the input ends first. */
  prompt(question: string): Promise<string>;
  /**
   * The run's one redactor (src/model/redact.ts), which `stdout` and `stderr` apply: what learns a sensitive value
   * (the manifests' header and query values, the Action's key) tells it here. Absent: the caller's IO shows text as
   * given.
   */
  redactor?: Redactor;
}

let processRedactor: Redactor | undefined;

/**
 * The redactor of the running process, the same for every command and for the error handler: loading the manifests
 * teaches it what they send (src/commands/session.ts).
 */
export function redactorOfProcess(): Redactor {
  processRedactor ??= new Redactor();
  return processRedactor;
}

/** The CommandIO of the running process: everything it writes passes the process's redactor. */
export function processIO(): CommandIO {
  const redactor = redactorOfProcess();
  return {
    redactor,
    stdout: (text) => void process.stdout.write(redactor.redact(text)),
    stderr: (text) => void process.stderr.write(redactor.redact(text)),
    env: process.env,
    cwd: process.cwd(),
    stdoutIsTTY: Boolean(process.stdout.isTTY),
    stdinIsTTY: Boolean(process.stdin.isTTY),
    ...(process.stderr.isTTY ? { stderrTerminal: process.stderr } : {}),
    prompt: async (question) => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      // A question pending when the input ends (Ctrl-D) never settles: the process would end with no word.
      const ended = new Promise<never>((_, reject) => rl.once("close", () => reject(new EndOfInputError())));
      try {
        return await Promise.race([rl.question(question), ended]);
      } finally {
        rl.close();
      }
    },
  };
}

/** The input ended (Ctrl-D, a closed pipe) before a question was answered. */
export class EndOfInputError extends EdgeplanError {
  override name = "EndOfInputError";
  constructor() {
    super("the input ended before an answer was given; nothing was done");
  }
}

/** A CommandIO that records everything, for tests and for callers that post the output elsewhere; it redacts as the process's does. */
export function captureIO(env: Record<string, string | undefined> = {}, cwd = "."): CommandIO & { out: string; err: string } {
  const redactor = new Redactor();
  const io = {
    out: "",
    err: "",
    redactor,
    stdout(text: string) {
      io.out += redactor.redact(text);
    },
    stderr(text: string) {
      io.err += redactor.redact(text);
    },
    env,
    cwd,
    stdoutIsTTY: false,
    stdinIsTTY: false,
    prompt: async () => "",
  };
  return io;
}

/** Prints every diagnostic to stderr; returns true when none is an error. */
export function reportDiagnostics(io: CommandIO, diagnostics: Diagnostic[]): boolean {
  if (diagnostics.length > 0) io.stderr(diagnostics.map((d) => `${formatDiagnostic(d)}\n`).join(""));
  return !diagnostics.some((d) => d.severity === "error");
}
