/**
 * Progressive rollouts: the weights of each step from the live weights to the manifest's (`buildRolloutSteps`),
 * and the turn of a weighted backend's update into the rollout step that is due, waiting or halted
 * (`buildRolloutChange`), from the state kept in the owner marker. Pure: the time comes in as `now`.
 */
import type { FieldDiff, RolloutStep, WeightedBackendChange, WeightedBackendValue } from "../model/plan.js";
import type { DesiredWeightedBackend, RolloutShare, RolloutSpec, RolloutState } from "../model/state.js";
import { InternalError } from "../model/errors.js";
import { isJsonObject } from "../model/canonical.js";
import { MARKER_KEY } from "../model/state.js";
import { buildRolloutWrite, buildWeights, diffWeightedBackend, exactShareOf, hasTraffic, sameWeights, sortedBackends } from "../kinds/weighted-backend.js";
import { parseRolloutState, rolloutTargetDigest } from "../kinds/weighted-backend-rollout.js";
import { LIMITS } from "../model/wire.js";
import { boundReason } from "./halt-record.js";

type Weights = Readonly<Record<string, number>>;

/** Tolerance of share comparisons: shares are ratios of integers, compared in floating point. */
const EPSILON = 1e-9;

function total(w: Weights): number {
  return Object.values(w).reduce((s, x) => s + x, 0);
}

/** Each key's share of `w` in percent (0 for a key `w` lacks). */
function sharesOf(w: Weights, keys: readonly string[]): number[] {
  const t = total(w);
  return keys.map((k) => exactShareOf(w[k] ?? 0, t));
}

/**
 * Integer weights summing to the whole (10000) whose shares are the ideal shares `x` (percent) to within 0.01
 * point: the running sums are rounded, so no rounding error accumulates and every weight is at least 0.
 */
function roundShares(keys: readonly string[], x: readonly number[]): Record<string, number> {
  const whole = LIMITS.weightMax;
  const out: Record<string, number> = {};
  let ideal = 0;
  let given = 0;
  keys.forEach((k, i) => {
    ideal += ((x[i] as number) * whole) / 100;
    const upTo = i === keys.length - 1 ? whole : Math.min(whole, Math.max(given, Math.round(ideal)));
    out[k] = upTo - given;
    given = upTo;
  });
  return out;
}

/** True when no child's share moves more than `maxStep` points between two consecutive maps of `path`. */
function withinMaxStep(path: readonly Weights[], keys: readonly string[], maxStep: number): boolean {
  for (let i = 1; i < path.length; i++) {
    const a = sharesOf(path[i - 1] as Weights, keys);
    const b = sharesOf(path[i] as Weights, keys);
    if (a.some((s, j) => Math.abs((b[j] as number) - s) > maxStep + EPSILON)) return false;
  }
  return true;
}

/** True when no child's share of traffic moves more than `maxPoints` percentage points between two consecutive maps of `path`. */
export function everyMoveWithin(path: readonly Weights[], maxPoints: number): boolean {
  const keys = [...new Set(path.flatMap((w) => Object.keys(w)))].sort();
  return withinMaxStep(path, keys, maxPoints);
}

/**
 * The weights written by each step of a rollout from `from` to `target`: every child's share of the traffic
 * (weight / sum) moves toward its target by at most `maxStep` percentage points per step, in as few steps as the
 * largest move needs (one more when rounding to whole weights would overshoot). Steps before the last hold every
 * child of either side with integer weights summing to 10000 (a child that leaves keeps a weight until the last
 * step removes it; a child that comes in starts from 0); the last step is `target` exactly. When either side sends
 * no traffic there is no share to move: one step.
 */
