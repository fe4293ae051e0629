/**
 * Loading the project file, `edgeplan.yaml` (or the file `--config` names): YAML with positions, checked against
 * its zod schema (src/model/project-schema.ts), then each value parsed by the parser its flag uses
 * (`SETTING_PARSERS`, src/model/syntax.ts). Every problem is a diagnostic at `file:line:col`, as in a manifest.
 */
import { readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";
import type { Diagnostic } from "../model/errors.js";
import { EdgeplanError, fileErrorReason, sortDiagnostics } from "../model/errors.js";
import { projectPathProblem } from "../model/confine.js";
import { ProjectFileSchema, PROJECT_FILE, type EnvironmentSettings, type ProjectFile } from "../model/project-schema.js";
import type { SourcePos } from "../model/state.js";
import { SETTING_PARSERS } from "../model/syntax.js";
import { checkBaseUrl } from "../api/options.js";
import { checkAgainstSchema } from "../manifest/check-document.js";
import { decodeManifest, parseOneDocument, Pinner, type ParsedDocument } from "../manifest/yaml-source.js";
import type { Policy } from "../core/policies.js";
import { loadPolicies } from "./policies.js";

/** The settings of a project file, named as the commands' options name them. Paths are relative to the cwd. */
export interface ProjectSettings {
  paths?: string[];
  stack?: string;
  apiUrl?: string;
  /** The environment variable holding the API key (default EDGEPLAN_API_KEY). */
  apiKeyEnv?: string;
  concurrency?: string | number;
  rateLimit?: string;
  retries?: string | number;
  timeout?: string | number;
  maxShift?: string | number;
  maxDeletes?: string | number;
  prune?: boolean;
  /** The project's policies, compiled (`policies` and `policy_files`). */
  policies?: Policy[];
}

/** One environment of the file: its own settings (the top level's not merged in) and its variables. */
export interface ProjectEnvironment {
  settings: ProjectSettings;
  vars: Record<string, string>;
}

export interface ProjectFileResult {
  /** The file as shown in messages (relative to the cwd), or undefined when there is no project file. */
  file?: string;
  /** The top level's settings. */
  settings: ProjectSettings;
  /** The environments the file defines, by name, in the file's order (absent: none defined). */
  environments?: Record<string, ProjectEnvironment>;
  diagnostics: Diagnostic[];
  /** True when the file names a path it may not (see `confinePaths`): no manifest is read in its place, not even `.`. */
  pathsRefused?: boolean;
}

/** Keys a person may try that belong elsewhere, with where they go. */
const MISPLACED: Record<string, string> = {
  api_key: "the API key never goes in edgeplan.yaml (it would be committed): set EDGEPLAN_API_KEY or pass --api-key-file FILE",
  api_key_file: "the API key file is given with --api-key-file FILE, not in edgeplan.yaml",
};

/** The parser of each value that has a syntax of its own, by the file's key. */
const VALUE_CHECKS: Partial<Record<keyof EnvironmentSettings, (value: string | number, key: string) => unknown>> = {
  concurrency: SETTING_PARSERS.concurrency,
  retries: SETTING_PARSERS.retries,
  timeout: SETTING_PARSERS.timeout,
  rate_limit: SETTING_PARSERS.rateLimit,
  max_shift: SETTING_PARSERS.maxShift,
  max_deletes: SETTING_PARSERS.maxDeletes,
  api_url: (value, key) => checkBaseUrl(String(value), true, key),
};

/**
 * Reads the project file: `configPath` when given (it must exist), else `edgeplan.yaml` in `cwd` when it exists.
 * No file: empty settings. Never throws for a problem inside the file: each is a diagnostic.
 * @throws EdgeplanError when `configPath` cannot be read.
 */
export async function loadProjectFile(cwd: string, configPath?: string): Promise<ProjectFileResult> {
  const absolute = path.resolve(cwd, configPath ?? PROJECT_FILE);
  const shown = path.relative(cwd, absolute) || PROJECT_FILE;
  let bytes: Uint8Array;
  try {
    // A named pipe or a device would block the read for ever.
    if (!(await stat(absolute)).isFile()) throw Object.assign(new Error("not a regular file"), { code: "not a regular file" });
    bytes = await readFile(absolute);
  } catch (err) {
    if (configPath === undefined && (err as NodeJS.ErrnoException).code === "ENOENT") return { settings: {}, diagnostics: [] };
    throw new EdgeplanError(`--config ${configPath ?? shown}: cannot read the project file (${fileErrorReason(err)})`);
  }
  const decoded = decodeManifest(bytes, shown);
  if ("diagnostic" in decoded) return { file: shown, settings: {}, diagnostics: [decoded.diagnostic] };
  const read = parseOneDocument(decoded.text, shown, "the project file holds one document; remove this one");
  if ("errors" in read) return { file: shown, settings: {}, diagnostics: read.errors };
  const doc = read.doc;
  if (doc === null) return { file: shown, settings: {}, diagnostics: read.diagnostics };
  const checked = checkProjectDocument(doc, read.value);
  if (!checked.file) return { file: shown, settings: {}, diagnostics: checked.diagnostics };
  const refused = await confinePaths(doc, checked.file, path.dirname(absolute));
  if (refused.length > 0) return { file: shown, settings: {}, diagnostics: refused, pathsRefused: true };
  const dir = path.dirname(absolute);
  const policies = await loadPolicies(doc, checked.file, dir, (p) => path.relative(cwd, p));
  if (policies.diagnostics.some((d) => d.severity === "error")) return { file: shown, settings: {}, diagnostics: sortDiagnostics(policies.diagnostics) };
  const settings = toSettings(checked.file, dir, cwd);
  if (policies.policies.length > 0) settings.policies = policies.policies;
  const result: ProjectFileResult = { file: shown, settings, diagnostics: [...checked.diagnostics, ...policies.diagnostics] };
  if (checked.file.environments !== undefined) {
    result.environments = Object.fromEntries(
      Object.entries(checked.file.environments).map(([name, env]) => [name, { settings: toSettings(env, dir, cwd), vars: { ...(env.vars ?? {}) } }]),
    );
  }
  return result;
}

/** The manifest paths of the file that lead outside its folder or into .git/ (`projectPathProblem`), at their lines. */
async function confinePaths(doc: ParsedDocument, file: ProjectFile, dir: string): Promise<Diagnostic[]> {
  const realDir = await realpath(dir);
  const pin = new Pinner(doc);
  const diagnostics: Diagnostic[] = [];
  const scopes: Array<[PropertyKey[], EnvironmentSettings]> = [
    [[], file],
    ...Object.entries(file.environments ?? {}).map(([name, env]): [PropertyKey[], EnvironmentSettings] => [["environments", name], env]),
  ];
  for (const [at, settings] of scopes) {
    const single = typeof settings.paths === "string";
    const list = typeof settings.paths === "string" ? [settings.paths] : (settings.paths ?? []);
    for (const [i, written] of list.entries()) {
      const real = await realpath(path.resolve(dir, written)).catch(() => undefined);
      const problem = projectPathProblem(written, real === undefined ? undefined : path.relative(realDir, real));
      if (problem) diagnostics.push(error(pin.value(single ? [...at, "paths"] : [...at, "paths", i]), `paths: ${problem}`));
    }
  }
  return diagnostics;
}

/** The document against the schema, then each value against its parser. */
function checkProjectDocument(doc: ParsedDocument, value: unknown): { file?: ProjectFile; diagnostics: Diagnostic[] } {
  const pin = new Pinner(doc);
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    return { diagnostics: [error(doc.pos, "the project file must be a mapping of settings, e.g. stack: production")] };
  }
  const record = { ...(value as Record<string, unknown>) };
  const diagnostics = dropMisplaced(record, [], pin);
  const environments = record.environments;
  if (environments !== null && typeof environments === "object" && !Array.isArray(environments)) {
    const copies: Record<string, unknown> = {};
    for (const [name, env] of Object.entries(environments)) {
      const copy = env !== null && typeof env === "object" && !Array.isArray(env) ? { ...(env as Record<string, unknown>) } : env;
      if (copy !== env) diagnostics.push(...dropMisplaced(copy as Record<string, unknown>, ["environments", name], pin));
      copies[name] = copy;
    }
    record.environments = copies;
  }
  const result = checkAgainstSchema(ProjectFileSchema, doc, record);
  diagnostics.push(...result.diagnostics);
  // Values are checked even when another key is wrong, so that one run reports every problem of the file.
  diagnostics.push(...checkValues(record, [], pin));
  for (const [name, env] of Object.entries((record.environments ?? {}) as Record<string, unknown>)) {
    if (env !== null && typeof env === "object") diagnostics.push(...checkValues(env as Record<string, unknown>, ["environments", name], pin));
  }
  return diagnostics.length > 0 || !result.data ? { diagnostics: sortDiagnostics(diagnostics) } : { file: result.data, diagnostics };
}

