/**
 * `buildPlan`: the pure function from (desired, live, options) to a Plan, in phases of their own files: match
 * manifests to live objects by `id:` or owner marker (`match.ts`), propose renames instead of delete + create
 * (`renames.ts`), resolve and check children (`children.ts`), pair routes (`routes.ts`), find orphans
 * (`orphans.ts`) and what changed outside edgeplan since the last apply (`drift.ts`), let each kind build its
 * changes (`kinds/`; a weighted backend's update becomes the step of a progressive rollout when its manifest asks for
 * one, `rollout.ts`), order them (`graph.ts`), and name the risks and outputs. Same input, same Plan.
 */
import { isLeaseObject } from "../model/lease.js";
import { isInventoryObject } from "../model/inventory.js";
import { compareText } from "../model/canonical.js";
import type { Change, Drift, Orphan, Plan, PlanEnvironment } from "../model/plan.js";
import { moduleAddress, PLAN_FORMAT_VERSION, weightedBackendAddress } from "../model/plan.js";
import type { DesiredState, LiveState } from "../model/state.js";
import { buildWeightedBackendChange, buildWeightedBackendDelete } from "../kinds/weighted-backend.js";
import { matchedIds, resolveAllChildren, type Resolved } from "./children.js";
import { buildDependencies, buildLiveParents } from "./graph.js";
import { checkNamesOfOtherStacks, matchWeightedBackends, type Match, type Matching } from "./match.js";
import { planOrphans, type Orphans } from "./orphans.js";
import { buildOutputs } from "./outputs.js";
import { indexPlanInput, markerOf, ownedByStack, PlanProblems, type PlanIndex } from "./plan-index.js";
import { findRenames } from "./renames.js";
import { buildEstimate, DEFAULT_BUDGET, type ApplyBudget } from "./estimate.js";
import { buildRisks, defaultMaxDeletes } from "./risks.js";
import { managedModuleCount, planRoutes, type RoutePair, type RoutePlan } from "./routes.js";
import { applyScope, inScope, isScoped, unmatchedTargets, type Scope } from "./scope.js";
import { IgnoredCollector, ignoreWeightedBackendFields, weightedBackendOrigin } from "./ignore.js";
import { buildRolloutChange } from "./rollout.js";
import { buildInventoryChanges, planModuleOwnership, readInventories, type Ownership } from "./inventory.js";
import { buildSummary } from "./summary.js";
import { findModuleDrift, findRolloutDrift, markDrift } from "./drift.js";
import { withPolicies, type Policy, type PolicyEnv } from "./policies.js";

export interface PlanOptions {
  /** The stack whose owner markers this plan manages. */
  stack: string;
  /** Delete orphans (owned objects no manifest names), except protected ones. */
  prune: boolean;
  /** Allow `id:` to adopt objects that carry another stack's marker. */
  takeover: boolean;
  /** `traffic-shift` threshold in percentage points (default 50). */
  maxShift: number;
  /** `mass-delete` threshold; default: max(10, 30 % of the stack's live objects). */
  maxDeletes?: number;
  /** `--target` address patterns: only their changes are planned (none: everything). */
  targets?: string[];
  /** `--exclude` address patterns: their changes are left out. */
  excludes?: string[];
  /** The client's rate limit and concurrency, which the estimate's time follows (default: DEFAULT_BUDGET). */
  budget?: ApplyBudget;
  /** The time the plan is made (ms since the epoch): when rollout steps are due. Default 0 (plans without a clock, in tests). */
  now?: number;
  /** Names of weighted backends whose halted rollout starts again (`apply --retry-rollout NAME`). */
  retryRollouts?: readonly string[];
  /** The environment the plan is made in, shown in its header (default: null, none). */
  environment?: PlanEnvironment | null;
  /** The project's policies, judged over the plan's changes (`withPolicies`). */
  policies?: readonly Policy[];
  /** The environment the plan is made for, as policies see it. Default null: none. */
  env?: PolicyEnv;
}

export const DEFAULT_MAX_SHIFT = 50;

