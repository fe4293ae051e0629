/**
 * The project file in the commands: plan, apply, export, unlock and validate (and so the GitHub Action, which runs plan and
 * apply) take their defaults from `edgeplan.yaml` in the working directory, or from the file `--config` names.
 * Precedence, for every setting: a flag (or an option a caller passes), then the environment, then the file, then
 * the built-in default (applied later, where each option is parsed).
 */
import { access } from "node:fs/promises";
import { resolve } from "node:path";
import { EdgeplanError, ManifestError } from "../model/errors.js";
import { PROJECT_FILE, type ChosenEnvironment } from "../model/project-schema.js";
import { didYouMean } from "../model/suggest.js";
import type { ProjectFileResult, ProjectSettings } from "../project/project-file.js";
import { reportDiagnostics, type CommandIO } from "./io.js";

/** Settings that an environment variable also gives: the variable wins over the file. */
const ENV_OF: Partial<Record<keyof ProjectSettings, string>> = { stack: "EDGEPLAN_STACK", apiUrl: "EDGEPLAN_API_URL" };

/**
 * What a command's options hold that the project file can fill: `env` is `--env`, and `environment` the one chosen
 * (set by `withProjectFile`).
 */
export type ProjectFillable = { paths: string[]; config?: string | false; env?: string; environment?: ChosenEnvironment | null } & {
  [K in Exclude<keyof ProjectSettings, "paths">]?: ProjectSettings[K];
};

/**
 * Loads the project file and reports its diagnostics on stderr.
 * @throws ManifestError when the file has errors (nothing is sent to the API).
 */
export async function loadProject(io: CommandIO, config: string | undefined): Promise<ProjectFileResult> {
  // Most folders have no project file; telling so needs no YAML parser, so the loader is imported only for a file
  // (a `plan` then starts its reads sooner).
  if (
    config === undefined &&
    !(await access(resolve(io.cwd, PROJECT_FILE)).then(
      () => true,
      () => false,
    ))
  )
    return { settings: {}, diagnostics: [] };
  const { loadProjectFile } = await import("../project/project-file.js");
  const project = await loadProjectFile(io.cwd, config);
  if (!reportDiagnostics(io, project.diagnostics)) {
    const errors = project.diagnostics.filter((d) => d.severity === "error").length;
    throw new ManifestError(project.diagnostics, `${errors} error${errors === 1 ? "" : "s"} in ${project.file}; nothing was sent to the API`);
  }
  return project;
}

/** `options` with every setting it leaves out (and the environment does not give) taken from the project file. */
export function fillFromProject<T extends ProjectFillable>(options: T, settings: ProjectSettings, env: CommandIO["env"]): T {
  const filled: Record<string, unknown> = { ...options };
  for (const [key, value] of Object.entries(settings) as Array<[keyof ProjectSettings, unknown]>) {
    if (key === "paths") {
      if (options.paths.length === 0) filled.paths = value;
      continue;
    }
    const variable = ENV_OF[key];
    if (filled[key] === undefined && !(variable !== undefined && env[variable])) filled[key] = value;
  }
  return filled as T;
}

/**
 * The environment `--env` (else EDGEPLAN_ENV) names, or the only one the file defines; null when it defines none
 * and none is named. Its settings are the top level's with its own on top.
 * @throws EdgeplanError (exit 1, nothing sent) when one is named and the file does not define it, or when the file
 * defines several and none is named; both list the defined ones.
 */
export function chooseEnvironment(
  project: ProjectFileResult,
  flag: string | undefined,
  env: CommandIO["env"],
): { environment: ChosenEnvironment | null; settings: ProjectSettings } {
  const named = flag ?? (env.EDGEPLAN_ENV || undefined);
  const source = flag !== undefined ? "--env" : "EDGEPLAN_ENV";
  const defined = Object.keys(project.environments ?? {});
  const file = project.file ?? PROJECT_FILE;
  if (defined.length === 0) {
    if (named === undefined) return { environment: null, settings: project.settings };
    const where = project.file === undefined ? `there is no project file (${PROJECT_FILE}) to define it` : `${file} defines no environments`;
    throw new EdgeplanError(`${source} ${named}: ${where}; add it under environments: in ${file}, or leave out ${source}`);
  }
  const list = defined.join(", ");
  if (named === undefined && defined.length > 1) {
    throw new EdgeplanError(`${file} defines ${defined.length} environments (${list}): choose one with --env NAME or EDGEPLAN_ENV`);
  }
  const name = named ?? (defined[0] as string);
  const chosen = project.environments?.[name];
  if (chosen === undefined || !Object.hasOwn(project.environments ?? {}, name)) {
    throw new EdgeplanError(`${source} ${named}: no such environment in ${file}; the environments are ${list}${didYouMean(name, defined, "")}`);
  }
  const settings = { ...project.settings, ...chosen.settings };
  const environment: ChosenEnvironment = { name, vars: chosen.vars };
  if (settings.apiUrl !== undefined) environment.apiUrl = settings.apiUrl;
  return { environment, settings };
}

/**
 * Loads the project file (see `loadProject`), chooses the environment (see `chooseEnvironment`) and fills `options`
 * from its settings. The result's `environment` is the one chosen, or null.
 */
export async function withProjectFile<T extends ProjectFillable>(options: T, io: CommandIO): Promise<T> {
  if (options.config === false) return { ...options, environment: null };
  const project = await loadProject(io, options.config);
  const { environment, settings } = chooseEnvironment(project, options.env, io.env);
  return { ...fillFromProject(options, settings, io.env), environment };
}