export function buildRolloutSteps(from: Weights, target: Weights, maxStep: number): Array<Record<string, number>> {
  const last = sortedBackends(target);
  if (!hasTraffic(from) || !hasTraffic(target)) return [last];
  const keys = [...new Set([...Object.keys(from), ...Object.keys(target)])].sort();
  const s = sharesOf(from, keys);
  const t = sharesOf(target, keys);
  const largest = Math.max(...keys.map((_, i) => Math.abs((t[i] as number) - (s[i] as number))));
  const fewest = Math.max(1, Math.ceil(largest / maxStep - EPSILON));
  // Rounding moves a share by less than 0.02 point between two steps, so twice the fewest steps always fit.
  for (let n = fewest; n <= 2 * fewest + 1; n++) {
    const steps: Array<Record<string, number>> = [];
    for (let k = 1; k < n; k++) {
      steps.push(
        roundShares(
          keys,
          keys.map((_, i) => (s[i] as number) + (((t[i] as number) - (s[i] as number)) * k) / n),
        ),
      );
    }
    steps.push(last);
    if (withinMaxStep([from, ...steps], keys, maxStep)) return steps;
  }
  throw new InternalError(`no rollout within ${maxStep} points per step was found`);
}

/**
 * The weights written by each step of a rollout whose manifest lists its steps: step k moves every child's share
 * `shares[k]` percent of the way from `from` to `target` (integer weights summing to 10000, as above); the last
 * share is 100, which writes `target` exactly. A pause is a step that keeps the weights of the step before it (a
 * pause is never first). Without traffic on one side: one step.
 */
export function buildListSteps(from: Weights, target: Weights, shares: readonly RolloutShare[]): Array<Record<string, number>> {
  const last = sortedBackends(target);
  if (!hasTraffic(from) || !hasTraffic(target)) return [last];
  const keys = [...new Set([...Object.keys(from), ...Object.keys(target)])].sort();
  const s = sharesOf(from, keys);
  const t = sharesOf(target, keys);
  const along = (p: number) =>
    roundShares(
      keys,
      keys.map((_, i) => (s[i] as number) + (((t[i] as number) - (s[i] as number)) * p) / 100),
    );
  const steps: Array<Record<string, number>> = [];
  for (const p of shares) {
    if (typeof p !== "number") steps.push({ ...(steps.at(-1) ?? sortedBackends(from)) });
    else steps.push(p >= 100 ? last : along(p));
  }
  return steps;
}

/** The steps of a rollout as its manifest paces it: a `steps:` list, else steps of at most `max_step` points. */
export function rolloutSteps(from: Weights, target: Weights, pace: Pick<RolloutSpec, "max_step" | "shares">): Array<Record<string, number>> {
  return pace.shares === null ? buildRolloutSteps(from, target, pace.max_step) : buildListSteps(from, target, pace.shares);
}

/** True when step `k` (1-based) of a rollout of `n` steps is a `{pause: true}` item of its `steps:` list. */
export function isPauseStep(pace: Pick<RolloutSpec, "shares">, k: number, n: number): boolean {
  return pace.shares !== null && pace.shares.length === n && typeof pace.shares[k - 1] === "object";
}

/**
 * Why a rollout at `state` waits for a person before step `k` of `n`: the reason the marker records (an
 * inconclusive analysis), or a pause step that `edgeplan rollout promote` has not waived; null when it goes on.
 */
export function pauseReason(pace: Pick<RolloutSpec, "shares">, state: RolloutState, k: number, n: number): string | null {
  if (state.paused !== undefined) return state.paused;
  if (isPauseStep(pace, k, n) && state.promoted !== state.step) return `pause step ${k} of ${n}`;
  return null;
}

/** What a person runs to take a paused rollout on past its gate. */
export function promoteCommand(name: string): string {
  return `edgeplan rollout promote ${name}`;
}

/** What a rollout change is built from, beside the update the kind built. */
export interface RolloutContext {
  desired: DesiredWeightedBackend;
  /** The rollout state in the live object's owner marker. */
  state: RolloutState | undefined;
  stack: string;
  /** The plan's time, in milliseconds since the epoch. */
  now: number;
  /** `apply --retry-rollout NAME` names this object: a halted rollout starts again from the live weights. */
  retry: boolean;
}