/** Removes the keys that belong elsewhere (the API key) from `record`, with an error at each. */
function dropMisplaced(record: Record<string, unknown>, at: PropertyKey[], pin: Pinner): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  for (const [key, advice] of Object.entries(MISPLACED)) {
    if (!Object.hasOwn(record, key)) continue;
    diagnostics.push(error(pin.key([...at, key]), `${[...at, key].join(".")}: ${advice}`));
    delete record[key];
  }
  return diagnostics;
}

/** Each value of `record` (the top level, or an environment at `at`) against the parser of its flag. */
function checkValues(record: Record<string, unknown>, at: PropertyKey[], pin: Pinner): Diagnostic[] {
  const diagnostics: Diagnostic[] = [];
  for (const [key, check] of Object.entries(VALUE_CHECKS)) {
    const v = record[key];
    if (typeof v !== "string" && (typeof v !== "number" || key === "api_url")) continue;
    try {
      check(v, key);
    } catch (err) {
      if (!(err instanceof EdgeplanError)) throw err;
      // The parsers name the key; an environment's is named with its place.
      diagnostics.push(error(pin.value([...at, key]), at.length > 0 ? `${at.join(".")}.${err.message}` : err.message));
    }
  }
  return diagnostics;
}

function error(pos: SourcePos, message: string): Diagnostic {
  return { severity: "error", pos, message };
}

/** The file's values under the options' names (`rate_limit` is `rateLimit`); paths become relative to the cwd. */
function toSettings(file: EnvironmentSettings | ProjectFile, dir: string, cwd: string): ProjectSettings {
  const settings: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(file)) {
    // Environments are chosen by `chooseEnvironment`, and policies compiled by `loadPolicies`, not carried as written.
    if (key === "environments" || key === "vars" || key === "policies" || key === "policy_files") continue;
    if (value !== undefined) settings[key.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase())] = value;
  }
  // Written relative to the file, so that `--config other/edgeplan.yaml` means the same folders.
  const paths = typeof file.paths === "string" ? [file.paths] : file.paths;
  if (paths !== undefined) settings.paths = paths.map((p) => path.relative(cwd, path.resolve(dir, p)) || ".");
  return settings as ProjectSettings;
}
