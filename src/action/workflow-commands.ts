/**
 * GitHub Actions workflow commands (`::name key=value::message` lines on stdout), formatted and escaped exactly as
 * the runner parses them. Pure: every function returns the text to print.
 */
import type { Diagnostic } from "../model/errors.js";

/** Escapes a command's message: `%`, `\r` and `\n` would otherwise end or corrupt the command. */
export function escapeData(text: string): string {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

/** Escapes a property value: like the message, plus `:` and `,`, which separate properties. */
export function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, "%3A").replace(/,/g, "%2C");
}

/** One workflow command line, newline included. Properties with an undefined value are left out. */
export function workflowCommand(
  name: string,
  properties: Record<string, string | number | undefined>,
  message: string,
): string {
  const props = Object.entries(properties)
    .filter((entry): entry is [string, string | number] => entry[1] !== undefined)
    .map(([key, value]) => `${key}=${escapeProperty(String(value))}`)
    .join(",");
  return `::${name}${props ? ` ${props}` : ""}::${escapeData(message)}\n`;
}

/**
 * Tells the runner to hide `secret` in every later log line. The line itself is consumed by the runner and never
 * shown; it must come before anything else that could contain the secret. Each line of a multi-line secret is
 * masked on its own, because the runner matches line by line.
 */
export function addMaskCommands(secret: string): string {
  return secret
    .split(/\r?\n/)
    .filter((line) => line.trim() !== "")
    .map((line) => `::add-mask::${line}\n`)
    .join("");
}

/**
 * Brackets text that comes from a pull request (plan output quoting manifest values): between these two lines the
 * runner ignores workflow commands, so a manifest cannot inject `::add-mask::`, `::error::` or the like.
 */
export function stopCommands(token: string): string {
  return `::stop-commands::${token}\n`;
}
export function resumeCommands(token: string): string {
  return `::${token}::\n`;
}

export type AnnotationLevel = "error" | "warning" | "notice";

/** An annotation not tied to a file. */
export function annotation(level: AnnotationLevel, message: string, title = "edgeplan"): string {
  return workflowCommand(level, { title }, message);
}

/**
 * The annotation of a manifest diagnostic, pinned to its file, line and column. `file` is made relative to the
 * repository root (`workspace`) with forward slashes, because GitHub attaches annotations to files by that path.
 */
export function diagnosticAnnotation(d: Diagnostic, workspace: string): string {
  return workflowCommand(
    d.severity === "warning" ? "warning" : "error",
    { file: repoRelativePath(d.pos.file, workspace), line: d.pos.line, col: d.pos.col, title: "edgeplan" },
    d.message,
  );
}

/** `file` relative to `root` when it lies inside it, with `/` separators; otherwise unchanged but for separators. */
export function repoRelativePath(file: string, root: string): string {
  const norm = (p: string): string => p.replace(/\\/g, "/");
  const f = norm(file);
  const r = norm(root).replace(/\/+$/, "");
  if (r && f.startsWith(`${r}/`)) return f.slice(r.length + 1);
  return f.replace(/^\.\//, "");
}
