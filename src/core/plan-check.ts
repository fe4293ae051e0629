/**
 * A saved plan checked against itself. The file (`plan --out FILE`) travels as a CI artifact or a file a person may
 * edit, and what a reviewer reads is its rendering: the diffs, the weights, the summary. Apply sends the requests,
 * so each request must be exactly what its change shows, rebuilt here by the kinds' own builders from `before` and
 * `after`; the shown diffs and weights must be what those values give; the owner marker must be this plan's stack
 * and the change's name; references must name the creates of the same plan; and the summary, the orphans and the
 * dependencies must agree with the changes. The checks against the live side are in src/apply/live-check.ts. Pure.
 */
import { buildMarker, buildWeightedBackendBody, buildWeights, diffWeightedBackendSides, exactShareOf, sameWeights } from "../kinds/weighted-backend.js";
import { parseRolloutState } from "../kinds/weighted-backend-rollout.js";
import { diffModule, moduleSpec, normaliseModuleSettings } from "../kinds/module.js";
import { canonicalJson, isJsonObject } from "../model/canonical.js";
import { EdgeplanError } from "../model/errors.js";
import { jsonEqual } from "../model/json-equal.js";
import { modulePath, weightedBackendPath, WEIGHTED_BACKENDS_PATH } from "../model/paths.js";
import { buildInventoryBody, parseInventory } from "../model/inventory.js";
import { entryDiffs, inventoryRequest } from "./inventory.js";
import type { InventoryChange, JsonValue, ModuleChange, Plan, PlannedRequest, WeightChange, WeightedBackendChange } from "../model/plan.js";
import { moduleAddress, weightedBackendAddress } from "../model/plan.js";
import { MARKER_KEY } from "../model/state.js";
import { findCycles } from "./graph.js";
import { DEFAULT_MAX_SHIFT } from "./plan.js";
import { buildSummary } from "./summary.js";
import { defaultMaxDeletes } from "./risks.js";
import { rolloutSteps, withoutMarkerState } from "./rollout.js";

/** One thing of a saved plan that does not agree: the change (or part of the plan) and what disagrees. */
export interface Disagreement {
  /** The change's address, or `summary`, `orphans`, `outputs` for those parts of the plan. */
  address: string;
  /** What disagrees, as words that follow the address. */
  what: string;
}

/** Longest value quoted in a disagreement: enough to tell two values apart, short enough to read. */
const QUOTE_MAX = 160;

/** A JSON value as quoted in a sentence, cut to QUOTE_MAX characters. */
export function quoteValue(value: unknown): string {
  const text = value === undefined ? "nothing" : canonicalJson(value);
  return text.length > QUOTE_MAX ? `${text.slice(0, QUOTE_MAX)}...` : text;
}

/**
 * Everything in the plan that disagrees with the rest of it, in the plan's order; none when the plan is what
 * `buildPlan` could have made (as far as a plan can tell without the manifests and the live side). The risks are
 * not compared here: apply recomputes them (`buildRisks`) and never reads the file's.
 */
export function checkPlan(plan: Plan): Disagreement[] {
  const out: Disagreement[] = [];
  const creates = new Set(plan.changes.filter((c) => c.kind === "weighted_backend" && c.action === "create").map((c) => c.address));
  for (const change of plan.changes) {
    const say = (what: string): void => void out.push({ address: change.address, what });
    if (change.kind === "weighted_backend") checkWeightedBackendChange(change, plan, creates, say);
    else if (change.kind === "inventory") checkInventoryChange(change, plan, say);
    else checkModuleChange(change, say);
  }
  checkGraph(plan, out);
  checkOrphans(plan, out);
  checkSummary(plan, out);
  for (const o of plan.outputs) {
    if (o.address !== moduleAddress(o.edge, o.route, "saml"))
      out.push({ address: o.address, what: `the output is for ${moduleAddress(o.edge, o.route, "saml")}, not this address` });
  }
  return out;
}

type Say = (what: string) => void;

