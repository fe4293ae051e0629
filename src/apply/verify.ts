/**
 * After the run: what to read again, how the re-read objects join the live state read before the run, whether the
 * result converged, and the outputs (the SAML values for the IdP) from the modules as they are now. Pure: the reads
 * themselves are the command's (src/commands/apply.ts).
 *
 * Two ways to tell convergence:
 * - a plan made from the manifests is checked by planning again (`buildPlan`) against the merged live state: the
 *   result is converged when that plan has no change;
 * - a saved plan is checked against its own `after` values, because the manifests may have moved on since it was
 *   made (and the live state it was made against was not read in full by this run).
 */
import { jsonEqual as equal } from "../model/json-equal.js";
import type { TouchedObjects } from "../api/fetch-live.js";
import { moduleSpec, normaliseModuleSettings } from "../kinds/module.js";
import { buildLiveValue, sortedBackends } from "../kinds/weighted-backend.js";
import type { Change, InventoryChange, ModuleChange, Plan, SamlOutput, WeightedBackendChange } from "../model/plan.js";
import { parseInventory } from "../model/inventory.js";
import type { LiveRoute, LiveState, LiveWeightedBackend } from "../model/state.js";
import { phraseOf } from "../render/common.js";
import { promoteCommand } from "../core/rollout.js";
import type { ApplyOutcome, Convergence, Remaining } from "../model/apply-report.js";
import { compareText } from "../model/canonical.js";

/**
 * What to read again after the run: the weighted backends the run touched (the planned ids, and the ids the creates
 * answered) and the modules it touched, for every change that ran (done or failed: a failed write may still have
 * happened when its answer was lost). `extraSamlRoutes` adds the SAML modules whose outputs are shown.
 */
export function buildTouchedAfterRun(
  plan: Pick<Plan, "changes">,
  outcome: Pick<ApplyOutcome, "results" | "createdIds">,
  extraSamlRoutes: ReadonlyArray<{ edge: string; route: string }> = [],
): TouchedObjects {
  const ran = new Set(outcome.results.filter((r) => r.status === "done" || r.status === "failed").map((r) => r.address));
  const ids = new Set<string>();
  const modules = new Map<string, TouchedObjects["modules"][number]>();
  for (const change of plan.changes) {
    if (!ran.has(change.address)) continue;
    if (change.kind === "weighted_backend" || change.kind === "inventory") {
      const id = change.id ?? outcome.createdIds[change.address];
      if (id !== undefined) ids.add(id);
    } else {
      modules.set(`${change.edge}/${change.route}/${change.kind}`, { edge: change.edge, route: change.route, module: change.kind });
    }
  }
  for (const r of extraSamlRoutes) modules.set(`${r.edge}/${r.route}/saml`, { edge: r.edge, route: r.route, module: "saml" });
  return { weightedBackendIds: [...ids].sort(), modules: [...modules.values()] };
}

const byId = (a: { id: string }, b: { id: string }): number => compareText(a.id, b.id);
const routeKey = (r: { edge: string; route: string }): string => `${r.edge}/${r.route}`;

/**
 * The live state read before the run with the re-read objects in place: each touched weighted backend replaced by
 * its re-read version (or removed when it no longer exists, or added when the run created it), each touched module
 * replaced by its re-read value. Untouched objects keep what was read before.
 */
export function mergeLive(before: LiveState, touched: TouchedObjects, reread: LiveState): LiveState {
  const touchedIds = new Set(touched.weightedBackendIds);
  const rereadById = new Map(reread.weightedBackends.map((wb) => [wb.id, wb]));
  const weightedBackends: LiveWeightedBackend[] = before.weightedBackends.filter((wb) => !touchedIds.has(wb.id));
  for (const id of touchedIds) {
    const wb = rereadById.get(id);
    if (wb) weightedBackends.push(wb);
  }
  const merged: LiveState = { weightedBackends: weightedBackends.sort(byId), routes: mergeRoutes(before.routes, touched, reread, true) };
  // The routes of recorded modules no manifest declares: a delete of one (an orphan pruned) is read again too.
  if (before.recorded !== undefined) merged.recorded = mergeRoutes(before.recorded, touched, reread, false);
  return merged;
}