const iso = (ms: number): string => new Date(ms).toISOString();

/**
 * The rollout change of an update of an object whose manifest has a `rollout` block, or the update as it is when
 * it moves no traffic (only description or metadata differ, or a side sends no traffic), or is not an update (a
 * create is never a rollout; nor are adopt, takeover and rename, which first bring an object under management).
 */
export function buildRolloutChange(change: WeightedBackendChange, ctx: RolloutContext): WeightedBackendChange {
  const spec = ctx.desired.rollout;
  if (spec === undefined || change.action !== "update" || change.before === null || change.after === null) return change;
  const live = change.before.backends;
  const target = change.after.backends;
  const digest = rolloutTargetDigest(ctx.desired.backends);
  const state = ctx.state?.target === digest ? ctx.state : undefined;
  if (state?.halted !== undefined && !ctx.retry && isRollbackPending(spec, state, live, target)) return rollbackChange(change, spec, state, ctx.now);
  if (sameWeights(live, target)) {
    // The last step is written; with a check, the rollout ends once the check after it passes.
    if (state && !state.halted && isGated(spec)) {
      // The confirmation is a gate too: a pause the marker records holds it, and promote waives its check.
      if (state.paused !== undefined) {
        const steps = rolloutSteps(state.from, target, spec);
        return pausedChange(change, spec, state, { from: state.from, steps, k: steps.length, after: Date.parse(state.at) + spec.interval_ms, reason: state.paused });
      }
      return confirmChange(change, ctx, spec, state);
    }
    return change;
  }
  if (!hasTraffic(live) || !hasTraffic(target)) return change;
  if (state?.halted && !ctx.retry) return haltedChange(change, spec, state);
  if (ctx.state && !state && sameWeights(ctx.state.from, target)) return returnChange(change, ctx, spec, ctx.state);
  if (state && !state.halted) {
    const steps = rolloutSteps(state.from, target, spec);
    if (state.step < steps.length && sameWeights(steps[state.step - 1] as Weights, live)) {
      const next: StepInput = { from: state.from, steps, k: state.step + 1, after: Date.parse(state.at) + spec.interval_ms };
      const paused = pauseReason(spec, state, next.k, steps.length);
      if (paused !== null) return pausedChange(change, spec, state, { ...next, reason: paused });
      // Promoted: the gate of the next step is waived, and a pause step is passed by without a write of its own.
      if (state.promoted === state.step) {
        const promoted = stepChange(change, ctx, spec, { ...next, k: next.k + (isPauseStep(spec, next.k, steps.length) ? 1 : 0), waived: true });
        return { ...promoted, notes: [...promoted.notes, `promoted past step ${state.step} (edgeplan rollout promote): no pause or check before this step`] };
      }
      return stepChange(change, ctx, spec, next);
    }
  }
  const restarted = ctx.state !== undefined && !ctx.retry;
  const built = stepChange(change, ctx, spec, { from: live, steps: rolloutSteps(live, target, spec), k: 1, after: ctx.now });
  if (restarted) {
    built.notes = [...built.notes, "the manifest or the live weights changed during a rollout: a new rollout starts from the live weights"];
  }
  return built;
}

/** A rollout whose steps after the first wait for a verdict: a check, or an analysis. */
function isGated(spec: RolloutSpec): boolean {
  return spec.check !== null || spec.analysis.length > 0;
}

interface StepInput {
  from: Weights;
  steps: ReadonlyArray<Record<string, number>>;
  /** The step to write, 1-based. */
  k: number;
  /** The time the step may be written: the last step's time plus the interval (now for a first step). */
  after: number;
  /** A person promoted the rollout past its gate: no check before this step. */
  waived?: boolean;
}