/** `an update`, `a create`. */
const anAction = (action: string): string => `${/^[aeiou]/.test(action) ? "an" : "a"} ${action}`;

/** The method and path a change of this action and id sends. */
function expectedTarget(change: WeightedBackendChange): Pick<PlannedRequest<string, unknown>, "method" | "path"> {
  if (change.action === "create") return { method: "POST", path: WEIGHTED_BACKENDS_PATH };
  return { method: change.action === "delete" ? "DELETE" : "PATCH", path: weightedBackendPath(change.id ?? "") };
}

/** What a change of this action must hold and lack, or null when it does. */
function shapeOf(change: WeightedBackendChange): string | null {
  const { action } = change;
  if (action === "create") {
    if (change.id !== null || change.before !== null || change.fingerprint !== null || change.previous_owner !== null) {
      return "a create has no id, fingerprint, previous owner or before";
    }
    return change.after === null ? "a create has an after" : null;
  }
  if (change.id === null || change.before === null || change.fingerprint === null) return `${anAction(action)} has an id, a fingerprint and a before`;
  if ((action === "delete") !== (change.after === null)) return action === "delete" ? "a delete has no after" : `${anAction(action)} has an after`;
  if ((action === "rollout") !== (change.rollout !== undefined)) return "only a rollout change, and every one, has a rollout step";
  if (action === "adopt" && change.previous_owner !== null) return "an adopted object has no previous owner";
  return null;
}

function checkWeightedBackendChange(change: WeightedBackendChange, plan: Plan, creates: ReadonlySet<string>, say: Say): void {
  const orphanAddress = change.action === "delete" && change.id !== null && change.address === weightedBackendAddress(change.id);
  if (change.address !== weightedBackendAddress(change.name) && !orphanAddress) say(`the address does not match the name "${change.name}"`);
  const shape = shapeOf(change);
  if (shape !== null) return say(`this change does not have the shape of its action: ${shape}`);
  checkRequest(change, say);
  if (change.after !== null) {
    const marker = markerProblem(change, plan.stack);
    if (marker !== null) say(marker);
  }
  checkRefs(change, creates, say);
  const pending = new Set(Object.keys(change.refs));
  const names = new Map(change.weights.map((w) => [w.child, w.name ?? undefined] as const));
  const weights = buildWeights(change.before?.backends ?? null, change.after?.backends ?? null, { get: (id) => names.get(id) }, pending);
  if (!jsonEqual(change.weights, weights)) say(`the weights shown are not what before and after give: ${firstDifference(change.weights, weights)}`);
  const diffs = diffWeightedBackendSides(change.before, change.after);
  if (!jsonEqual(change.diffs, change.action === "rollout" ? withoutMarkerState(diffs) : diffs)) say("the diffs shown are not what before and after give");
  if (change.action === "takeover" && !plan.options.takeover) say("a takeover needs --takeover, and the plan was made without it");
  if (change.rollout !== undefined) {
    const rollout = rolloutProblem(change);
    if (rollout !== null) say(rollout);
  }
}

/** The request must be exactly what the change shows: its method and path from the action and id, its body `after`'s. */
function checkRequest(change: WeightedBackendChange, say: Say): void {
  const { method, path } = expectedTarget(change);
  if (change.request.method !== method) say(`request.method is ${change.request.method}, but ${anAction(change.action)} sends ${method}`);
  if (change.request.path !== path) say(`request.path is ${change.request.path}, but the change's id gives ${path}`);
  const body = change.after === null ? null : buildWeightedBackendBody(change.after);
  const sent = change.request.body;
  if (body === null || sent === null) {
    if (body !== sent) say(body === null ? `request.body is ${quoteValue(sent)}, but ${anAction(change.action)} sends none` : "request.body is missing");
    return;
  }
  for (const field of ["description", "metadata", "backends"] as const) {
    if (!jsonEqual(sent[field], body[field])) say(`request.body.${field} is ${quoteValue(sent[field])}, but the change shows ${quoteValue(body[field])}`);
  }
}

