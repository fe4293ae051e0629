/**
 * Drift: changes made outside edgeplan, since the last apply, to the objects a stack manages, shown apart from the
 * plan. Only what edgeplan's own records prove is claimed. The stack's inventory records each route module the last
 * apply left set (an entry is written once its module is set, and forgotten once it is deleted), so a recorded module
 * that is unset on a route read now was deleted outside edgeplan. A weighted backend whose owner marker records a
 * rollout toward the manifest's weights (the same target digest) was last written by edgeplan with weights on the way
 * from those the rollout started from to the manifest's (every step, and the halt's write back, is such a point,
 * whatever the pace); live weights off that way were changed outside edgeplan. Nothing else is recorded: the
 * inventory keeps no values, and a weighted backend outside a rollout keeps no record of what was last written to
 * it, so a value changed by hand there is not told apart from a manifest changed since: it shows as the plan's
 * change, never as drift. Pure.
 */
import { compareText } from "../model/canonical.js";
import type { Inventory } from "../model/inventory.js";
import type { Change, Drift, ModuleKind, WeightedBackendChange } from "../model/plan.js";
import type { DesiredWeightedBackend, LiveRoute, RolloutState } from "../model/state.js";
import { moduleSpec } from "../kinds/module.js";
import { diffRecords } from "../kinds/diff.js";
import { exactShareOf, hasTraffic } from "../kinds/weighted-backend.js";
import { rolloutTargetDigest } from "../kinds/weighted-backend-rollout.js";
import { rolloutSteps } from "./rollout.js";
import { entriesOf, parseModuleAddress } from "./inventory.js";
import type { RoutePair } from "./routes.js";

/** What `findModuleDrift` reads: the inventories, the stack, the routes as read, and the plan's scope. */
export interface ModuleDriftInput {
  stack: string;
  inventories: readonly Inventory[];
  pairs: readonly RoutePair[];
  /** The routes of the recorded modules no manifest declares, as read (a route not read is not judged). */
  recorded: readonly LiveRoute[];
  inScope: (address: string) => boolean;
}

/** The modules the stack's inventory records that are unset on their route as read now, sorted by address. */
export function findModuleDrift(input: ModuleDriftInput): Drift[] {
  const declared = new Map(input.pairs.map((p) => [`${p.live.edge}/${p.live.route}`, p]));
  const others = new Map(input.recorded.map((r) => [`${r.edge}/${r.route}`, r]));
  const out: Drift[] = [];
  for (const address of Object.keys(entriesOf(input.inventories, input.stack)).sort(compareText)) {
    const at = parseModuleAddress(address);
    if (!at || !input.inScope(address)) continue;
    const pair = declared.get(`${at.edge}/${at.route}`);
    const live = pair?.live ?? others.get(`${at.edge}/${at.route}`);
    if (!live || live[at.kind] !== null) continue;
    const intent = pair?.desired[at.kind].state ?? "unmanaged";
    out.push({ address, what: "deleted", reason: deletedReason(input.stack, at.kind, intent), diffs: [] });
  }
  return out;
}

function deletedReason(stack: string, kind: ModuleKind, intent: string): string {
  const known = `the inventory of stack "${stack}" records it, and the route has no ${moduleSpec(kind).label} module now`;
  if (intent === "present") return `${known}; the plan sets it again`;
  if (intent === "absent") return `${known}; the manifest says ${kind}: absent, so the plan only forgets it`;
  return `${known}; no manifest declares it, so the plan only forgets it`;
}

/**
 * What a re-created SAML module means for the IdP: the server makes a SAML module's SP request-signing certificate
 * when the module is first set and keeps it across PUTs, so only a module set anew gets another one.
 */
export const SAML_RECREATE_WARNING =
  "the SAML module is set anew, so the server gives it a new SP request-signing certificate: its SP values change " +
  "(the certificate, and the SP metadata at its metadata URL); once applied, give the IdP the new ones (the " +
  "apply's report lists them), or logins through it fail";

/**
 * The changes with the drift marked on them: the PUT of a module deleted outside edgeplan `recreates` it, and a SAML
 * one carries the warning that the IdP needs its new values.
 */
export function markDrift(changes: readonly Change[], drift: readonly Drift[]): Change[] {
  const deleted = new Set(drift.filter((d) => d.what === "deleted").map((d) => d.address));
  return changes.map((c) => {
    if ((c.kind !== "saml" && c.kind !== "circuit_breaker") || c.action !== "replace" || c.before !== null || !deleted.has(c.address)) return c;
    const warnings = c.kind === "saml" ? [...(c.warnings ?? []), SAML_RECREATE_WARNING] : c.warnings;
    return { ...c, recreates: true, ...(warnings ? { warnings } : {}) };
  });
}

type Weights = Readonly<Record<string, number>>;

/** How far (percentage points) a written step's share may sit off the way: steps are rounded to 0.01 point. */
const ON_THE_WAY_POINTS = 0.05;

/**
 * The drift of a weighted backend under a rollout, from `change` (its update before it becomes a rollout step): its
 * live weights off the way from the weights the rollout started from to the manifest's, while the owner marker's
 * rollout moves toward the manifest's weights. The diffs show the step the marker records as the manifest paces it
 * now. Null when there is no such rollout or the weights are on the way.
 */
export function findRolloutDrift(change: WeightedBackendChange, desired: DesiredWeightedBackend, state: RolloutState | undefined): Drift | null {
  const spec = desired.rollout;
  if (!spec || !state || change.action !== "update" || !change.before || !change.after) return null;
  if (state.target !== rolloutTargetDigest(desired.backends)) return null;
  const from = state.from;
  const target = change.after.backends;
  const live = change.before.backends;
  if (!hasTraffic(from) || !hasTraffic(target) || onTheWay(live, from, target)) return null;
  const written = rolloutSteps(from, target, spec)[state.step - 1];
  return {
    address: change.address,
    what: "changed",
    reason:
      `rollout step ${state.step} (its owner marker records it) wrote weights on the way to the manifest's; the live weights are off that way, ` +
      "so the plan starts the rollout again from them",
    diffs: written ? diffRecords(written, live, "backends.") : [],
  };
}

/** Whether every child's share of `live` sits at one same fraction of the way from its share of `from` to that of `target`. */
function onTheWay(live: Weights, from: Weights, target: Weights): boolean {
  const keys = [...new Set([...Object.keys(from), ...Object.keys(target), ...Object.keys(live)])];
  const share = (w: Weights, k: string) =>
    exactShareOf(
      w[k] ?? 0,
      Object.values(w).reduce((a, b) => a + b, 0),
    );
  const moves = keys.map((k) => ({ s: share(from, k), t: share(target, k), l: share(live, k) }));
  const widest = moves.reduce((a, b) => (Math.abs(b.t - b.s) > Math.abs(a.t - a.s) ? b : a));
  if (Math.abs(widest.t - widest.s) <= ON_THE_WAY_POINTS) return moves.every((m) => Math.abs(m.l - m.s) <= ON_THE_WAY_POINTS);
  const p = Math.min(1, Math.max(0, (widest.l - widest.s) / (widest.t - widest.s)));
  return moves.every((m) => Math.abs(m.s + p * (m.t - m.s) - m.l) <= ON_THE_WAY_POINTS);
}