function stepChange(change: WeightedBackendChange, ctx: RolloutContext, spec: RolloutSpec, input: StepInput): WeightedBackendChange {
  const { steps, k } = input;
  const n = steps.length;
  const writeAt = Math.max(ctx.now, input.after);
  const keepsState = k < n || isGated(spec);
  const state: RolloutState | undefined = keepsState
    ? { from: sortedBackends(input.from), target: rolloutTargetDigest(ctx.desired.backends), step: k, at: iso(writeAt) }
    : undefined;
  const rollout = buildStep(ctx, spec, {
    phase: "step",
    step: k,
    steps: n,
    from: input.from,
    final: steps[n - 1] as Weights,
    due: input.after,
    next: keepsState ? writeAt + spec.interval_ms : null,
    check: k > 1 && input.waived !== true ? spec.check : null,
    analysis: k > 1 && input.waived !== true ? spec.analysis : [],
  });
  return withWrite(change, steps[k - 1] as Weights, state, rollout);
}

function confirmChange(change: WeightedBackendChange, ctx: RolloutContext, spec: RolloutSpec, state: RolloutState): WeightedBackendChange {
  const n = rolloutSteps(state.from, change.after?.backends ?? {}, spec).length;
  const due = Date.parse(state.at) + spec.interval_ms;
  const waived = state.promoted === state.step;
  const rollout = buildStep(ctx, spec, {
    phase: "confirm",
    step: n,
    steps: n,
    from: state.from,
    final: change.after?.backends ?? {},
    due,
    next: null,
    check: waived ? null : spec.check,
    analysis: waived ? [] : spec.analysis,
  });
  return withWrite(change, change.after?.backends ?? {}, undefined, rollout);
}

function returnChange(change: WeightedBackendChange, ctx: RolloutContext, spec: RolloutSpec, state: RolloutState): WeightedBackendChange {
  const rollout = buildStep(ctx, spec, { phase: "return", step: 1, steps: 1, from: state.from, final: state.from, due: ctx.now, next: null, check: null, analysis: [] });
  return withWrite(change, change.after?.backends ?? {}, undefined, rollout);
}

function haltedChange(change: WeightedBackendChange, spec: RolloutSpec, state: RolloutState): WeightedBackendChange {
  const n = rolloutSteps(state.from, change.after?.backends ?? {}, spec).length;
  const rollout: RolloutStep = {
    ...stepBase(spec, state.from, state.target, change.after?.backends ?? {}),
    phase: "step",
    step: Math.min(state.step + 1, n),
    steps: n,
    status: "halted",
    due_at: state.at,
    next_due_at: null,
    check: spec.check,
    ...(spec.analysis.length > 0 ? { analysis: spec.analysis } : {}),
    halted_reason: state.halted ?? null,
  };
  const notes = [...change.notes, `halted: ${state.halted ?? ""}; change the manifest, or apply --retry-rollout ${change.name}, to try again`];
  return { ...change, action: "rollout", notes, diffs: withoutMarkerState(change.diffs), rollout };
}

/**
 * True when the marker records a halt but the live weights are still those of the step it halted after: the halt
 * was recorded and its rollback was not written (refused, or the run ended between the two writes, see
 * `buildHaltMark`). Weights that are neither (a person set others) are not rolled back.
 */
function isRollbackPending(spec: RolloutSpec, state: RolloutState, live: Weights, target: Weights): boolean {
  if (sameWeights(live, state.from)) return false;
  const written = rolloutSteps(state.from, target, spec)[state.step - 1];
  return written !== undefined && sameWeights(written, live);
}

/** The rollback of a halt that was recorded and not written: the weights the rollout started from, the marker as it is. */
function rollbackChange(change: WeightedBackendChange, spec: RolloutSpec, state: RolloutState, now: number): WeightedBackendChange {
  const final = change.after?.backends ?? {};
  const n = rolloutSteps(state.from, final, spec).length;
  const rollout: RolloutStep = {
    ...stepBase(spec, state.from, state.target, final),
    phase: "halt",
    step: Math.min(state.step + 1, n),
    steps: n,
    status: "due",
    due_at: iso(now),
    next_due_at: null,
    check: null,
    halted_reason: state.halted ?? null,
  };
  const written = withWrite(change, state.from, state, rollout);
  const note = `halted (${state.halted ?? ""}), and the rollback was not written: the weights it started from are written back`;
  return { ...written, notes: [...written.notes, note] };
}