/** The owner marker in `after`: this plan's stack and the change's name, `protect` as the manifest said. */
function markerProblem(change: WeightedBackendChange, stack: string): string | null {
  const metadata = change.after?.metadata;
  const raw = isJsonObject(metadata) ? metadata[MARKER_KEY] : undefined;
  if (!isJsonObject(raw)) return `after.metadata holds no owner marker, but stack "${stack}" marks "${change.name}" ${quoteValue(buildMarker(stack, change.name, false))}`;
  const expected = buildMarker(stack, change.name, raw.protect === true, parseRolloutState(raw.rollout));
  if (!jsonEqual(raw, expected)) return `the owner marker in after.metadata is ${quoteValue(raw)}, but stack "${stack}" marks "${change.name}" ${quoteValue(expected)}`;
  if (expected.rollout !== undefined && change.action !== "rollout") return "the owner marker holds a rollout state, which only a rollout step writes";
  return null;
}

/** `refs` name, by the child names they stand for, the creates of the same plan, which the change waits for. */
function checkRefs(change: WeightedBackendChange, creates: ReadonlySet<string>, say: Say): void {
  for (const [child, target] of Object.entries(change.refs)) {
    const own = weightedBackendAddress(child);
    if (target !== own || !creates.has(own)) {
      say(`refs.${child} points at ${target}, but only ${own}, created by this plan, gives the id of child "${child}"`);
    } else if (change.after === null || !Object.hasOwn(change.after.backends, child)) {
      say(`refs.${child} names no child of after.backends`);
    } else if (!change.depends_on.includes(own)) {
      say(`refs.${child}: the change does not wait for ${own} (depends_on)`);
    }
  }
}

/** How the shown weights differ from the rebuilt ones, as words: a child left out or added, else the first child shown otherwise. */
function firstDifference(shown: readonly WeightChange[], rebuilt: readonly WeightChange[]): string {
  const shownChildren = new Set(shown.map((w) => w.child));
  const rebuiltChildren = new Set(rebuilt.map((w) => w.child));
  const missing = rebuilt.filter((w) => !shownChildren.has(w.child)).map((w) => w.child);
  if (missing.length > 0) return `they leave out ${missing.join(", ")}`;
  const extra = shown.filter((w) => !rebuiltChildren.has(w.child)).map((w) => w.child);
  if (extra.length > 0) return `they show ${extra.join(", ")}, which neither side holds`;
  for (let i = 0; i < shown.length; i++) {
    const [a, b] = [shown[i] as WeightChange, rebuilt[i] as WeightChange];
    if (!jsonEqual(a, b)) return `${a.child} is shown as ${quoteValue(a)}, but before and after give ${quoteValue(b)}`;
  }
  return "they are in another order";
}

/** Tolerance of share comparisons: shares are ratios of integers, compared in floating point. */
const EPSILON = 1e-9;

/**
 * A rollout change writes a step (no share moving more than `max_step`), the confirmation (the weights as they are),
 * or the return to the weights the rollout started from; `from` is the live weights or the live rollout's start,
 * and the rollout state written into the marker is this step's. A halt is apply's, never planned.
 */
