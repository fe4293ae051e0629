/**
 * `edgeplan export [--out DIR] [--route EDGE_ID/ROUTE_ID]... [paths...]`: reads every weighted backend of the
 * account and the modules of the chosen routes, and writes manifests for them, so that `plan` on that folder right
 * after shows no change but adoptions. A new (or empty) folder is written whole in a temporary folder, then renamed;
 * into a folder that holds files, each file is written atomically, and only over files that an export wrote (a
 * header line marks them) unless `--force`. The files written go to stdout; notes on what was left out, and the summary, to stderr.
 */
import type { Stats } from "node:fs";
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import type { ApiClient } from "../api/client.js";
import { describeMissing, RouteNotFoundError } from "../api/errors.js";
import { readRoutes, type RouteRead } from "../api/fetch-live.js";
import type { CommonCliOptions } from "../api/options.js";
import { buildExport, type ExportFile, type ExportInput, type ExportResult, type ExportRouteInput } from "../export/build-export.js";
import type { ExportSkip } from "../export/types.js";
import { inScope, scopeReachesKind } from "../core/scope.js";
import type { DesiredState } from "../model/state.js";
import { scopeFrom, type PlanFlags } from "./plan.js";
import { EdgeplanError, EXIT, fileErrorReason } from "../model/errors.js";
import { buildForeignFiles, type Existing } from "../export/ownership.js";
import { ID_PREFIX, idPattern } from "../model/wire.js";
import type { CommandIO } from "./io.js";
import { writeFileAtomic } from "./output.js";
import { withProjectFile } from "./project.js";
import { commandLine, whereArgs } from "./hints.js";
import { loadManifests, openSession } from "./session.js";

export const DEFAULT_EXPORT_DIR = "exported";

export interface ExportCommandOptions extends CommonCliOptions, Pick<PlanFlags, "target" | "exclude"> {
  /** Manifests whose EdgeRoute documents name routes to export. */
  paths: string[];
  /** Folder to write into (default `exported`): new, empty, or holding an earlier export. */
  out?: string;
  /** Overwrite files in `out` that export did not write. */
  force?: boolean;
  /** `EDGE_ID/ROUTE_ID` values of `--route`. */
  route?: string[];
}

export interface ExportCommandResult {
  exitCode: number;
  /** What was built (absent when the run stopped before reading the API). */
  result?: ExportResult;
  /** Absolute path of the folder written; absent when nothing was written. */
  outDir?: string;
}

/** A route named on the command line. */
export interface RouteRef {
  edge: string;
  route: string;
}

/** Parses one `--route` value; throws an EdgeplanError saying what is expected. */
export function parseRouteFlag(value: string): RouteRef {
  const parts = value.split("/");
  const [edge, route] = parts;
  if (parts.length !== 2 || edge === undefined || route === undefined || !idPattern(ID_PREFIX.edge).test(edge) || !idPattern(ID_PREFIX.route).test(route)) {
    throw new EdgeplanError(`--route ${JSON.stringify(value)}: expected EDGE_ID/ROUTE_ID, e.g. edghts_2G4e8ay6UX87bXwr8GXBHKATNk6/edghtsrt_32ELHwJPhCQPmmUX0L0b2M0hXZw`);
  }
  return { edge, route };
}

/**
 * What `dir` is: absent, an empty folder, or a folder that holds files (an earlier export, or files of the user's,
 * which `findForeignFiles` tells apart). Throws when it is not a folder or cannot be read.
 */
async function inspectOutDir(dir: string, shown: string): Promise<"absent" | "empty" | "filled"> {
  let info: Stats;
  try {
    info = await stat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "absent";
    throw new EdgeplanError(`--out ${shown}: cannot read it (${fileErrorReason(err)}); choose another --out`);
  }
  if (!info.isDirectory()) throw new EdgeplanError(`--out ${shown}: it exists and is not a folder; choose another --out or remove it`);
  return (await readdir(dir)).length > 0 ? "filled" : "empty";
}

/** Throws when `dir` exists and is not an empty folder: the check made again just before the rename. */
async function checkOutDir(dir: string, shown: string): Promise<void> {
  if ((await inspectOutDir(dir, shown)) === "filled") {
    throw new EdgeplanError(`--out ${shown}: the folder exists and is not empty; choose another --out or remove it`);
  }
}

/** What `dir` holds at each path an export would write (`Existing`), read without following a final link. */
async function readExisting(dir: string, files: readonly ExportFile[]): Promise<Map<string, Existing>> {
  const existing = new Map<string, Existing>();
  for (const file of files) {
    const target = path.join(dir, ...file.path.split("/"));
    try {
      const info = await lstat(target);
      existing.set(file.path, info.isFile() ? { kind: "file", text: await readFile(target, "utf8") } : { kind: "other" });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // A parent that is a file is in the way as much as the file itself.
      existing.set(file.path, code === "ENOENT" ? { kind: "none" } : { kind: "other" });
    }
  }
  return existing;
}

