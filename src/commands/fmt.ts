/**
 * `edgeplan fmt [--check] [paths...]`: rewrites manifests in the canonical layout (src/manifest/format.ts). Files are
 * found as `validate` finds them (the project file's paths when none are given, folders walked for *.yaml and *.yml,
 * YAML files without a kind skipped, links only inside the manifest root) and written atomically, each over its
 * real path. The files that change (or, with `--check`, would change) go to stdout, one a line; problems and the
 * summary to stderr. A file with YAML errors is left as it is. Exit 1 on any error, and with `--check` when a file
 * is not formatted; else 0.
 */
import { realpath, stat } from "node:fs/promises";
import { EXIT, formatDiagnostic, sortDiagnostics, type Diagnostic } from "../model/errors.js";
import { formatManifestText } from "../manifest/format.js";
import { readManifestFile } from "../manifest/load.js";
import { loadProjectFile, type ProjectFileResult } from "../project/project-file.js";
import { collectManifestFiles, type ManifestFile } from "../manifest/walk.js";
import type { CommandIO } from "./io.js";
import { chooseEnvironment } from "./project.js";
import { writeFileAtomic } from "./output.js";

export interface FmtOptions {
  /** Manifest files or folders (default: the project file's paths, else `.`). */
  paths: string[];
  /** Write nothing: list the files that are not formatted and exit 1 when there are any. */
  check?: boolean;
  /** The project file to read instead of `edgeplan.yaml`. */
  config?: string;
  /** `--env NAME` (else EDGEPLAN_ENV): take the paths of this environment of the project file. */
  env?: string;
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** What formatting one file gave: nothing to do, a new text, or diagnostics. */
type FileOutcome = "formatted" | { text: string } | { diagnostics: Diagnostic[] } | "skip";

async function formatFile(file: ManifestFile): Promise<FileOutcome> {
  const read = await readManifestFile(file);
  if (read === "skip") return "skip";
  if ("diagnostic" in read) return { diagnostics: [read.diagnostic] };
  const result = formatManifestText(read.text, file.display);
  if ("diagnostics" in result) return result;
  return result.text === read.text ? "formatted" : result;
}

/** Writes the new text over the file's real path (a link stays a link), keeping its permissions. */
async function writeFormatted(file: ManifestFile, text: string): Promise<void> {
  const real = await realpath(file.path);
  const { mode } = await stat(real);
  await writeFileAtomic(real, text, mode & 0o7777);
}

/**
 * The paths of the project file: those of the environment `--env` (else EDGEPLAN_ENV) names, which may set its own;
 * with none named, the top level's (formatting reads no variable, so no environment needs choosing).
 * @throws EdgeplanError for an environment the file does not define (see `chooseEnvironment`).
 */
function projectPaths(project: ProjectFileResult, options: FmtOptions, io: CommandIO): string[] {
  const named = options.env ?? (io.env.EDGEPLAN_ENV || undefined);
  if (named === undefined || project.diagnostics.some((d) => d.severity === "error")) return project.settings.paths ?? [];
  return chooseEnvironment(project, options.env, io.env).settings.paths ?? [];
}

/** Runs `fmt` and returns the exit code. */
export async function runFmt(options: FmtOptions, io: CommandIO): Promise<number> {
  const project = await loadProjectFile(io.cwd, options.config);
  const diagnostics: Diagnostic[] = project.diagnostics.filter((d) => d.severity === "error");
  const refused = options.paths.length === 0 && project.pathsRefused === true;
  const found = refused ? { files: [], diagnostics: [] } : await collectManifestFiles(options.paths.length > 0 ? options.paths : projectPaths(project, options, io), io.cwd);
  diagnostics.push(...found.diagnostics);
  const changed: string[] = [];
  let read = 0;
  for (const file of found.files) {
    const outcome = await formatFile(file);
    if (outcome === "skip") continue;
    read++;
    if (outcome === "formatted") continue;
    if ("diagnostics" in outcome) {
      diagnostics.push(...outcome.diagnostics);
      continue;
    }
    if (options.check !== true) await writeFormatted(file, outcome.text);
    changed.push(file.display);
  }
  for (const d of sortDiagnostics(diagnostics)) io.stderr(`${formatDiagnostic(d)}\n`);
  if (changed.length > 0) io.stdout(changed.map((f) => `${f}\n`).join(""));
  // A file with an error is never written: the summary says so, the diagnostics above say where.
  const errors =
    diagnostics.length > 0 ? `; ${plural(diagnostics.length, "error")} above, ${diagnostics.length === 1 ? "its file left as it is" : "their files left as they are"}` : "";
  if (options.check === true) {
    const advice = changed.length > 0 ? `; run: edgeplan fmt${options.paths.map((p) => ` ${p}`).join("")}` : "";
    io.stderr(`${plural(changed.length, "file")} of ${read} not formatted${advice}${errors}\n`);
    return diagnostics.length > 0 || changed.length > 0 ? EXIT.error : EXIT.ok;
  }
  io.stderr(`formatted ${plural(changed.length, "file")} of ${read}${errors}\n`);
  return diagnostics.length > 0 ? EXIT.error : EXIT.ok;
}
