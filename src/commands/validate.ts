/**
 * `edgeplan validate [paths...]`: loads the project file (`edgeplan.yaml`, or `--config FILE`) and the manifests as
 * plan would, without contacting the API, prints every diagnostic to stderr (sorted by file, line, column) and a
 * summary line to stdout; with `--format json`, one document on stdout instead (src/render/validate.ts). Exit 1
 * when any error.
 */
import { EdgeplanError, EXIT, formatDiagnostic, sortDiagnostics, type Diagnostic } from "../model/errors.js";
import { renderValidateJson } from "../render/validate.js";
import { loadDesired, type LoadResult } from "../manifest/load.js";
import { loadProjectFile } from "../project/project-file.js";
import { chooseEnvironment } from "./project.js";

export interface ValidateOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  /** Also name the YAML files skipped because they hold no manifest. */
  verbose?: boolean;
  /** The project file to read instead of `edgeplan.yaml` in the working directory. */
  config?: string;
  /** `--env NAME`: the project file's environment whose `vars` the manifests' `${var.*}` read. */
  envName?: string;
  /** `text` (diagnostics on stderr, a summary line on stdout; the default) or `json` (one document on stdout). */
  format?: string;
  now?: Date;
  stdout?: { write(s: string): unknown };
  stderr?: { write(s: string): unknown };
}

/** The formats of `validate --format`. */
export const VALIDATE_FORMATS: readonly string[] = ["text", "json"];

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** The summary line: `3 files, 5 objects: 2 errors, 1 warning`, plus the count of skipped YAML files if any. */
export function formatSummary(result: Pick<LoadResult, "files" | "objects" | "skipped">, diagnostics: Diagnostic[]): string {
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  const warnings = diagnostics.length - errors;
  const skipped =
    result.skipped.length > 0
      ? ` (${plural(result.skipped.length, "YAML file")} without a kind skipped: not ${result.skipped.length === 1 ? "a manifest" : "manifests"})`
      : "";
  return `${plural(result.files.length, "file")}, ${plural(result.objects, "object")}: ${plural(errors, "error")}, ${plural(warnings, "warning")}${skipped}`;
}

/** Runs validate and returns the exit code: 1 when any error was found, else 0. */
export async function runValidate(paths: string[], options: ValidateOptions = {}): Promise<number> {
  const format = options.format ?? "text";
  if (!VALIDATE_FORMATS.includes(format)) throw new EdgeplanError(`--format: expected one of ${VALIDATE_FORMATS.join(", ")}, got "${format}"`);
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const project = await loadProjectFile(options.cwd ?? process.cwd(), options.config);
  // A file with errors has no environments to choose from: `${var.*}` is then left unjudged, the file's errors shown.
  const projectFailed = project.diagnostics.some((d) => d.severity === "error");
  const chosen = projectFailed ? { environment: "unknown" as const, settings: project.settings } : chooseEnvironment(project, options.envName, options.env ?? process.env);
  // Paths the project file may not name are not replaced by the default `.`: nothing is read.
  const result =
    paths.length === 0 && project.pathsRefused
      ? { files: [], objects: 0, skipped: [], diagnostics: [] }
      : await loadDesired(paths.length > 0 ? paths : (chosen.settings.paths ?? []), {
          vars: chosen.environment,
          ...(options.cwd !== undefined ? { cwd: options.cwd } : {}),
          ...(options.env !== undefined ? { env: options.env } : {}),
          ...(options.now !== undefined ? { now: options.now } : {}),
        });
  const diagnostics = sortDiagnostics([...project.diagnostics, ...result.diagnostics]);
  const failed = diagnostics.some((d) => d.severity === "error");
  if (format === "json") {
    stdout.write(renderValidateJson(result, diagnostics));
    return failed ? EXIT.error : EXIT.ok;
  }
  let text = "";
  if (options.verbose) for (const f of result.skipped) text += `note: skipped ${f}: no document in it has a kind, so it is not a manifest\n`;
  for (const d of diagnostics) text += `${formatDiagnostic(d)}\n`;
  if (text) stderr.write(text);
  stdout.write(`${formatSummary(result, diagnostics)}\n`);
  return failed ? EXIT.error : EXIT.ok;
}