function rolloutProblem(change: WeightedBackendChange): string | null {
  const r = change.rollout;
  const before = change.before?.backends ?? {};
  const after = change.after?.backends ?? {};
  if (r === undefined) return null;
  if (r.phase === "halt") return rollbackProblem(change);
  if (r.phase === "pause") return "a pause is written by apply when an analysis is inconclusive; a plan never holds one";
  const liveMarker = isJsonObject(change.before?.metadata) ? change.before.metadata[MARKER_KEY] : undefined;
  const liveFrom = isJsonObject(liveMarker) ? parseRolloutState(liveMarker.rollout)?.from : undefined;
  if (!sameWeights(r.from, before) && !(liveFrom !== undefined && sameWeights(r.from, liveFrom))) {
    return "rollout.from is neither the weights before nor the weights the rollout under way started from";
  }
  const written = isJsonObject(change.after?.metadata) ? change.after.metadata[MARKER_KEY] : undefined;
  const state = isJsonObject(written) ? parseRolloutState(written.rollout) : undefined;
  if (state !== undefined && (!sameWeights(state.from, r.from) || state.target !== r.target || state.step !== r.step || state.halted !== undefined)) {
    return "the rollout state written into the owner marker is not this step's";
  }
  if ((r.check !== null && !jsonEqual(r.check, r.gates.check)) || (r.analysis !== undefined && !jsonEqual(r.analysis, r.gates.analysis))) {
    return "the check or analysis before this step is not the rollout's (rollout.gates)";
  }
  if (r.status === "halted" || r.status === "paused") return null;
  if (r.phase === "confirm" && !(sameWeights(before, after) && sameWeights(after, r.final))) return "a confirmation writes the weights as they are, the final ones";
  if (r.phase === "return" && !(sameWeights(after, r.from) && sameWeights(r.final, r.from))) return "a return writes the weights the rollout started from";
  if (r.phase === "step" && !withinStep(before, after, r.max_step)) return `the step moves a share of traffic by more than its max_step, ${r.max_step} points`;
  const steps = r.phase === "step" ? rolloutSteps(r.from, r.final, r) : [];
  if (r.phase === "step" && (steps.length !== r.steps || !sameWeights(after, steps[r.step - 1] ?? {}))) {
    return `the weights written are not step ${r.step} of ${r.steps} from rollout.from to rollout.final`;
  }
  return null;
}

/**
 * A plan holds a halt only as the rollback of a halt the live marker records and whose rollback was not written:
 * it writes the weights the rollout started from and leaves the marker's rollout state as it is live.
 */
function rollbackProblem(change: WeightedBackendChange): string | null {
  const stateOf = (metadata: unknown) => {
    const marker = isJsonObject(metadata) ? metadata[MARKER_KEY] : undefined;
    return isJsonObject(marker) ? parseRolloutState(marker.rollout) : undefined;
  };
  const live = stateOf(change.before?.metadata);
  const written = stateOf(change.after?.metadata);
  if (live?.halted === undefined) return "a halt is written by apply when a check fails; a plan holds one only to write again a rollback that failed";
  if (!jsonEqual(live, written)) return "the rollback of a halted rollout keeps the marker's rollout state as it is live";
  if (!sameWeights(change.after?.backends ?? {}, live.from)) return "the rollback of a halted rollout writes the weights the rollout started from";
  return null;
}

function withinStep(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>, maxStep: number): boolean {
  const total = (w: Readonly<Record<string, number>>): number => Object.values(w).reduce((s, x) => s + x, 0);
  const [tb, ta] = [total(before), total(after)];
  if (tb === 0 || ta === 0) return true;
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].every((k) => Math.abs(exactShareOf(after[k] ?? 0, ta) - exactShareOf(before[k] ?? 0, tb)) <= maxStep + EPSILON);
}

/** A module change: its address from edge, route and kind; `after` the kind's settings; its request and diffs from them. */
function checkModuleChange(change: ModuleChange, say: Say): void {
  const spec = moduleSpec(change.kind);
  if (change.address !== moduleAddress(change.edge, change.route, change.kind))
    say(`the address does not match edge ${change.edge}, route ${change.route} and ${change.kind}`);
  const replace = change.action === "replace";
  if (replace ? change.after === null : change.before === null || change.after !== null) {
    return say(`this change does not have the shape of its action: ${replace ? "a replace has an after" : "a delete has a before and no after"}`);
  }
  for (const side of ["before", "after"] as const) {
    const value = change[side];
    if (value !== null && !jsonEqual(value, normaliseModuleSettings(spec, value))) say(`${side} is not a ${spec.label} module's settings (its fields, defaults filled)`);
  }
  const method = replace ? "PUT" : "DELETE";
  const path = modulePath(change.edge, change.route, change.kind);
  if (change.request.method !== method) say(`request.method is ${change.request.method}, but ${anAction(change.action)} sends ${method}`);
  if (change.request.path !== path) say(`request.path is ${change.request.path}, but the change's route gives ${path}`);
  const body: JsonValue = replace ? normaliseModuleSettings(spec, change.after ?? {}) : null;
  if (!jsonEqual(change.request.body, body)) say(`request.body is ${quoteValue(change.request.body)}, but the change shows ${quoteValue(body)}`);
  if (!jsonEqual(change.diffs, diffModule(spec, change.before, change.after))) say("the diffs shown are not what before and after give");
}

