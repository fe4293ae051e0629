/**
 * Staleness of a saved plan (`apply --plan FILE`): every change was planned against a fingerprint of the live
 * object it touches; when one of them changed since, applying the plan would overwrite what someone else did (or
 * act on an object that is gone), so apply refuses naming each object. A planned create is stale when an object
 * carrying its owner marker exists by now (another run created it); a rollout step is stale once its deadline has
 * passed (src/apply/rollout.ts, `stepDeadline`). Pure.
 */
import type { TouchedObjects } from "../api/fetch-live.js";
import { parseLiveMetadata } from "../kinds/weighted-backend.js";
import { StalePlanError } from "../model/errors.js";
import type { Plan } from "../model/plan.js";
import { moduleFingerprint, weightedBackendFingerprint, type LiveState } from "../model/state.js";
import { spanText, stepDeadlines, utcTimeText } from "./rollout.js";

/** One object of a saved plan that no longer is what the plan was made against. */
export interface StaleObject {
  address: string;
  /** The live id, when the object has one. */
  id: string | null;
  /** What changed, as words that follow the address. */
  reason: string;
}

/** The objects a plan's changes touch (weighted backends by id, modules by route): what a staleness check reads. */
export function buildTouchedByPlan(plan: Pick<Plan, "changes">): TouchedObjects {
  const touched: TouchedObjects = { weightedBackendIds: [], modules: [] };
  for (const change of plan.changes) {
    if (change.kind === "weighted_backend" || change.kind === "inventory") {
      if (change.id !== null) touched.weightedBackendIds.push(change.id);
    } else {
      touched.modules.push({ edge: change.edge, route: change.route, module: change.kind });
    }
  }
  return touched;
}

/** True when the plan creates objects, so that the staleness check must list the weighted backends for markers. */
export function planCreates(plan: Pick<Plan, "changes">): boolean {
  return plan.changes.some((c) => c.kind === "weighted_backend" && c.action === "create");
}

/**
 * The stale objects of a plan, in the plan's order, given the live side as read now: the touched weighted
 * backends (all of them when the plan creates objects) and the touched modules.
 */
export function diffStale(plan: Pick<Plan, "changes" | "stack">, live: LiveState): StaleObject[] {
  const byId = new Map(live.weightedBackends.map((wb) => [wb.id, wb]));
  const routes = new Map(live.routes.map((r) => [`${r.edge}/${r.route}`, r]));
  const stale: StaleObject[] = [];
  for (const change of plan.changes) {
    if (change.kind === "weighted_backend") {
      if (change.id === null) {
        const holder = live.weightedBackends.find((wb) => {
          const marker = parseLiveMetadata(wb.metadata).marker;
          return marker?.stack === plan.stack && marker.name === change.name;
        });
        if (holder) {
          stale.push({ address: change.address, id: holder.id, reason: `is planned as a create, but ${holder.id} carries its owner marker by now` });
        }
        continue;
      }
      const now = byId.get(change.id);
      if (!now) stale.push({ address: change.address, id: change.id, reason: "no longer exists" });
      else if (weightedBackendFingerprint(now) !== change.fingerprint) stale.push({ address: change.address, id: change.id, reason: "changed since the plan was made" });
      continue;
    }
    if (change.kind === "inventory") {
      const now = change.id === null ? null : byId.get(change.id);
      if (now === undefined) stale.push({ address: change.address, id: change.id, reason: "no longer exists" });
      else if (now !== null && weightedBackendFingerprint(now) !== change.fingerprint)
        stale.push({ address: change.address, id: change.id, reason: "changed since the plan was made" });
      continue;
    }
    const route = routes.get(`${change.edge}/${change.route}`);
    if (!route) {
      stale.push({ address: change.address, id: null, reason: "could not be read again" });
      continue;
    }
    if (moduleFingerprint(route, change.kind) === change.fingerprint) continue;
    const module = route[change.kind];
    const reason = module === null ? "was deleted since the plan was made" : change.before === null ? "was set since the plan was made" : "changed since the plan was made";
    stale.push({ address: change.address, id: null, reason });
  }
  return stale;
}

/**
 * The rollout steps of a saved plan that are past their deadline at `now` (the API's time): written now, the step
 * would record the plan's time and the next one would come early, so the plan is stale as a whole.
 */
export function expiredSteps(plan: Pick<Plan, "changes">, now: number): StaleObject[] {
  return stepDeadlines(plan.changes)
    .filter((d) => now > d.until)
    .map((d) => ({
      address: d.address,
      id: null,
      reason:
        `rollout step ${d.step} of ${d.steps} was to be applied before ${utcTimeText(d.until, now)}, ${spanText(d.until - d.recorded)} after the plan was made ` +
        `(it is ${utcTimeText(now, now)}): written now, the next step would come early`,
    }));
}

/**
 * The refusal of a stale plan, naming each object and what to do: `again`, the command that plans again (with the
 * flags that say where, and `--out` the same file: a stale plan is not worth keeping).
 */
export function buildStalePlanError(file: string, stale: readonly StaleObject[], again: string): StalePlanError {
  const n = stale.length;
  const lines = stale.map((s) => `  ${s.address}${s.id !== null && !s.reason.includes(s.id) ? ` (${s.id})` : ""}: ${s.reason}`);
  const changed = stale.every((s) => !s.reason.startsWith("rollout step"));
  const head = changed ? `${n} ${n === 1 ? "object it touches has" : "objects it touches have"} changed since it was made:` : "it can no longer be applied as it was made:";
  return new StalePlanError(
    stale.map((s) => s.address),
    [
      `the saved plan ${file} is stale: ${head}`,
      ...lines,
      `No change was sent. Plan again with: ${again}; or pass --refresh to plan again from the manifests and apply that.`,
    ].join("\n"),
  );
}
