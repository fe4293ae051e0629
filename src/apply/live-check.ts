/**
 * A saved plan checked against the live side as apply reads it again (src/apply/saved-plan.ts). A fingerprint is a
 * digest of public state, so anyone can write the right one beside another object's id: what a change shows as
 * `before` must be the object as it is live (normalised as a plan does), and the object must be one this change may
 * touch: an update, rollout step or delete one whose owner marker is this plan's stack and the change's name, a
 * rename one of this stack under its old name, an adoption one with no marker, a takeover another stack's (with the
 * plan's --takeover). A delete never removes an object whose live marker says `protect: true`, and no change touches
 * a lease object. The outputs of the SAML modules read again are what the server holds. Pure.
 */
import { isLeaseObject } from "../model/lease.js";
import { moduleSpec, normaliseModuleSettings } from "../kinds/module.js";
import { buildLiveValue, parseLiveMetadata } from "../kinds/weighted-backend.js";
import { jsonEqual } from "../model/json-equal.js";
import type { InventoryChange, ModuleChange, Plan, WeightedBackendChange } from "../model/plan.js";
import { parseInventory } from "../model/inventory.js";
import type { LiveRoute, LiveState, LiveWeightedBackend, OwnerMarker } from "../model/state.js";
import { quoteValue, type Disagreement } from "../core/plan-check.js";
import { buildOutput } from "../core/outputs.js";

/**
 * What disagrees between the plan's changes and the live side read again, in the plan's order. Objects the live
 * side lacks are left to the staleness check (`diffStale`), which runs first.
 */
export function checkPlanAgainstLive(plan: Pick<Plan, "changes" | "stack" | "options" | "outputs">, live: LiveState): Disagreement[] {
  const byId = new Map(live.weightedBackends.map((wb) => [wb.id, wb]));
  const routes = new Map(live.routes.map((r) => [`${r.edge}/${r.route}`, r]));
  const out: Disagreement[] = [];
  for (const change of plan.changes) {
    const say = (what: string): void => void out.push({ address: change.address, what });
    if (change.kind === "inventory") {
      const object = change.id === null ? undefined : byId.get(change.id);
      if (object !== undefined) checkInventoryObject(change, object, say);
      continue;
    }
    if (change.kind !== "weighted_backend") {
      const route = routes.get(`${change.edge}/${change.route}`);
      if (route) checkModuleBefore(change, route, say);
      continue;
    }
    const object = change.id === null ? undefined : byId.get(change.id);
    if (object !== undefined) checkWeightedBackend(change, object, plan, say);
  }
  // Only the modules a change touches are read again, so only their outputs can be compared.
  const samlRead = new Set(plan.changes.flatMap((c) => (c.kind === "saml" ? [`${c.edge}/${c.route}`] : [])));
  for (const o of plan.outputs) {
    const route = samlRead.has(`${o.edge}/${o.route}`) ? routes.get(`${o.edge}/${o.route}`) : undefined;
    if (route && !jsonEqual(o, buildOutput(o.edge, o.route, route))) out.push({ address: o.address, what: "the output is not what the server holds for this route" });
  }
  return out;
}

function checkWeightedBackend(change: WeightedBackendChange, object: LiveWeightedBackend, plan: Pick<Plan, "stack" | "options">, say: (what: string) => void): void {
  const id = object.id;
  if (isLeaseObject(object)) return say(`${id} is the lease of an apply, which no plan changes`);
  if (parseInventory(object) !== null) return say(`${id} is an inventory object, which only an inventory write changes`);
  const parsed = parseLiveMetadata(object.metadata);
  const now = buildLiveValue(object, parsed);
  for (const field of ["description", "metadata", "backends"] as const) {
    const shown = change.before?.[field];
    if (!jsonEqual(shown, now[field])) say(`before.${field} is ${quoteValue(shown)}, but ${id} holds ${quoteValue(now[field])}`);
  }
  const marker = parsed.marker;
  const problem = ownershipProblem(change, marker, plan);
  if (problem !== null) say(`${id} ${problem}`);
  else if (!sameOwner(change.previous_owner, marker)) say(`previous_owner is ${quoteValue(change.previous_owner)}, but ${id} carries ${quoteValue(marker)}`);
}

/** Why this change may not touch an object carrying `marker`, or null when it may. */
function ownershipProblem(change: WeightedBackendChange, marker: OwnerMarker | null, plan: Pick<Plan, "stack" | "options">): string | null {
  const owner = marker === null ? "carries no owner marker" : `belongs to stack "${marker.stack}" as "${marker.name}"`;
  const ours = marker?.stack === plan.stack;
  switch (change.action) {
    case "adopt":
      return marker === null ? null : `${owner}, so it is not adopted: only an object with no marker is`;
    case "takeover":
      if (marker === null || ours) return `${owner}, so it is not taken over: only another stack's object is`;
      return plan.options.takeover ? null : `${owner}, and the plan was made without --takeover`;
    case "rename":
      return ours && marker.name !== change.name ? null : `${owner}, so it is not renamed to "${change.name}" by stack "${plan.stack}"`;
    case "delete":
      if (!ours || marker.name !== change.name) return `${owner}, so stack "${plan.stack}" does not delete it as "${change.name}"`;
      return marker.protect === true ? `is protected (protect: true in its owner marker): edgeplan never deletes it` : null;
    default:
      return ours && marker.name === change.name ? null : `${owner}, so stack "${plan.stack}" does not change it as "${change.name}"`;
  }
}

/** Two owner markers of the same owner (stack, name, protect); a rollout state is the rollout's, not the owner's. */
function sameOwner(a: OwnerMarker | null, b: OwnerMarker | null): boolean {
  if (a === null || b === null) return a === b;
  return a.stack === b.stack && a.name === b.name && (a.protect === true) === (b.protect === true);
}

/** An inventory write touches an inventory object of its stack whose entries are what the change shows as before. */
function checkInventoryObject(change: InventoryChange, object: LiveWeightedBackend, say: (what: string) => void): void {
  const inventory = parseInventory(object);
  if (inventory === null || inventory.stack !== change.stack) return say(`${object.id} is not an inventory object of stack "${change.stack}"`);
  if (!jsonEqual(change.before, inventory.entries)) say(`before is ${quoteValue(change.before)}, but ${object.id} records ${quoteValue(inventory.entries)}`);
}

function checkModuleBefore(change: ModuleChange, route: LiveRoute, say: (what: string) => void): void {
  const module = route[change.kind];
  const now = module === null ? null : normaliseModuleSettings(moduleSpec(change.kind), module);
  if (!jsonEqual(change.before, now)) say(`before is ${quoteValue(change.before)}, but the route holds ${quoteValue(now)}`);
}