/** Addresses and ids are unique; every dependency is a change of the plan; the dependencies form no cycle. */
function checkGraph(plan: Plan, out: Disagreement[]): void {
  const addresses = new Set<string>();
  const ids = new Map<string, string>();
  for (const c of plan.changes) {
    if (addresses.has(c.address)) out.push({ address: c.address, what: "the plan holds two changes of this address" });
    addresses.add(c.address);
    if (c.kind !== "weighted_backend" || c.id === null) continue;
    const first = ids.get(c.id);
    if (first !== undefined) out.push({ address: c.address, what: `${c.id} is changed by ${first} too; a plan changes an object once` });
    ids.set(c.id, c.address);
  }
  const edges = new Map<string, string[]>();
  for (const c of plan.changes) {
    const unknown = c.depends_on.filter((d) => !addresses.has(d));
    if (unknown.length > 0) out.push({ address: c.address, what: `depends_on names ${unknown.join(", ")}, which the plan does not change` });
    edges.set(
      c.address,
      c.depends_on.filter((d) => addresses.has(d)),
    );
  }
  for (const cycle of findCycles([...addresses], edges)) {
    out.push({ address: cycle[0] ?? "", what: `depends_on forms a cycle: ${cycle.join(" -> ")}` });
  }
}

/**
 * An inventory write: its request is the one its entries give (`inventoryRequest`), its diffs what before and after
 * give, its entries module addresses; another stack's inventory is written only with --takeover, and only to
 * forget the entries taken over.
 */
