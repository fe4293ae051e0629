/**
 * `edgeplan plan`: load the manifests, read the live side, build the plan, print it (text, JSON or Markdown) on
 * stdout, and save it with `--out`. Exit 0 when there is nothing to do, 2 with `--detailed-exitcode` when there are
 * changes, 1 on any error.
 */
import { resolve } from "node:path";
import { missingRouteDiagnostics, RouteNotFoundError, type MissingRoute } from "../api/errors.js";
import { edgePageSource, fetchChildBackends, fetchLive, readRoutes, startListing, startListings, type Listings } from "../api/fetch-live.js";
import { childIdsToRead, findChildIdProblems } from "../core/child-ids.js";
import { PlanProblems } from "../core/plan-index.js";
import type { CommonCliOptions } from "../api/options.js";
import { buildPlan, DEFAULT_MAX_SHIFT, planHasChanges, type PlanOptions } from "../core/plan.js";
import { EdgeplanError, EXIT, type Diagnostic } from "../model/errors.js";
import type { Plan, PlanEnvironment } from "../model/plan.js";
import type { ChosenEnvironment } from "../model/project-schema.js";
import { renderJson } from "../render/json.js";
import { renderHtml } from "../render/html.js";
import type { CommandIO } from "./io.js";
import { PLAN_FORMATS, renderPlan, useColor, writeFileAtomic, writeHtmlFile, type PlanFormat } from "./output.js";
import { withProjectFile } from "./project.js";
import { loadManifests, openSession, type Session } from "./session.js";
import { parseAddressPattern, SETTING_PARSERS } from "../model/syntax.js";
import type { ApiClient } from "../api/client.js";
import { planRoutes, type RoutePlan } from "../core/routes.js";
import { inScope, isUnmatchedTarget, scopeDesired, scopeReachesKind, type Scope } from "../core/scope.js";
import { declaredModules, recordedReads } from "../core/inventory.js";
import { isInventoryObject, parseInventory } from "../model/inventory.js";
import type { DesiredState, LiveState, LiveWeightedBackend } from "../model/state.js";
import type { LoadResult } from "../manifest/load.js";
import { deniedResults, type Policy } from "../core/policies.js";
import { buildPolicyDenial } from "../apply/approval.js";
import { describeStepDeadline, stepDeadlines } from "../apply/rollout.js";
import { commandLine, stackWhere, typedStack, whereArgs } from "./hints.js";

export interface PlanFlags {
  /** `--target` address patterns (repeatable). */
  target?: string[];
  /** `--exclude` address patterns (repeatable). */
  exclude?: string[];
  prune?: boolean;
  maxShift?: string | number;
  maxDeletes?: string | number;
  /** The project's policies (the project file fills them). */
  policies?: Policy[];
}

export interface PlanCommandOptions extends CommonCliOptions, PlanFlags {
  paths: string[];
  /**
   * Read the account's weighted backends and first page of edges while the manifests load (the command line does):
   * the plan then takes the longer of the two instead of their sum, and invalid manifests leave those reads as the
   * only requests sent. Without it, invalid manifests send nothing at all (the GitHub Action says so in its comment).
   */
  listWhileLoading?: boolean;
  format?: PlanFormat;
  out?: string;
  /** Also write the plan as an HTML page to this file, whatever `format` prints. */
  html?: string;
  detailedExitcode?: boolean;
  /** The plan's time in ms since the epoch (default: the clock); a rollout step is due when its time has come. */
  now?: number;
}

export interface PlanCommandResult {
  exitCode: number;
  diagnostics: Diagnostic[];
  plan?: Plan;
  hasChanges?: boolean;
}

/** Plan options from the flags; throws an EdgeplanError naming the flag for a bad value. */
export function planOptionsFrom(flags: PlanFlags & { takeover?: boolean; environment?: ChosenEnvironment | null }, stack: string): PlanOptions {
  const options: PlanOptions = {
    stack,
    prune: flags.prune === true,
    takeover: flags.takeover === true,
    maxShift: flags.maxShift === undefined ? DEFAULT_MAX_SHIFT : SETTING_PARSERS.maxShift(flags.maxShift),
  };
  if (flags.maxDeletes !== undefined) options.maxDeletes = SETTING_PARSERS.maxDeletes(flags.maxDeletes);
  if (flags.policies && flags.policies.length > 0) options.policies = flags.policies;
  if (flags.environment) options.env = flags.environment;
  const scope = scopeFrom(flags);
  if (scope.targets.length > 0) options.targets = [...scope.targets];
  if (scope.excludes.length > 0) options.excludes = [...scope.excludes];
  return options;
}