/** A rollout that waits for a person before step `k`: nothing is written until `edgeplan rollout promote NAME`. */
function pausedChange(change: WeightedBackendChange, spec: RolloutSpec, state: RolloutState, input: StepInput & { reason: string }): WeightedBackendChange {
  const rollout: RolloutStep = {
    ...stepBase(spec, state.from, state.target, change.after?.backends ?? {}),
    phase: "step",
    step: input.k,
    steps: input.steps.length,
    status: "paused",
    due_at: iso(input.after),
    next_due_at: null,
    check: spec.check,
    halted_reason: null,
    paused_reason: input.reason,
  };
  const notes = [...change.notes, `paused: ${input.reason}; run "${promoteCommand(change.name)}" to go on`];
  return { ...change, action: "rollout", notes, diffs: withoutMarkerState(change.diffs), rollout };
}

/** What every step of one rollout says alike: its settings, where it starts, and where it ends (`final`: the manifest's weights). */
function stepBase(
  spec: RolloutSpec,
  from: Weights,
  target: string,
  final: Weights,
): Pick<RolloutStep, "max_step" | "shares" | "interval" | "interval_ms" | "from" | "target" | "final" | "gates"> {
  const pace = { max_step: spec.max_step, shares: spec.shares, interval: spec.interval, interval_ms: spec.interval_ms };
  return { ...pace, from: sortedBackends(from), target, final: sortedBackends(final), gates: { check: spec.check, analysis: spec.analysis } };
}

function buildStep(
  ctx: RolloutContext,
  spec: RolloutSpec,
  s: {
    phase: RolloutStep["phase"];
    step: number;
    steps: number;
    from: Weights;
    final: Weights;
    due: number;
    next: number | null;
    check: RolloutSpec["check"];
    analysis: RolloutSpec["analysis"];
  },
): RolloutStep {
  return {
    ...stepBase(spec, s.from, rolloutTargetDigest(ctx.desired.backends), s.final),
    phase: s.phase,
    step: s.step,
    steps: s.steps,
    status: ctx.now >= s.due ? "due" : "waiting",
    due_at: iso(s.due),
    next_due_at: s.next === null ? null : iso(s.next),
    check: s.check,
    ...(s.analysis.length > 0 ? { analysis: s.analysis } : {}),
    halted_reason: null,
  };
}

/** The change with the write of `backends` and a marker holding `state` (none: the rollout ends with this write). */
function withWrite(change: WeightedBackendChange, backends: Weights, state: RolloutState | undefined, rollout: RolloutStep): WeightedBackendChange {
  const before = change.before as WeightedBackendValue;
  const { after, request } = buildRolloutWrite(change, backends, state);
  const names = new Map(change.weights.map((w) => [w.child, w.name ?? undefined] as const));
  const pending = new Set(Object.keys(change.refs));
  const diffs = withoutMarkerState(diffWeightedBackend(before, after));
  const weights = buildWeights(before.backends, after.backends, { get: (id) => names.get(id) }, pending);
  return { ...change, action: "rollout", after, diffs, weights, request, rollout };
}

/** The diffs without the marker's when only its rollout state changes: the rollout itself says where it stands. */
export function withoutMarkerState(diffs: FieldDiff[]): FieldDiff[] {
  return diffs.filter((f) => f.path !== `metadata.${MARKER_KEY}` || !sameOwner(f.before, f.after));
}

/** Two markers of the same owner, whatever their rollout states. */
function sameOwner(a: unknown, b: unknown): boolean {
  const strip = (m: unknown): string => {
    if (m === null || typeof m !== "object") return JSON.stringify(m);
    const { rollout: _rollout, ...rest } = m as Record<string, unknown>;
    return JSON.stringify(rest);
  };
  return strip(a) === strip(b);
}