function checkInventoryChange(change: InventoryChange, plan: Plan, say: Say): void {
  const create = change.action === "create";
  const shaped = create
    ? change.id === null && change.before === null && change.after !== null
    : change.id !== null && change.before !== null && (change.action === "delete") === (change.after === null);
  if (!shaped) return say(`this change does not have the shape of its action: ${anAction(change.action)} of an inventory object`);
  if (!/^inventory\.[^#]+#[1-9][0-9]*$/.test(change.address) || !change.address.startsWith(`inventory.${change.stack}#`))
    say(`the address does not name an inventory object of stack "${change.stack}"`);
  for (const side of ["before", "after"] as const) {
    const entries = change[side];
    if (entries === null) continue;
    const parsed = parseInventory({ id: "", metadata: buildInventoryBody(change.stack, entries).metadata });
    if (!jsonEqual(parsed?.entries, entries)) say(`${side} holds entries that are not route module addresses with their protect flag`);
  }
  const request = inventoryRequest(change.stack, change.id, change.after);
  if (!jsonEqual(change.request, request)) say(`request is ${quoteValue(change.request)}, but the change's entries give ${quoteValue(request)}`);
  if (!jsonEqual(change.diffs, entryDiffs(change.before ?? {}, change.after ?? {}))) say("the diffs shown are not what before and after give");
  if (change.stack === plan.stack) return;
  if (!plan.options.takeover) say(`writes the inventory of stack "${change.stack}", which a plan of stack "${plan.stack}" does only with --takeover`);
  else if (change.diffs.some((d) => d.op !== "remove")) say(`records modules in the inventory of stack "${change.stack}"; a takeover only removes its entries there`);
}

/**
 * A weighted backend is deleted only as an orphan the plan lists as deleted, with --prune, and never a protected one;
 * so is a module the plan lists as an orphan.
 */
function checkOrphans(plan: Plan, out: Disagreement[]): void {
  const orphans = new Map(plan.orphans.map((o) => [o.address, o]));
  const deleted = new Set<string>();
  for (const c of plan.changes) {
    if (c.kind === "inventory" || c.action !== "delete") continue;
    const orphan = orphans.get(c.address);
    const say = (what: string): void => void out.push({ address: c.address, what });
    if (c.kind !== "weighted_backend") {
      // A module is deleted by its manifest's `absent`, or as an orphan of the stack's inventory.
      if (orphan === undefined) continue;
      deleted.add(c.address);
      if (!plan.options.prune) say("a delete of an orphan needs --prune, and the plan was made without it");
      if (orphan.action !== "delete") say("is deleted, but the plan's orphans do not list it as deleted");
      else if (orphan.protected) say("is deleted, but the plan's orphans say it is protected");
      continue;
    }
    deleted.add(c.address);
    if (!plan.options.prune) say("a delete needs --prune, and the plan was made without it");
    if (orphan?.action !== "delete" || orphan.id !== c.id || orphan.name !== c.name) say("is deleted, but the plan's orphans do not list it as deleted");
    else if (orphan.protected) say("is deleted, but the plan's orphans say it is protected");
  }
  for (const o of plan.orphans) {
    if (o.action === "delete" && !deleted.has(o.address)) out.push({ address: o.address, what: "the orphans list it as deleted, but no change deletes it" });
  }
}

/** The summary counts the changes and the kept orphans. */
function checkSummary(plan: Plan, out: Disagreement[]): void {
  const counted = buildSummary(plan.changes, plan.orphans);
  const wrong = (Object.keys(counted) as Array<keyof typeof counted>).filter((k) => plan.summary[k] !== counted[k]);
  if (wrong.length === 0) return;
  const words = wrong.map((k) => `${k} ${plan.summary[k]} where the plan has ${counted[k]}`);
  out.push({ address: "summary", what: `the summary does not count the plan's changes: ${words.join(", ")}` });
}

/**
 * The thresholds a saved plan's risks are recomputed with: a flag given to apply (`--max-shift`, `--max-deletes`),
 * else the plan's own, but never looser than the defaults. The thresholds are not shown in the plan's rendering, so
 * a file that raises them would hide a risk from the reviewer; a plan made with a looser threshold on purpose needs
 * it given again on apply. `stackObjects`: the stack's objects as read again (0 when they were not counted, which
 * happens only when the plan deletes too few objects for the default to matter).
 */
export function buildSavedPlanLimits(
  plan: Pick<Plan, "options">,
  given: { maxShift?: number | undefined; maxDeletes?: number | undefined },
  stackObjects: number,
): { maxShift: number; maxDeletes: number } {
  return {
    maxShift: given.maxShift ?? Math.min(plan.options.max_shift, DEFAULT_MAX_SHIFT),
    maxDeletes: given.maxDeletes ?? Math.min(plan.options.max_deletes, defaultMaxDeletes(stackObjects)),
  };
}

/**
 * The refusal of a saved plan that disagrees with itself or with the live side: each disagreement, and what to do.
 * `again` is the command that makes the plan again where the refused command ran (its paths, API and stack).
 */
export function buildDisagreementError(
  file: string,
  against: "itself" | "the live side",
  found: readonly Disagreement[],
  use: "applied" | "shown" = "applied",
  again = `edgeplan plan --out ${file}`,
): EdgeplanError {
  const n = found.length;
  const advice =
    use === "applied"
      ? `No change was sent. A saved plan is applied only as edgeplan wrote it: make the plan again (${again}), review it, and apply that file.`
      : `A saved plan is shown only as edgeplan wrote it: make the plan again (${again}).`;
  return new EdgeplanError(
    [
      `the saved plan ${file} does not agree with ${against} (${n} ${n === 1 ? "disagreement" : "disagreements"}), so it is not ${use}:`,
      ...found.map((d) => `  ${d.address}: ${d.what}`),
      advice,
    ].join("\n"),
  );
}