/**
 * Builds the plan. Pure and deterministic: changes, orphans, risks and outputs are sorted, and every map is
 * built with sorted keys, so the same input renders to the same bytes.
 *
 * Throws ManifestError (every problem at once, each `file:line:col: message`) for inputs no plan can satisfy: an
 * `id:` that does not exist live, an `id:` owned by another stack without `takeover`, a new object whose name another
 * stack's object carries with `takeover` (only `id:` takes over), a route the live side lacks,
 * two children that name the same object, children that lead back to their parent through an id. Names, adopted ids
 * and routes are unique in `desired` (the loader's rules): a repeat throws InternalError.
 *
 * `routes`: the routes' part of this plan when it was built already (`planRoutes` of `desired.edgeRoutes` and
 * `live.routes`, as `fetchForPlan` returns it).
 */
export function buildPlan(desired: DesiredState, live: LiveState, options: PlanOptions, routes?: RoutePlan): Plan {
  // Lease objects (one per running apply of a stack) and inventory objects (the modules each stack owns) are
  // edgeplan's own bookkeeping: never orphans, never matched.
  const inventories = readInventories(live.weightedBackends);
  const own = live.weightedBackends.filter((l) => !isInventoryObject(l) && !isLeaseObject(l));
  const index = indexPlanInput(desired, { ...live, weightedBackends: own }, options.stack);
  const problems = new PlanProblems();
  const matching = matchWeightedBackends(index, options.takeover, problems);
  const nameToId = matchedIds(matching);
  findRenames(index, matching, nameToId);
  checkNamesOfOtherStacks(index, matching, options.takeover, problems);
  const resolvedByName = resolveAllChildren(index, matching, nameToId, problems);
  const routePlan = routes ?? planRoutes(desired.edgeRoutes, live.routes);
  const routePairs = routePlan.pairs;
  problems.absorb(routePlan.problems);
  const scope: Scope = { targets: options.targets ?? [], excludes: options.excludes ?? [] };
  const ownershipInput = { ...options, inventories, pairs: routePairs, recorded: live.recorded ?? [], inScope: (address: string) => inScope(scope, address) };
  const ownership = planModuleOwnership(ownershipInput, problems);
  const drift: Drift[] = findModuleDrift(ownershipInput);
  problems.throwIfErrors();

  const orphans = planOrphans(index, matching, resolvedByName, options.prune, problems);
  const ignored = new IgnoredCollector();
  ignored.absorb(routePlan.ignored);
  const all = [
    ...buildWeightedBackendChanges(index, matching, { resolvedByName, nameToId }, orphans, { ignored, drift }, options),
    ...markDrift(withOwnershipNotes(routePlan.changes, ownership), drift),
    ...ownership.deletes,
  ].sort((a, b) => compareText(a.address, b.address));
  const changeById = new Map<string, string>();
  for (const c of all) if (c.kind === "weighted_backend" && c.id !== null) changeById.set(c.id, c.address);
  buildDependencies(all, { changeById, liveParents: buildLiveParents(index.live) });
  const targeted = isScoped(scope);
  const allOrphans = [...orphans.list, ...ownership.orphans];
  const scoped = targeted ? applyScope(all, allOrphans, scope) : { changes: all, orphans: allOrphans, warnings: [] };
  const { orphans: orphanList, warnings } = scoped;
  const changes = [...scoped.changes, ...buildInventoryChanges(inventories, ownership.wanted, scoped.changes)].sort((a, b) => compareText(a.address, b.address));
  if (targeted) warnings.push(...unmatchedTargets(scope, knownAddresses(index, allOrphans, routePairs)));

  const stackObjects = index.live.filter((l) => ownedByStack(index, l.id)).length + managedModuleCount(routePairs);
  const maxDeletes = options.maxDeletes ?? defaultMaxDeletes(stackObjects);
  const outputs = buildOutputs(routePairs);
  const estimate = buildEstimate(
    { changes, outputs },
    { budget: options.budget ?? DEFAULT_BUDGET, accountWeightedBackends: live.weightedBackends.length, outputRoutes: false },
  );
  const plan: Plan = {
    format_version: PLAN_FORMAT_VERSION,
    stack: options.stack,
    environment: options.environment ?? null,
    targeted,
    ...driftOf(drift, scope),
    options: {
      prune: options.prune,
      takeover: options.takeover,
      max_shift: options.maxShift,
      max_deletes: maxDeletes,
      targets: [...scope.targets],
      excludes: [...scope.excludes],
    },
    summary: buildSummary(changes, orphanList),
    risks: buildRisks(changes, { maxShift: options.maxShift, maxDeletes }),
    changes,
    orphans: orphanList,
    outputs,
    warnings: [...problems.warnings, ...warnings],
    ignored: ignored.sorted((address) => inScope(scope, address)),
    estimate,
  };
  return options.policies ? withPolicies(plan, options.policies, options.env ?? null) : plan;
}