/**
 * The write that halts a rollout whose check failed: the weights it started from, and the marker's rollout state
 * marked halted with the reason (bounded, `boundReason`; at `now`, the time of the failure). Made by apply from a
 * due rollout change; the rollout is not tried again until its manifest changes or `apply --retry-rollout NAME`.
 * The engine sends `buildHaltMark` before it, so that a rollback that fails is known to the next run.
 */
export function buildRolloutHalt(change: WeightedBackendChange, reason: string, now: number): WeightedBackendChange {
  const r = change.rollout;
  if (!r || !change.before || !change.after || !isJsonObject(change.after.metadata)) {
    throw new InternalError(`${change.address}: only a rollout step can be halted`);
  }
  const lastWritten = r.phase === "confirm" ? r.step : Math.max(1, r.step - 1);
  const halted = boundReason(reason);
  const state: RolloutState = { from: r.from, target: r.target, step: lastWritten, at: iso(now), halted };
  const { after, request } = buildRolloutWrite(change, r.from, state);
  const names = new Map(change.weights.map((w) => [w.child, w.name ?? undefined] as const));
  const weights = buildWeights(change.before.backends, after.backends, { get: (id) => names.get(id) }, new Set());
  const rollout: RolloutStep = { ...r, phase: "halt", status: "due", next_due_at: null, halted_reason: halted };
  return { ...change, after, weights, request, refs: {}, rollout };
}

/**
 * The first of a halt's two writes: the marker of the halt (`after`'s) with the live weights unchanged, or null
 * when the live marker records the halt already (a rollback planned again). Written first, it makes a rollback
 * that then fails visible to every later plan (`isRollbackPending`): a process killed between the writes, or a
 * rollback the API refuses, is rolled back by the next run, never stepped on.
 */
export function buildHaltMark(change: WeightedBackendChange): WeightedBackendChange["request"] | null {
  const body = change.request.body;
  if (change.rollout?.phase !== "halt" || !change.before || body === null) return null;
  const live = parseRolloutState(parseMarkerRollout(change.before.metadata));
  if (live?.halted !== undefined) return null;
  return { ...change.request, body: { ...body, backends: sortedBackends(change.before.backends) } };
}

/**
 * The write that pauses a rollout whose analysis was inconclusive: the live weights stay as they are (the body
 * repeats them, so the write is the marker's only) and the marker's rollout state, as it is live, gets `paused` with
 * the reason. Made by apply from a due rollout change; no step of the rollout is taken until a person promotes or
 * aborts it (`edgeplan rollout promote NAME`, `edgeplan rollout abort NAME`).
 */
export function buildRolloutPause(change: WeightedBackendChange, reason: string): WeightedBackendChange {
  const r = change.rollout;
  const live = change.before ? parseRolloutState(parseMarkerRollout(change.before.metadata)) : undefined;
  if (!r || !change.before || !change.after || live === undefined) {
    throw new InternalError(`${change.address}: only a rollout step under way can be paused`);
  }
  const { promoted: _promoted, ...rest } = live;
  const state: RolloutState = { ...rest, paused: boundReason(reason) };
  const { after, request } = buildRolloutWrite(change, change.before.backends, state);
  const names = new Map(change.weights.map((w) => [w.child, w.name ?? undefined] as const));
  const weights = buildWeights(change.before.backends, after.backends, { get: (id) => names.get(id) }, new Set());
  const rollout: RolloutStep = { ...r, phase: "pause", status: "due", next_due_at: null, halted_reason: null };
  return { ...change, after, weights, request, refs: {}, rollout };
}

/** The `rollout` of an owner marker inside live metadata, or undefined. */
function parseMarkerRollout(metadata: unknown): unknown {
  const marker = isJsonObject(metadata) ? metadata[MARKER_KEY] : undefined;
  return isJsonObject(marker) ? marker.rollout : undefined;
}