/** Routes as read before with the touched modules as read again; `add`: a touched route not read before is added. */
function mergeRoutes(before: readonly LiveRoute[], touched: TouchedObjects, reread: LiveState, add: boolean): LiveRoute[] {
  const rereadRoutes = new Map(reread.routes.map((r) => [routeKey(r), r]));
  const routes = new Map(before.map((r) => [routeKey(r), { ...r }]));
  for (const m of touched.modules) {
    if (!add && !routes.has(routeKey(m))) continue;
    const now = rereadRoutes.get(routeKey(m));
    if (!now) continue;
    const route: LiveRoute = routes.get(routeKey(m)) ?? { edge: m.edge, route: m.route, saml: null, circuit_breaker: null };
    if (m.module === "saml") {
      route.saml = now.saml;
      if (now.samlCertificateSha256 !== undefined) route.samlCertificateSha256 = now.samlCertificateSha256;
      else delete route.samlCertificateSha256;
    } else {
      route.circuit_breaker = now.circuit_breaker;
    }
    routes.set(routeKey(m), route);
  }
  return [...routes.values()].sort((a, b) => compareText(routeKey(a), routeKey(b)));
}

/**
 * The verdict of a plan made against the merged live state: converged when it has no change but rollout steps
 * that are not due yet (listed as in progress) or rollouts that wait for a person (listed as paused). A halted
 * rollout is a difference that remains.
 */
export function buildConvergenceFromReplan(replan: Pick<Plan, "changes">): Convergence {
  const statusOf = (c: Change): string | undefined => (c.kind === "weighted_backend" ? c.rollout?.status : undefined);
  const waiting = (c: Change): boolean => statusOf(c) === "due" || statusOf(c) === "waiting";
  const remaining = replan.changes.filter((c) => !waiting(c) && statusOf(c) !== "paused").map((c) => ({ address: c.address, reason: phraseOf(c) }));
  const inProgress = replan.changes.filter(waiting).map((c) => ({ address: c.address, reason: phraseOf(c) }));
  const paused = replan.changes.filter((c) => statusOf(c) === "paused").map((c) => ({ address: c.address, reason: pausedPhrase(c) }));
  return {
    checked: true,
    converged: remaining.length === 0,
    remaining,
    ...(inProgress.length > 0 ? { inProgress } : {}),
    ...(paused.length > 0 ? { paused } : {}),
  };
}

/**
 * The verdict once the run halted rollouts: a halted object is never a step still to come (a re-read that raced the
 * halt's write, or a saved plan's step, could list it so); it remains, with the check's reason.
 */
export function settleHalted(c: Convergence, halted: ReadonlyArray<{ address: string; reason: string }>): Convergence {
  if (!c.checked || halted.length === 0) return c;
  const reasons = new Map(halted.map((h) => [h.address, h.reason]));
  const inProgress = (c.inProgress ?? []).filter((r) => !reasons.has(r.address));
  const named = new Set(c.remaining.map((r) => r.address));
  const added = [...reasons].filter(([address]) => !named.has(address)).map(([address, reason]) => ({ address, reason: `rollout halted: ${reason}` }));
  const remaining = [...c.remaining, ...added];
  const { inProgress: _inProgress, ...rest } = c;
  return { ...rest, converged: remaining.length === 0, remaining, ...(inProgress.length > 0 ? { inProgress } : {}) };
}

/** `rollout paused before step 2 of 4 (pause step 2 of 4); run "edgeplan rollout promote web" to go on` */
function pausedPhrase(c: Change): string {
  const r = c.kind === "weighted_backend" ? c.rollout : undefined;
  return `${phraseOf(c)} (${r?.paused_reason ?? ""}); run "${promoteCommand(c.kind === "weighted_backend" ? c.name : c.address)}" to go on`;
}

/**
 * The verdict for a saved plan: every change must have run and the re-read object must hold the plan's `after`
 * (weighted backends with their references resolved to the ids the creates answered; modules field by field; a
 * delete must have removed the object).
 */