/**
 * The change of every manifest's object that differs, and the delete of every orphan the plan deletes; the fields
 * `ignore_changes` leaves alone go to `ignored`.
 */
function buildWeightedBackendChanges(
  index: PlanIndex,
  matching: Matching,
  children: { resolvedByName: ReadonlyMap<string, Resolved>; nameToId: ReadonlyMap<string, string> },
  orphans: Orphans,
  found: { ignored: IgnoredCollector; drift: Drift[] },
  options: Pick<PlanOptions, "now" | "retryRollouts">,
): Change[] {
  const { ignored } = found;
  // Names shown beside child ids: the manifest name, else the name in the child's marker of this stack. Looked up
  // for the children of changed objects only, so it is not built for every live object.
  const names = {
    get(id: string): string | undefined {
      const claimed = matching.claimedBy.get(id);
      if (claimed !== undefined) return claimed;
      const marker = markerOf(index, id);
      return marker?.stack === index.stack ? marker.name : undefined;
    },
  };
  const changes: Change[] = [];
  for (const d of index.desired) {
    const m = matching.matches.get(d.name) as Match;
    const parsedLive = m.live === null ? undefined : index.parsed.get(m.live.id);
    const kept = ignoreWeightedBackendFields(d, m.live, parsedLive, children.resolvedByName.get(d.name) as Resolved, children.nameToId);
    const { backends, pending } = kept.resolved;
    // Named one by one rather than spread from the match: this runs once per manifest, and a spread costs more.
    const { live, action, previous, notes } = m;
    const change = buildWeightedBackendChange({ desired: kept.desired, live, parsedLive, action, previous, notes, stack: index.stack, backends, pending, names });
    if (kept.ignored.length > 0) {
      ignored.add(...weightedBackendOrigin(d), kept.ignored);
      ignored.noteOn(change, kept.ignored);
    }
    if (!change) continue;
    const retry = options.retryRollouts?.includes(d.name) === true;
    const state = parsedLive?.marker?.rollout;
    const drifted = findRolloutDrift(change, kept.desired, state);
    if (drifted) found.drift.push(drifted);
    changes.push(buildRolloutChange(change, { desired: kept.desired, state, stack: index.stack, now: options.now ?? 0, retry }));
  }
  for (const o of orphans.entries) {
    if (orphans.deleting.has(o.live.id)) changes.push(buildWeightedBackendDelete(o.live, index.parsed.get(o.live.id), o.marker, o.address, names));
  }
  return changes;
}

/** The module changes, each with the note of a takeover when its module moves from another stack's inventory. */
function withOwnershipNotes(changes: readonly Change[], ownership: Ownership): Change[] {
  return changes.map((c) => {
    const note = ownership.notes.get(c.address);
    return note === undefined ? c : { ...c, notes: [...c.notes, note] };
  });
}

/** Every address the plan knows: the manifests' weighted backends, the orphans, the managed modules of the routes. */
function knownAddresses(index: PlanIndex, orphans: readonly Orphan[], pairs: readonly RoutePair[]): string[] {
  const addresses = [...index.desired.map((d) => weightedBackendAddress(d.name)), ...orphans.map((o) => o.address)];
  for (const { desired: r } of pairs) {
    for (const kind of ["saml", "circuit_breaker"] as const) if (r[kind].state !== "unmanaged") addresses.push(moduleAddress(r.edge, r.route, kind));
  }
  return addresses;
}

/** The plan's `drift` field: what changed outside edgeplan in the plan's scope, sorted; absent when there is none. */
function driftOf(drift: readonly Drift[], scope: Scope): Pick<Plan, "drift"> {
  const shown = drift.filter((d) => inScope(scope, d.address)).sort((a, b) => compareText(a.address, b.address));
  return shown.length > 0 ? { drift: shown } : {};
}

/** True when the plan has at least one change. */
export function planHasChanges(plan: Plan): boolean {
  return plan.changes.length > 0;
}
