/**
 * The few error classes edgeplan throws. Each carries the exit code the CLI ends with (docs/cli.md, "Commands") and a
 * message that says where, what, and what to do. One top-level handler in the CLI prints them.
 */
import type { SourcePos } from "./state.js";

/** Exit codes: 4 is a rollout that waits for a person (`edgeplan rollout promote`); when 3 applies too, 3 wins. */
export const EXIT = { ok: 0, error: 1, changes: 2, partial: 3, paused: 4 } as const;

export class EdgeplanError extends Error {
  readonly exitCode: number = EXIT.error;
  override name = "EdgeplanError";
}

/** A problem in a manifest, pinned to its file, line and column. */
export interface Diagnostic {
  severity: "error" | "warning";
  pos: SourcePos;
  message: string;
}

/** Formats a diagnostic as `file:line:col: message`. */
export function formatDiagnostic(d: Diagnostic): string {
  const prefix = d.severity === "warning" ? "warning: " : "";
  return `${d.pos.file}:${d.pos.line}:${d.pos.col}: ${prefix}${d.message}`;
}

const positionOrder = (a: Diagnostic, b: Diagnostic): number =>
  a.pos.file < b.pos.file ? -1 : a.pos.file > b.pos.file ? 1 : a.pos.line - b.pos.line || a.pos.col - b.pos.col;

/** Sorts by file, line and column (stable), and drops exact repeats (one IdP file named by two routes). */
export function sortDiagnostics(diagnostics: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return [...diagnostics].sort(positionOrder).filter((d) => {
    const key = `${d.severity}\u0000${d.pos.file}\u0000${d.pos.line}\u0000${d.pos.col}\u0000${d.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

const FILE_ERROR_REASONS: Record<string, string> = {
  ENOENT: "no such file",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EISDIR: "it is a folder",
  ENOTDIR: "a part of its path is not a folder",
  ELOOP: "a loop of symbolic links",
  ENAMETOOLONG: "the path is too long",
};

/** Why a file-system call failed, in words a message can show after the path: from the error's code, else the code itself. */
export function fileErrorReason(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? (FILE_ERROR_REASONS[code] ?? code) : "unreadable";
}

export class ManifestError extends EdgeplanError {
  override name = "ManifestError";
  /** Without `message`, the message lists the errors, one `file:line:col: message` a line. */
  constructor(
    readonly diagnostics: Diagnostic[],
    message?: string,
  ) {
    super(
      message ??
        diagnostics
          .filter((d) => d.severity === "error")
          .map(formatDiagnostic)
          .join("\n"),
    );
  }
}

/** An answer of the API that was not a success, after retries. */
export class ApiError extends EdgeplanError {
  override name = "ApiError";
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly errorCode: string | undefined,
    readonly msg: string,
    readonly operationId: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `${method} ${path}: ${status}${errorCode ? ` ${errorCode}` : ""}: ${msg}` +
        (status === 401 || status === 403 ? "; the API key was refused: check EDGEPLAN_API_KEY (or --api-key-file) and that the key belongs to this account" : "") +
        (operationId ? ` (operation ${operationId})` : ""),
      options,
    );
  }
}

/**
 * Why a plan may not be applied: risks not acknowledged, no terminal to ask on, an answer other than `yes`, a
 * policy of level deny that does not hold.
 */
export type RefusalReason = "risk" | "no-terminal" | "declined" | "policy";

/** A plan that may not be applied as it is (a risk not acknowledged, no approval). */
export class UnsafePlanError extends EdgeplanError {
  override name = "UnsafePlanError";
  constructor(
    message: string,
    readonly reason: RefusalReason,
    /** With reason `risk`: the rules to acknowledge (`--ack RULE`, or the Action's `ack` input). */
    readonly rules: readonly string[] = [],
  ) {
    super(message);
  }
}

/** A saved plan whose objects changed since it was made. */
export class StalePlanError extends EdgeplanError {
  override name = "StalePlanError";
  constructor(
    readonly addresses: string[],
    message: string,
  ) {
    super(message);
  }
}

/** A bug in edgeplan: never the user's fault. */
export class InternalError extends EdgeplanError {
  override name = "InternalError";
}

/** Ends the CLI with a given code after output was already written. */
export class ExitError extends EdgeplanError {
  override name = "ExitError";
  override readonly exitCode: number;
  constructor(code: number, message = "") {
    super(message);
    this.exitCode = code;
  }
}

/** What an error means for the run that threw it: the same answer for the CLI and the GitHub Action. */
export interface ErrorOutcome {
  exitCode: number;
  /** What to print (`edgeplan: <message>`); empty when the output was already written (ExitError). */
  message: string;
  /** Manifest problems, with file, line and column (already printed by the command). */
  diagnostics: Diagnostic[];
  /** Risk rules that an apply would go ahead with once acknowledged. */
  unacknowledged: readonly string[];
  /** Not the user's doing: a bug in edgeplan, or an error that is not ours. */
  internal: boolean;
}

/** The outcome of an error, decided by its class and fields (never by its message). */
export function errorOutcome(err: unknown): ErrorOutcome {
  if (!(err instanceof EdgeplanError)) {
    const message = `internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`;
    return { exitCode: EXIT.error, message, diagnostics: [], unacknowledged: [], internal: true };
  }
  return {
    exitCode: err.exitCode,
    message: err.message,
    diagnostics: err instanceof ManifestError ? err.diagnostics : [],
    unacknowledged: err instanceof UnsafePlanError && err.reason === "risk" ? err.rules : [],
    internal: err instanceof InternalError,
  };
}

/** 1-based line and column of a character offset. */
export function lineColOf(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = text.indexOf("\n"); i >= 0 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    lineStart = i + 1;
  }
  return { line, col: offset - lineStart + 1 };
}