/** The scope of `--target` and `--exclude`; throws an EdgeplanError naming the flag for a pattern that is not one. */
export function scopeFrom(flags: Pick<PlanFlags, "target" | "exclude">): Scope {
  return {
    targets: (flags.target ?? []).map((t) => parseAddressPattern("--target", t)),
    excludes: (flags.exclude ?? []).map((e) => parseAddressPattern("--exclude", e)),
  };
}

/**
 * Reads the live side a plan with these options needs. A targeted plan reads only what its scope reaches: no edge
 * read for a route whose modules are all out of scope; when no weighted backend can be in scope, the listing is
 * still needed for the inventories (who owns which module) and only they are kept, and `known`, a listing made
 * moments ago for the same purpose (the lease's, which an apply holds), is used instead of a new one. The routes of
 * modules the stack recorded and no manifest declares are read after the listing, only when there are any. Returns
 * the desired state to plan with (scoped the same way), the live state, and the routes' part of the plan.
 * `listings`: the reads already under way (`startListings`), when the scope reaches weighted backends.
 * Then the child ids the manifests would write and the live side does not show yet are read, one GET each (none
 * when no manifest introduces one), and an id the account does not hold is a ManifestError at its line, before any
 * write. Routes or edges that do not exist, and those child ids, are thrown together as one ManifestError, each
 * at its line with the closest id when one is close.
 */
export async function fetchForPlan(
  client: ApiClient,
  desired: DesiredState,
  options: PlanOptions,
  listings?: Listings,
  known?: readonly LiveWeightedBackend[],
): Promise<{ desired: DesiredState; live: LiveState; routes: RoutePlan }> {
  const scope = { targets: options.targets ?? [], excludes: options.excludes ?? [] };
  const scoped = scopeDesired(desired, scope);
  const reachesWeightedBackends = scopeReachesKind(scope, "weighted_backend");
  const forInventory = !reachesWeightedBackends && scopeReachesKind(scope, "edge_route") ? (known ? Promise.resolve([...known]) : startListing(client)) : undefined;
  // One page of the edge list serves the routes of the manifests and those of recorded modules.
  const shared: Listings = listings ?? { edges: edgePageSource(client) };
  // Routes and edges that do not exist are reported with the child ids the account lacks: every problem in one run.
  const missing: MissingRoute[] = [];
  const live = await fetchLive(client, scoped, { weightedBackends: reachesWeightedBackends, listings: shared, missing });
  if (forInventory) live.weightedBackends = (await forInventory).filter(isInventoryObject);
  const inventories = live.weightedBackends.flatMap((wb) => parseInventory(wb) ?? []);
  const recorded = recordedReads(inventories, options.stack, declaredModules(scoped.edgeRoutes), (address) => inScope(scope, address));
  if (recorded.length > 0) live.recorded = await readRoutes(client, recorded, { missingOk: true, edges: shared.edges });
  const problems = new PlanProblems();
  const routeProblems = missingRouteDiagnostics(missing, scoped.edgeRoutes);
  if (routeProblems === null) throw new RouteNotFoundError("GET", "/edges/https", missing, undefined);
  for (const d of routeProblems) problems.error(d.pos, d.message);
  findChildIdProblems(scoped, live, await fetchChildBackends(client, childIdsToRead(scoped, live)), problems);
  problems.throwIfErrors();
  return { desired: scoped, live, routes: planRoutes(scoped.edgeRoutes, live.routes) };
}

/** The plan's `environment`: the one chosen (`options.environment`, with its vars for policies), and the API the session reads. */
export function planEnvironment(environment: ChosenEnvironment | null | undefined, session: Pick<Session, "api">): PlanEnvironment | null {
  return environment ? { name: environment.name, api_url: session.api.url } : null;
}