/**
 * Writes the files into an existing folder, each atomically (a temporary file, then a rename), after checking that
 * none of them would overwrite a file that export did not write, unless `force`. Files of the folder that the
 * export does not write are left alone. Throws an EdgeplanError naming the files in the way.
 */
export async function writeExportInto(dir: string, shown: string, files: readonly ExportFile[], force: boolean): Promise<void> {
  const foreign = buildForeignFiles(files, await readExisting(dir, files));
  if (foreign.length > 0 && !force) {
    const list = foreign.map((f) => `${shown}/${f}`).join(", ");
    throw new EdgeplanError(
      `--out ${shown}: export would overwrite ${foreign.length === 1 ? "a file" : `${foreign.length} files`} it did not write: ${list}; nothing was written. ` +
        "Move them away, choose another --out, or pass --force to overwrite them",
    );
  }
  for (const file of files) {
    const target = path.join(dir, ...file.path.split("/"));
    await mkdir(path.dirname(target), { recursive: true });
    await writeFileAtomic(target, file.text);
  }
}

/**
 * Writes every file into a new temporary folder beside `dir`, then renames it to `dir`, so that the folder appears
 * complete or not at all. An empty `dir` is replaced; a non-empty one (made since the check) is refused.
 */
export async function writeExportAtomic(dir: string, shown: string, files: readonly ExportFile[]): Promise<void> {
  const parent = path.dirname(dir);
  await mkdir(parent, { recursive: true });
  const tmp = await mkdtemp(path.join(parent, `.${path.basename(dir)}.tmp-`));
  try {
    for (const file of files) {
      const target = path.join(tmp, ...file.path.split("/"));
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(target, file.text, { mode: 0o644 });
    }
    // mkdtemp makes the folder private (0700); the export is ordinary source.
    await chmod(tmp, 0o755);
    await checkOutDir(dir, shown);
    try {
      await rmdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    }
    try {
      await rename(tmp, dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOTEMPTY" || code === "EEXIST") {
        throw new EdgeplanError(`--out ${shown}: the folder exists and is not empty; choose another --out or remove it`);
      }
      throw err;
    }
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * The live routes to export: the named ones (each read, one edge read per edge), or every route of every edge.
 * Named routes that do not exist are refused together, each with where it was named (`flagged`: by --route).
 */
async function fetchExportRoutes(client: ApiClient, named: RouteRef[] | undefined, flagged: ReadonlySet<string>): Promise<ExportRouteInput[]> {
  if (named !== undefined) {
    const reads: RouteRead[] = named.map((r) => ({ edge: r.edge, route: r.route, modules: ["saml", "circuit_breaker"] }));
    try {
      return await readRoutes(client, reads);
    } catch (err) {
      if (!(err instanceof RouteNotFoundError)) throw err;
      const where = (m: { edge: string; route: string }): string => (flagged.has(`${m.edge}/${m.route}`) ? "given with --route" : "named in the manifests");
      const list = err.missing.map((m) => `${describeMissing(m)}, ${where(m)}`).join("; ");
      throw new EdgeplanError(`cannot export: ${list}; export reads existing routes only: check the ids (GET /edges/https lists them)`);
    }
  }
  const edges = await client.listEdges();
  return edges.flatMap((e) => e.routes.map((r) => ({ edge: e.id, route: r.id, saml: r.saml, circuit_breaker: r.circuit_breaker })));
}

/** The `ignore_changes` of the manifests read, for the export to write back. */
function ignoreChangesOf(desired: DesiredState): NonNullable<ExportInput["ignoreChanges"]> {
  const weightedBackends = new Map<string, string[]>();
  for (const wb of desired.weightedBackends) if (wb.ignoreChanges) weightedBackends.set(wb.name, wb.ignoreChanges);
  const routes = new Map<string, string[]>();
  for (const r of desired.edgeRoutes) if (r.ignoreChanges) routes.set(`${r.edge}/${r.route}`, r.ignoreChanges);
  return { weightedBackends, routes };
}

const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/** The summary line of stderr. */
function summaryLine(result: ExportResult, stack: string, shown: string): string {
  const count = (m: string): number => result.weightedBackends.filter((w) => w.match === m).length;
  const owned = count("owned");
  const pinned = result.weightedBackends.length - owned;
  const how: string[] = [];
  if (count("adopt") > 0) how.push(`adopts ${count("adopt")}`);
  if (count("takeover") > 0) how.push(`takes over ${count("takeover")}`);
  if (count("rename") > 0) how.push(`renames ${count("rename")}`);
  const wbs =
    `${plural(result.weightedBackends.length, "weighted backend")} (${owned} owned by stack "${stack}"` +
    (pinned > 0 ? `, ${pinned} pinned by id: the plan ${how.join(", ")})` : ")");
  const edges = new Set(result.routes.map((r) => r.edge)).size;
  const skipped = result.skipped.length > 0 ? `; skipped ${result.skipped.length} (see the notes above)` : "";
  return `exported ${wbs} and ${plural(result.routes.length, "route")} of ${plural(edges, "edge")} to ${shown}${skipped}\n`;
}

/**
 * The notes on what was skipped. Objects of other stacks are routine in a shared account (one line each was a wall
 * of text), so they are counted per stack in one line unless `--verbose`; every other skip keeps its own line.
 */
export function skipNotes(skipped: readonly ExportSkip[], verbose: boolean): string[] {
  const lines: string[] = [];
  const perStack = new Map<string, number>();
  for (const s of skipped) {
    if (s.stack !== undefined && !verbose) perStack.set(s.stack, (perStack.get(s.stack) ?? 0) + 1);
    else lines.push(`note: skipped ${s.what}: ${s.reason}\n`);
  }
  if (perStack.size === 0) return lines;
  const total = [...perStack.values()].reduce((a, b) => a + b, 0);
  const counts = [...perStack].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([stack, n]) => `stack "${stack}": ${n}`);
  const whose = perStack.size === 1 && total === 1 ? "of another stack" : "of other stacks";
  lines.unshift(
    `note: skipped ${plural(total, "object")} ${whose} (${counts.join(", ")}), as edgeplan never changes another stack's objects; ` +
      "--verbose lists them, --takeover exports them pinned by id\n",
  );
  return lines;
}

/**
 * Runs `export`. Refuses (EdgeplanError, exit 1) an out folder whose files export would overwrite without having
 * written them (unless `--force`), a malformed `--route`, and invalid manifests; API errors are thrown as they are.
 * Nothing is written when anything fails.
 */
export async function runExport(given: ExportCommandOptions, io: CommandIO): Promise<ExportCommandResult> {
  const options = await withProjectFile(given, io);
  const shown = options.out ?? DEFAULT_EXPORT_DIR;
  const outDir = path.resolve(io.cwd, shown);
  const flagged = (options.route ?? []).map(parseRouteFlag);
  const scope = scopeFrom(options);
  const found = await inspectOutDir(outDir, shown);

  const loaded = options.paths.length > 0 ? await loadManifests(options.paths, io, options.environment ?? null) : undefined;
  let named: RouteRef[] | undefined;
  if (flagged.length > 0 || loaded) {
    const byKey = new Map<string, RouteRef>();
    for (const r of [...flagged, ...(loaded?.desired.edgeRoutes ?? [])]) byKey.set(`${r.edge}/${r.route}`, { edge: r.edge, route: r.route });
    named = [...byKey.values()];
    if (named.length === 0) io.stderr("note: the manifests name no route and no --route is given, so no route is exported\n");
  }

  const session = await openSession(options, io, loaded?.desired);
  let result: ExportResult;
  try {
    const byFlag = new Set(flagged.map((r) => `${r.edge}/${r.route}`));
    const [weightedBackends, routes] = await Promise.all([
      scopeReachesKind(scope, "weighted_backend") ? session.client.listWeightedBackends() : [],
      scopeReachesKind(scope, "edge_route") ? fetchExportRoutes(session.client, named, byFlag) : [],
    ]);
    result = buildExport({
      stack: session.stack,
      takeover: options.takeover === true,
      weightedBackends,
      routes,
      inScope: (address) => inScope(scope, address),
      ...(loaded ? { ignoreChanges: ignoreChangesOf(loaded.desired) } : {}),
    });
    const lines: string[] = [];
    for (const r of routes) {
      if (named !== undefined && r.saml === null && r.circuit_breaker === null) {
        lines.push(`note: edge route ${r.edge}/${r.route} has no module set; there is nothing to export for it\n`);
      }
    }
    lines.push(...skipNotes(result.skipped, options.verbose === true));
    for (const n of result.notes) lines.push(`note: ${n}\n`);
    if (lines.length > 0) io.stderr(lines.join(""));
  } finally {
    await session.close();
  }

  if (result.files.length === 0) {
    io.stderr(`nothing to export: no weighted backend and no route module could be exported; ${shown} was not created\n`);
    return { exitCode: EXIT.ok, result };
  }
  if (found === "filled") await writeExportInto(outDir, shown, result.files, options.force === true);
  else await writeExportAtomic(outDir, shown, result.files);
  io.stdout(result.files.map((f) => `wrote ${path.relative(io.cwd, path.join(outDir, ...f.path.split("/"))) || f.path}\n`).join(""));
  io.stderr(summaryLine(result, session.stack, shown));
  const takeover = result.weightedBackends.some((w) => w.match === "takeover") ? ["--takeover"] : [];
  const stack = session.stack === "default" ? [] : ["--stack", session.stack];
  // The plan runs where the export ran: the same project file, environment and API (src/commands/hints.ts).
  io.stderr(`next: ${commandLine(["plan", ...stack, ...takeover, ...whereArgs(given, io.env), shown])}\n`);
  return { exitCode: EXIT.ok, result, outDir };
}
