/**
 * `edgeplan validate [paths...]`: loads the project file (`edgeplan.yaml`, or `--config FILE`) and the manifests as
 * plan would, without contacting the API, prints every diagnostic to stderr (sorted by file, line, column) and a
 * summary line to stdout; with `--format json`, one document on stdout instead (src/render/validate.ts), for every
 * outcome: a problem of the project (a project file that cannot be read, an environment that cannot be chosen) is a
 * diagnostic of the project file like the others. `--all-envs` validates once per environment. Exit 1 when any error.
 */
import { EdgeplanError, EXIT, formatDiagnostic, ManifestError, sortDiagnostics, type Diagnostic } from "../model/errors.js";
import { PROJECT_FILE, type ChosenEnvironment } from "../model/project-schema.js";
import { renderValidateJson, type ValidateOutcome } from "../render/validate.js";
import { loadDesired, type LoadResult } from "../manifest/load.js";
import { loadProjectFile, type ProjectFileResult, type ProjectSettings } from "../project/project-file.js";
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
  /** `--all-envs`: validate once per environment of the project file (refused with `envName`). */
  allEnvs?: boolean;
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

/**
 * A problem of the project as a whole (no environment to choose, a file that cannot be read), at line 1 of `file`,
 * for the JSON document; in text it stays the error it is (`edgeplan: ...`, exit 1).
 */
function projectProblem(file: string, err: unknown, options: ValidateOptions): Diagnostic {
  if (options.format !== "json" || !(err instanceof EdgeplanError) || err instanceof ManifestError) throw err;
  return { severity: "error", pos: { file, line: 1, col: 1 }, message: err.message };
}

/** Reads the project file; one that cannot be read is a result with that diagnostic. */
async function readProject(options: ValidateOptions): Promise<ProjectFileResult> {
  const { config } = options;
  return loadProjectFile(options.cwd ?? process.cwd(), config).catch((err: unknown) => ({
    settings: {},
    diagnostics: [projectProblem(config ?? PROJECT_FILE, err, options)],
    pathsRefused: true,
  }));
}

/** Validates the manifests in one environment (`named`, or as `chooseEnvironment` picks), or in none. */
async function validateIn(paths: string[], project: ProjectFileResult, named: string | undefined, options: ValidateOptions): Promise<ValidateOutcome> {
  const env = options.env ?? process.env;
  // A file with errors has no environments to choose from: `${var.*}` is then left unjudged, the file's errors shown.
  const projectFailed = project.diagnostics.some((d) => d.severity === "error");
  let chosen: { environment: ChosenEnvironment | null | "unknown"; settings: ProjectSettings } = { environment: "unknown", settings: project.settings };
  const problems = [...project.diagnostics];
  if (!projectFailed) {
    try {
      chosen = chooseEnvironment(project, named, env);
    } catch (err) {
      problems.push(projectProblem(project.file ?? PROJECT_FILE, err, options));
    }
  }
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
  const environment = typeof chosen.environment === "object" && chosen.environment !== null ? chosen.environment.name : null;
  return { environment, read: result, diagnostics: sortDiagnostics([...problems, ...result.diagnostics]) };
}

/**
 * The validations to run: one (in the environment `--env` names or the only one), or with `--all-envs` one per
 * environment of the project file (one, in none, when it defines none or has errors).
 */
async function validateAll(paths: string[], options: ValidateOptions): Promise<{ outcomes: ValidateOutcome[]; note?: string }> {
  const project = await readProject(options);
  const names = Object.keys(project.environments ?? {});
  const failed = project.diagnostics.some((d) => d.severity === "error");
  if (options.allEnvs !== true || names.length === 0 || failed) {
    const outcomes = [await validateIn(paths, project, options.envName, options)];
    if (options.allEnvs !== true) return { outcomes };
    const why = failed ? "the project file has errors" : "the project file defines no environments";
    return { outcomes, note: `note: --all-envs: ${why}, so the manifests are validated once, as without it\n` };
  }
  const outcomes: ValidateOutcome[] = [];
  for (const name of names) outcomes.push(await validateIn(paths, project, name, options));
  return { outcomes };
}

const failed = (o: ValidateOutcome): boolean => o.diagnostics.some((d) => d.severity === "error");

/** Runs validate and returns the exit code: 1 when any error was found (in any environment), else 0. */
export async function runValidate(paths: string[], options: ValidateOptions = {}): Promise<number> {
  const format = options.format ?? "text";
  if (!VALIDATE_FORMATS.includes(format)) throw new EdgeplanError(`--format: expected one of ${VALIDATE_FORMATS.join(", ")}, got "${format}"`);
  if (options.allEnvs === true && options.envName !== undefined) {
    throw new EdgeplanError(`--all-envs validates every environment of the project file: leave out --env ${options.envName}, or leave out --all-envs`);
  }
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const { outcomes, note } = await validateAll(paths, options);
  const code = outcomes.some(failed) ? EXIT.error : EXIT.ok;
  if (format === "json") {
    stdout.write(renderValidateJson(outcomes, options.allEnvs === true));
    return code;
  }
  const grouped = options.allEnvs === true && outcomes.length > 1;
  if (note) stderr.write(note);
  for (const o of outcomes) {
    let text = grouped && o.diagnostics.length > 0 ? `environment ${o.environment}:\n` : "";
    if (options.verbose) for (const f of o.read.skipped) text += `note: skipped ${f}: no document in it has a kind, so it is not a manifest\n`;
    for (const d of o.diagnostics) text += `${formatDiagnostic(d)}\n`;
    if (text) stderr.write(text);
    stdout.write(`${grouped ? `${o.environment}: ` : ""}${formatSummary(o.read, [...o.diagnostics])}\n`);
  }
  return code;
}