/** Runs `plan`. Manifest errors and API errors are thrown (the CLI prints them and exits 1). */
export async function runPlan(given: PlanCommandOptions, io: CommandIO): Promise<PlanCommandResult> {
  const options = await withProjectFile(given, io);
  const format = options.format ?? "text";
  if (!PLAN_FORMATS.includes(format)) throw new EdgeplanError(`--format: expected one of ${PLAN_FORMATS.join(", ")}, got "${format}"`);
  const { loaded, session, listings } = await loadWhileListing(options, io);
  try {
    const planOptions = { ...planOptionsFrom(options, session.stack), environment: planEnvironment(options.environment, session) };
    const { desired, live, routes } = await fetchForPlan(session.client, loaded.desired, planOptions, listings);
    // The time decides which rollout steps are due (the plan itself sends no check): the API's, as its answers to
    // the reads just made tell it, since the marker's step times are the API's too.
    const now = options.now ?? session.clock.now();
    const plan = buildPlan(desired, live, { ...planOptions, now, budget: session.budget }, routes);
    const place = { api_url: session.api.url, at: new Date(now).toISOString() };
    // The commands the notes name (`rollout promote NAME`, ...) reach this API and stack as printed; the plan does not say how.
    const where = stackWhere(given, options.environment?.name, io.env, typedStack(given, io.env));
    io.stdout(renderPlan(plan, format, useColor(options, io), where, place));
    const denied = deniedResults(plan);
    if (denied.length > 0) {
      // A denied plan is shown (with why) but never saved: nothing could apply it.
      io.stderr(`edgeplan: ${buildPolicyDenial(denied, "plan").message}\n`);
      if (options.html) await writeHtmlFile(io, options.html, renderHtml(plan, place, where), "plan");
      return { exitCode: EXIT.error, diagnostics: loaded.diagnostics, plan, hasChanges: planHasChanges(plan) };
    }
    const unmatched = plan.warnings.filter(isUnmatchedTarget).length;
    if (unmatched > 0 && options.detailedExitcode) {
      // A script reads exit 0 as "nothing to do": a mistyped target must not look like that, nor leave a plan to apply.
      const what = unmatched === 1 ? "a --target names" : `${unmatched} --target flags name`;
      io.stderr(`edgeplan: ${what} nothing (see the warning above); with --detailed-exitcode that is an error, and no plan was saved\n`);
      return { exitCode: EXIT.error, diagnostics: loaded.diagnostics, plan, hasChanges: planHasChanges(plan) };
    }
    if (options.out) {
      // Only the saved plan says where it was made: stdout's JSON stays the same bytes at any API.
      await writeFileAtomic(resolve(io.cwd, options.out), renderJson({ ...plan, api: session.api }, { keepSensitive: true }));
      io.stderr(savedLine(plan, given, options.out, now, io));
    }
    if (options.html) await writeHtmlFile(io, options.html, renderHtml(plan, place, where), "plan");
    const hasChanges = planHasChanges(plan);
    return {
      exitCode: hasChanges && options.detailedExitcode ? EXIT.changes : EXIT.ok,
      diagnostics: loaded.diagnostics,
      plan,
      hasChanges,
    };
  } finally {
    await session.close();
  }
}

/**
 * What `--out` says: where the plan is, until when each rollout step it writes may be applied (later, apply refuses
 * it as stale), and the command that applies it here. The environment is left out: the plan carries it.
 */
function savedLine(plan: Plan, given: PlanCommandOptions, out: string, now: number, io: CommandIO): string {
  const steps = stepDeadlines(plan.changes.filter((c) => c.kind === "weighted_backend" && c.rollout?.status === "due"));
  const holds = steps.length === 0 ? "" : `; it holds ${steps.map((d) => describeStepDeadline(d, now)).join(", and ")}`;
  return `plan saved to ${out}${holds}; apply it with: ${commandLine(["apply", "--plan", out, ...whereArgs({ ...given, env: undefined }, io.env)])}\n`;
}

/** Loads the manifests, then opens the session (the embedded server of `--local` is provisioned from them). */
async function loadThenOpen(options: PlanCommandOptions, io: CommandIO): Promise<{ loaded: LoadResult; session: Session }> {
  const loaded = await loadManifests(options.paths, io, options.environment ?? null);
  return { loaded, session: await openSession(options, io, loaded.desired) };
}

/** The plan's scope when it reaches weighted backends, else undefined (a bad `--target` is refused later, where it always was). */
function listingScope(options: PlanCommandOptions): Scope | undefined {
  try {
    const scope = scopeFrom(options);
    return scopeReachesKind(scope, "weighted_backend") ? scope : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Loads the manifests while the account's weighted backends and the first page of its edges are read (the edges when
 * the scope reaches routes): those reads do not depend on the manifests, and a plan's time is the longer of the two
 * instead of their sum. A flag or key problem of the client is raised after the manifests' own problems, as when
 * nothing overlapped. Only with `listWhileLoading`, and not with `--local`: the embedded server is provisioned from
 * the manifests, so it starts after them. On a manifest error the reads are dropped and the session closed: no
 * request made from the manifests, and no write, is ever sent.
 */
async function loadWhileListing(options: PlanCommandOptions, io: CommandIO): Promise<{ loaded: LoadResult; session: Session; listings?: Listings }> {
  const scope = listingScope(options);
  if (options.local || !options.listWhileLoading || !scope) return loadThenOpen(options, io);
  const edges = scopeReachesKind(scope, "edge_route");
  const opened = await openSession(options, io).then(
    (session) => ({ session, listings: startListings(session.client, { edges }) }),
    (err: unknown) => ({ err }),
  );
  const listed = edges ? "the listings of its weighted backends and edges" : "the listing of its weighted backends";
  try {
    const loaded = await loadManifests(options.paths, io, options.environment ?? null, "listings" in opened ? listed : undefined);
    if ("err" in opened) throw opened.err;
    return { loaded, ...opened };
  } catch (err) {
    if ("session" in opened) await opened.session.close();
    throw err;
  }
}
