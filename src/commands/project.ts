/**
 * The project file in the commands: plan, apply, export, unlock and validate (and so the GitHub Action, which runs plan and
 * apply) take their defaults from `edgeplan.yaml` in the working directory, or from the file `--config` names.
 * Precedence, for every setting: a flag (or an option a caller passes), then the environment, then the file, then
 * the built-in default (applied later, where each option is parsed).
 */
import { access } from "node:fs/promises";
import { resolve } from "node:path";
import { ManifestError } from "../model/errors.js";
import { PROJECT_FILE } from "../model/project-schema.js";
import type { ProjectFileResult, ProjectSettings } from "../project/project-file.js";
import type { CommandIO } from "./io.js";
import { reportDiagnostics } from "./session.js";

/** Settings that an environment variable also gives: the variable wins over the file. */
const ENV_OF: Partial<Record<keyof ProjectSettings, string>> = { stack: "EDGEPLAN_STACK", apiUrl: "EDGEPLAN_API_URL" };

/** What a command's options hold that the project file can fill. */
export type ProjectFillable = { paths: string[]; config?: string | false } & { [K in Exclude<keyof ProjectSettings, "paths">]?: ProjectSettings[K] };

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

/** Loads the project file (see `loadProject`) and fills `options` from it. */
export async function withProjectFile<T extends ProjectFillable>(options: T, io: CommandIO): Promise<T> {
  if (options.config === false) return options;
  const project = await loadProject(io, options.config);
  return fillFromProject(options, project.settings, io.env);
}