export function buildConvergenceFromPlan(plan: Pick<Plan, "changes">, outcome: Pick<ApplyOutcome, "results" | "createdIds">, reread: LiveState): Convergence {
  const status = new Map(outcome.results.map((r) => [r.address, r.status]));
  const wbs = new Map(reread.weightedBackends.map((wb) => [wb.id, wb]));
  const routes = new Map(reread.routes.map((r) => [routeKey(r), r]));
  const remaining: Remaining[] = [];
  const inProgress: Remaining[] = [];
  const paused: Remaining[] = [];
  for (const change of plan.changes) {
    const s = status.get(change.address);
    if (s === undefined && change.kind === "weighted_backend" && change.rollout?.status === "paused") {
      paused.push({ address: change.address, reason: pausedPhrase(change) });
      continue;
    }
    if (s === undefined && change.kind === "weighted_backend" && change.rollout && change.rollout.status !== "halted" && change.rollout.status !== "paused") {
      inProgress.push({ address: change.address, reason: phraseOf(change) });
      continue;
    }
    if (s !== "done" && s !== "failed") {
      remaining.push({ address: change.address, reason: `${phraseOf(change)} (${s === "skipped" ? "skipped" : "not started"})` });
      continue;
    }
    const reason =
      change.kind === "weighted_backend"
        ? weightedBackendGap(change, outcome.createdIds, wbs)
        : change.kind === "inventory"
          ? inventoryGap(change, outcome.createdIds, wbs)
          : moduleGap(change, routes);
    if (reason !== null) remaining.push({ address: change.address, reason });
  }
  const also = { ...(inProgress.length > 0 ? { inProgress } : {}), ...(paused.length > 0 ? { paused } : {}) };
  return { checked: true, converged: remaining.length === 0, remaining, ...also };
}

function weightedBackendGap(change: WeightedBackendChange, createdIds: Readonly<Record<string, string>>, wbs: ReadonlyMap<string, LiveWeightedBackend>): string | null {
  const id = change.id ?? createdIds[change.address];
  const live = id === undefined ? undefined : wbs.get(id);
  if (change.action === "delete") return live ? "still exists" : null;
  if (!live || !change.after) return change.action === "create" ? phraseOf(change) : "no longer exists";
  const backends: Record<string, number> = {};
  for (const [key, weight] of Object.entries(change.after.backends)) {
    const ref = change.refs[key];
    backends[ref === undefined ? key : (createdIds[ref] ?? key)] = weight;
  }
  const expected = { ...change.after, backends: sortedBackends(backends) };
  const actual = buildLiveValue(live);
  // A rollout step's marker holds the time of its write, which the plan could not know.
  if (change.rollout) return equal(actual.backends, expected.backends) ? null : "still differs from the plan";
  return equal(actual, expected) ? null : "still differs from the plan";
}

function inventoryGap(change: InventoryChange, createdIds: Readonly<Record<string, string>>, wbs: ReadonlyMap<string, LiveWeightedBackend>): string | null {
  const id = change.id ?? createdIds[change.address];
  const live = id === undefined ? undefined : wbs.get(id);
  if (change.action === "delete") return live ? "still exists" : null;
  if (!live) return change.action === "create" ? phraseOf(change) : "no longer exists";
  return equal(parseInventory(live)?.entries ?? null, change.after) ? null : "still differs from the plan";
}

function moduleGap(change: ModuleChange, routes: ReadonlyMap<string, LiveRoute>): string | null {
  const route = routes.get(routeKey(change));
  const live = route ? route[change.kind] : null;
  if (change.action === "delete") return live === null ? null : "still exists";
  if (live === null) return "is still unset";
  return equal(normaliseModuleSettings(moduleSpec(change.kind), live), change.after) ? null : "still differs from the plan";
}

/**
 * The outputs of a plan with their values taken from the routes as read now (the SAML module's generated fields
 * and its certificate's fingerprint). An output whose route was not read keeps the plan's values.
 */
export function buildOutputsFromLive(outputs: readonly SamlOutput[], routes: readonly LiveRoute[]): SamlOutput[] {
  const byKey = new Map(routes.map((r) => [routeKey(r), r]));
  return outputs.map((o) => {
    const route = byKey.get(routeKey(o));
    if (!route) return { ...o };
    const saml = route.saml;
    return {
      ...o,
      known_after_apply: false,
      entity_id: saml?.entity_id ?? null,
      assertion_consumer_service_url: saml?.assertion_consumer_service_url ?? null,
      single_logout_url: saml?.single_logout_url ?? null,
      metadata_url: saml?.metadata_url ?? null,
      certificate_sha256: saml ? (route.samlCertificateSha256 ?? null) : null,
    };
  });
}
