/**
 * The risks of a plan: changes that may cut off logins or traffic, or delete much at once. Each one must be
 * acknowledged on apply (`--ack <rule>`, or `--force`). Rules:
 * - `auth-removal`: a SAML module deleted, or changed from enabled to disabled.
 * - `traffic-shift`: a child's share of a weighted backend's traffic moves by more than `maxShift` percentage
 *   points (shares from the live weights and those the change commits to: a rollout's final ones), unless the change
 *   is a rollout whose every write still to come moves no share more than `maxShift`. Only between two sides that
 *   both send traffic: stopping all traffic is `no-traffic`, and starting it from nothing moves no traffic away.
 * - `no-traffic`: a write that leaves every weight 0 (or no children), unless the object already had no traffic
 *   and its children do not change (then the write does not change where traffic goes).
 * - `mass-delete`: more deletes (weighted backends and modules) than `maxDeletes`.
 * Pure.
 */
import type { Change, ModuleChange, Risk, RiskRule, WeightChange, WeightedBackendChange, WeightedBackendValue } from "../model/plan.js";
import { RISK_RULES } from "../model/plan.js";
import { exactShareOf, hasTraffic, shareOf } from "../kinds/weighted-backend.js";
import { changeWriteOf } from "./change-write.js";
import { everyMoveWithin } from "./rollout.js";
import { samlEnforced } from "../kinds/saml.js";
import { compareText } from "../model/canonical.js";

type Weights = Readonly<Record<string, number>>;

/** Default `--max-deletes`: 10, or 30 % of the stack's live objects (rounded down), whichever is larger. */
export function defaultMaxDeletes(stackObjects: number): number {
  return Math.max(10, Math.floor(stackObjects * 0.3));
}

/** Formats a share for a sentence: `90%`, `33.3%`. */
export function formatShare(share: number): string {
  return `${share}%`;
}

function childLabel(w: { child: string; name: string | null; known_after_apply: boolean }): string {
  if (w.known_after_apply) return `${w.child} (known after apply)`;
  return w.name ? `${w.child} (${w.name})` : w.child;
}

function trafficShift(change: WeightedBackendChange, maxShift: number): Risk | null {
  if (!change.before || !change.after) return null;
  const write = changeWriteOf(change);
  const live = change.before.backends;
  // A rollout whose every write still to come stays within --max-shift is its own safety; otherwise the move it
  // commits to, from the live weights to its final ones, is judged as one plain change would be.
  if (write.rollout && (write.rollout.steps.length === 0 || everyMoveWithin([live, ...write.rollout.steps], maxShift))) return null;
  const end = (write.end as WeightedBackendValue).backends;
  const moved = movedChildren(live, end, change.weights, maxShift);
  if (moved.length === 0) return null;
  const fix = write.rollout
    ? `Lower the rollout's max_step (or the gaps of its steps:) to ${maxShift} points or less, or check the weights and apply with --ack traffic-shift.`
    : "Check the weights (a gradual rollout moves traffic in smaller steps), then apply with --ack traffic-shift.";
  const what = write.rollout
    ? `the rollout moves traffic by more than ${maxShift} percentage points to its final weights, in a step of more than ${maxShift}`
    : `traffic moves by more than ${maxShift} percentage points`;
  return { rule: "traffic-shift", addresses: [change.address], message: `${change.address}: ${what}: ${moved.join("; ")}. ${fix}` };
}

/** `child from 90% to 0%` for each child whose share moves more than `maxShift` points; none when either side sends no traffic. */
function movedChildren(before: Weights, after: Weights, weights: readonly WeightChange[], maxShift: number): string[] {
  const total = (w: Weights): number => Object.values(w).reduce((s, x) => s + x, 0);
  const [tb, ta] = [total(before), total(after)];
  if (tb === 0 || ta === 0) return [];
  const labels = new Map(weights.map((w) => [w.child, childLabel(w)] as const));
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort(compareText);
  return keys
    .filter((k) => Math.abs(exactShareOf(after[k] ?? 0, ta) - exactShareOf(before[k] ?? 0, tb)) > maxShift)
    .map((k) => `${labels.get(k) ?? k} from ${formatShare(shareOf(before[k] ?? 0, tb))} to ${formatShare(shareOf(after[k] ?? 0, ta))}`);
}

function noTraffic(change: WeightedBackendChange): Risk | null {
  if (!change.after || hasTraffic(change.after.backends)) return null;
  const childrenUnchanged = change.weights.every((w) => !w.changed);
  if (change.before && !hasTraffic(change.before.backends) && childrenUnchanged) return null;
  const why = Object.keys(change.after.backends).length === 0 ? "has no children" : "has every weight at 0";
  return {
    rule: "no-traffic",
    addresses: [change.address],
    message:
      `${change.address}: after this ${change.action} the weighted backend ${why}, so it sends no traffic anywhere. ` +
      `Give a child a weight above 0, or apply with --ack no-traffic if that is intended.`,
  };
}

function authRemoval(change: ModuleChange): Risk | null {
  if (change.kind !== "saml") return null;
  if (change.action === "delete" && change.before !== null) {
    return {
      rule: "auth-removal",
      addresses: [change.address],
      message:
        `${change.address}: the SAML module is deleted, so the route no longer asks for a login. ` +
        `Apply with --ack auth-removal if the route should be reachable without one.`,
    };
  }
  if (change.action === "replace" && samlEnforced(change.before) && !samlEnforced(change.after)) {
    return {
      rule: "auth-removal",
      addresses: [change.address],
      message:
        `${change.address}: SAML is changed from enabled to disabled, so the route no longer asks for a login. ` +
        `Apply with --ack auth-removal if the route should be reachable without one.`,
    };
  }
  return null;
}

function massDelete(changes: Change[], maxDeletes: number): Risk | null {
  // An inventory object left empty is bookkeeping, not an object of the user's.
  const deletes = changes.filter((c) => c.action === "delete" && c.kind !== "inventory").map((c) => c.address);
  if (deletes.length <= maxDeletes) return null;
  return {
    rule: "mass-delete",
    addresses: deletes,
    message:
      `The plan deletes ${deletes.length} objects, more than --max-deletes ${maxDeletes}. ` +
      `Check that no manifest was moved, renamed or lost and that --stack is right, then apply with --ack mass-delete.`,
  };
}

/** The risks of a set of changes, sorted by rule (in RISK_RULES order) and then by first address. */
export function buildRisks(changes: Change[], limits: { maxShift: number; maxDeletes: number }): Risk[] {
  const risks: Risk[] = [];
  for (const change of changes) {
    if (change.kind === "weighted_backend") {
      const shift = trafficShift(change, limits.maxShift);
      if (shift) risks.push(shift);
      const none = noTraffic(change);
      if (none) risks.push(none);
    } else if (change.kind !== "inventory") {
      const auth = authRemoval(change);
      if (auth) risks.push(auth);
    }
  }
  const mass = massDelete(changes, limits.maxDeletes);
  if (mass) risks.push(mass);
  const order = (r: string): number => RISK_RULES.indexOf(r as RiskRule);
  return risks.sort((a, b) => order(a.rule) - order(b.rule) || compareText(a.addresses[0] ?? "", b.addresses[0] ?? ""));
}
