/**
 * Progressive rollouts in the pure core: the steps from any start to any target (a property), and what the plan
 * makes of the rollout state in the owner marker, at a given time.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkPlan } from "../../src/core/plan-check.js";
import { buildPlan, DEFAULT_MAX_SHIFT } from "../../src/core/plan.js";
import { buildListSteps, buildRolloutHalt, buildRolloutSteps } from "../../src/core/rollout.js";
import { rolloutTargetDigest } from "../../src/kinds/weighted-backend-rollout.js";
import type { WeightedBackendChange } from "../../src/model/plan.js";
import type { DesiredWeightedBackend, RolloutShare, RolloutSpec, RolloutState } from "../../src/model/state.js";
import { desiredWb, hrId, liveWb } from "./builders.js";

const KEYS = [hrId(1), hrId(2), hrId(3), hrId(4), hrId(5)];

/** Weights of some of the five children; a child left out is absent from the map. */
const weightsArb = fc
  .array(fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }), { minLength: KEYS.length, maxLength: KEYS.length })
  .map((ws) => Object.fromEntries(ws.flatMap((w, i) => (w === undefined ? [] : [[KEYS[i] as string, w]]))));

function shares(w: Record<string, number>): number[] {
  const total = Object.values(w).reduce((s, x) => s + x, 0);
  return KEYS.map((k) => ((w[k] ?? 0) / total) * 100);
}

describe("buildRolloutSteps", () => {
  it("keeps every step within max_step points for every child, integer weights in range, and ends exactly at the target", () => {
    fc.assert(
      fc.property(weightsArb, weightsArb, fc.integer({ min: 1, max: 100 }), (from, target, maxStep) => {
        const steps = buildRolloutSteps(from, target, maxStep);
        expect(steps.at(-1)).toEqual(target);
        for (const step of steps) {
          for (const w of Object.values(step)) {
            expect(Number.isInteger(w)).toBe(true);
            expect(w).toBeGreaterThanOrEqual(0);
            expect(w).toBeLessThanOrEqual(10_000);
          }
        }
        const traffic = (w: Record<string, number>): boolean => Object.values(w).some((x) => x > 0);
        if (!traffic(from) || !traffic(target)) {
          // Without traffic on one side there is no share to move: one write.
          expect(steps).toHaveLength(1);
          return;
        }
        const path = [from, ...steps];
        for (let i = 1; i < path.length; i++) {
          const a = shares(path[i - 1] as Record<string, number>);
          const b = shares(path[i] as Record<string, number>);
          for (let j = 0; j < KEYS.length; j++) expect(Math.abs((b[j] as number) - (a[j] as number))).toBeLessThanOrEqual(maxStep + 1e-9);
        }
        // As few steps as the largest move needs, or one more when whole weights would overshoot.
        const largest = Math.max(...shares(from).map((s, j) => Math.abs((shares(target)[j] as number) - s)));
        const fewest = Math.max(1, Math.ceil(largest / maxStep - 1e-9));
        expect(steps.length).toBeGreaterThanOrEqual(fewest);
        expect(steps.length).toBeLessThanOrEqual(fewest + 1);
      }),
      { numRuns: 500 },
    );
  });

  it("moves 100/0 to 0/100 at 25 points in four exact steps; a leaving child stays until the last step, a new one starts from 0", () => {
    expect(buildRolloutSteps({ a: 100, b: 0 }, { a: 0, b: 100 }, 25)).toEqual([
      { a: 7500, b: 2500 },
      { a: 5000, b: 5000 },
      { a: 2500, b: 7500 },
      { a: 0, b: 100 },
    ]);
    expect(buildRolloutSteps({ a: 1 }, { b: 1 }, 50)).toEqual([{ a: 5000, b: 5000 }, { b: 1 }]);
  });
});

describe("buildListSteps", () => {
  const listArb = fc.uniqueArray(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 8 }).map((l) => {
    const rising = [...l].sort((a, b) => a - b);
    return rising.at(-1) === 100 ? rising : [...rising, 100];
  });

  it("writes each listed share of the move (to rounding), integer weights in range, and ends exactly at the target", () => {
    fc.assert(
      fc.property(weightsArb, weightsArb, listArb, (from, target, list) => {
        const steps = buildListSteps(from, target, list);
        expect(steps.at(-1)).toEqual(target);
        for (const step of steps) for (const w of Object.values(step)) expect(Number.isInteger(w) && w >= 0 && w <= 10_000).toBe(true);
        const traffic = (w: Record<string, number>): boolean => Object.values(w).some((x) => x > 0);
        if (!traffic(from) || !traffic(target)) return expect(steps).toHaveLength(1);
        expect(steps).toHaveLength(list.length);
        const [s, t] = [shares(from), shares(target)];
        steps.slice(0, -1).forEach((step, k) => {
          // Each child is within rounding (0.02 point) of the listed share of its way.
          const at = shares(step);
          for (let j = 0; j < KEYS.length; j++) {
            const ideal = (s[j] as number) + (((t[j] as number) - (s[j] as number)) * (list[k] as number)) / 100;
            expect(Math.abs((at[j] as number) - ideal)).toBeLessThan(0.02);
          }
        });
      }),
      { numRuns: 500 },
    );
  });

  /** A rising list of shares ending with 100, with pauses between shares (never first, last, or two in a row). */
  const pausedListArb = fc
    .tuple(listArb, fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }))
    .map(([list, pauses]) => list.flatMap((share, i): RolloutShare[] => (i > 0 && pauses[i] === true ? [{ pause: true }, share] : [share])));

  it("with pauses: a step per item, each a pause keeping the step before or a share, whole weights summing as ever, the last the target", () => {
    fc.assert(
      fc.property(weightsArb, weightsArb, pausedListArb, (from, target, list) => {
        const steps = buildListSteps(from, target, list);
        const traffic = (w: Record<string, number>): boolean => Object.values(w).some((x) => x > 0);
        expect(steps.at(-1)).toEqual(target);
        for (const step of steps) for (const w of Object.values(step)) expect(Number.isInteger(w) && w >= 0 && w <= 10_000).toBe(true);
        if (!traffic(from) || !traffic(target)) return expect(steps).toHaveLength(1);
        expect(steps).toHaveLength(list.length);
        const shares = list.filter((s): s is number => typeof s === "number");
        // Without its pauses, the list writes what the list of its shares writes, and each pause repeats the step before it.
        expect(steps.filter((_, k) => typeof list[k] === "number")).toEqual(buildListSteps(from, target, shares));
        steps.forEach((step, k) => {
          if (typeof list[k] !== "number") expect(step).toEqual(steps[k - 1]);
          if (k < steps.length - 1) expect(Object.values(step).reduce((a, b) => a + b, 0)).toBe(10_000);
        });
      }),
      { numRuns: 500 },
    );
  });

  it("moves 90/10 to 0/100 along 10, 50, 100 percent of the way", () => {
    expect(buildListSteps({ a: 9000, b: 1000 }, { a: 0, b: 10000 }, [10, 50, 100])).toEqual([
      { a: 8100, b: 1900 },
      { a: 4500, b: 5500 },
      { a: 0, b: 10000 },
    ]);
  });
});

const SPEC: RolloutSpec = {
  max_step: 25,
  shares: null,
  interval: "5m",
  interval_ms: 300_000,
  check: { url: "https://status.example.com/ok", expect_status: null, timeout_ms: 10_000 },
  analysis: [],
};
const NOW = Date.parse("2026-01-01T00:00:00Z");
const [A, B] = [hrId(1), hrId(2)];

function desired(backends: Record<string, number>, spec: RolloutSpec = SPEC): DesiredWeightedBackend {
  return { ...desiredWb("web", { backends }), rollout: spec };
}

function live(backends: Record<string, number>, rollout?: RolloutState) {
  const marker = { name: "web", stack: "default", ...(rollout ? { rollout } : {}) };
  return liveWb(1, { backends, metadata: JSON.stringify({ edgeplan: marker }) });
}

function plan(d: DesiredWeightedBackend, l: ReturnType<typeof live> | null, extra: { now?: number; retry?: boolean; maxShift?: number } = {}) {
  return buildPlan(
    { weightedBackends: [d], edgeRoutes: [] },
    { weightedBackends: l ? [l] : [], routes: [] },
    {
      stack: "default",
      prune: false,
      takeover: false,
      maxShift: extra.maxShift ?? DEFAULT_MAX_SHIFT,
      now: extra.now ?? NOW,
      retryRollouts: extra.retry ? ["web"] : [],
    },
  );
}

const only = (p: ReturnType<typeof plan>): WeightedBackendChange => {
  expect(p.changes).toHaveLength(1);
  return p.changes[0] as WeightedBackendChange;
};

const target = { [A]: 0, [B]: 100 };
const digest = rolloutTargetDigest(target);

describe("the plan of a rollout", () => {
  it("with a steps: list, writes the listed share of the move and says so", () => {
    const c = only(plan(desired(target, { ...SPEC, max_step: 50, shares: [10, 50, 100] }), live({ [A]: 100, [B]: 0 })));
    expect(c.rollout).toMatchObject({ phase: "step", step: 1, steps: 3, shares: [10, 50, 100], final: { [A]: 0, [B]: 100 } });
    expect(c.request.body?.backends).toEqual({ [A]: 9000, [B]: 1000 });
  });

  it("starts with step 1 due now, needs no --ack traffic-shift when each step is within --max-shift, and keeps the state in the marker", () => {
    const p = plan(desired(target), live({ [A]: 100, [B]: 0 }), { maxShift: 25 });
    const c = only(p);
    expect(c.action).toBe("rollout");
    expect(c.rollout).toMatchObject({
      phase: "step",
      step: 1,
      steps: 4,
      status: "due",
      due_at: "2026-01-01T00:00:00.000Z",
      next_due_at: "2026-01-01T00:05:00.000Z",
      check: null,
    });
    expect(c.request.body?.backends).toEqual({ [A]: 7500, [B]: 2500 });
    expect(JSON.parse(c.request.body?.metadata ?? "")).toEqual({
      edgeplan: { name: "web", stack: "default", rollout: { at: "2026-01-01T00:00:00.000Z", from: { [A]: 100, [B]: 0 }, step: 1, target: digest } },
    });
    expect(p.risks).toEqual([]);
    expect(p.summary.rollout).toBe(1);
  });

  it("waits for the interval, then takes the next step with its check", () => {
    const state: RolloutState = { from: { [A]: 100, [B]: 0 }, target: digest, step: 1, at: "2025-12-31T23:58:00.000Z" };
    const waiting = only(plan(desired(target), live({ [A]: 7500, [B]: 2500 }, state)));
    expect(waiting.rollout).toMatchObject({ step: 2, status: "waiting", due_at: "2026-01-01T00:03:00.000Z", check: SPEC.check });
    const due = only(plan(desired(target), live({ [A]: 7500, [B]: 2500 }, state), { now: NOW + 180_000 }));
    expect(due.rollout).toMatchObject({ step: 2, status: "due" });
    expect(due.request.body?.backends).toEqual({ [A]: 5000, [B]: 5000 });
  });

  it("with a check, ends with a confirmation one interval after the last step, which clears the state", () => {
    const state: RolloutState = { from: { [A]: 100, [B]: 0 }, target: digest, step: 4, at: "2025-12-31T23:58:00.000Z" };
    const c = only(plan(desired(target), live(target, state), { now: NOW + 180_000 }));
    expect(c.rollout).toMatchObject({ phase: "confirm", step: 4, steps: 4, status: "due", check: SPEC.check, next_due_at: null });
    expect(JSON.parse(c.request.body?.metadata ?? "")).toEqual({ edgeplan: { name: "web", stack: "default" } });
    // Without a check the last step clears the state itself.
    const last = only(plan(desired(target, { ...SPEC, check: null }), live({ [A]: 2500, [B]: 7500 }, { ...state, step: 3 }), { now: NOW + 180_000 }));
    expect(last.rollout).toMatchObject({ phase: "step", step: 4, next_due_at: null });
    expect(JSON.parse(last.request.body?.metadata ?? "")).toEqual({ edgeplan: { name: "web", stack: "default" } });
  });

  it("restarts from the live weights when the manifest changes, and goes back to the starting weights at once", () => {
    const state: RolloutState = { from: { [A]: 100, [B]: 0 }, target: digest, step: 1, at: "2025-12-31T23:59:59.000Z" };
    const restarted = only(plan(desired({ [A]: 50, [B]: 50 }), live({ [A]: 7500, [B]: 2500 }, state)));
    expect(restarted.rollout).toMatchObject({ phase: "step", step: 1, steps: 1, status: "due", from: { [A]: 7500, [B]: 2500 } });
    expect(restarted.notes).toContain("the manifest or the live weights changed during a rollout: a new rollout starts from the live weights");
    const back = only(plan(desired({ [A]: 100, [B]: 0 }), live({ [A]: 7500, [B]: 2500 }, state)));
    expect(back.rollout).toMatchObject({ phase: "return", step: 1, steps: 1, status: "due" });
    expect(back.request.body?.backends).toEqual({ [A]: 100, [B]: 0 });
  });

  it("leaves a halted rollout alone until --retry-rollout; the halt writes the starting weights with the reason", () => {
    const halted: RolloutState = { from: { [A]: 100, [B]: 0 }, target: digest, step: 1, at: "2025-12-31T23:00:00.000Z", halted: "down" };
    const c = only(plan(desired(target), live({ [A]: 100, [B]: 0 }, halted)));
    expect(c.rollout).toMatchObject({ status: "halted", halted_reason: "down" });
    const retried = only(plan(desired(target), live({ [A]: 100, [B]: 0 }, halted), { retry: true }));
    expect(retried.rollout).toMatchObject({ phase: "step", step: 1, status: "due" });

    const state: RolloutState = { from: { [A]: 100, [B]: 0 }, target: digest, step: 1, at: "2025-12-31T23:00:00.000Z" };
    const step2 = only(plan(desired(target), live({ [A]: 7500, [B]: 2500 }, state)));
    const halt = buildRolloutHalt(step2, "HTTP 503", NOW);
    expect(halt.request.body?.backends).toEqual({ [A]: 100, [B]: 0 });
    expect(JSON.parse(halt.request.body?.metadata ?? "").edgeplan.rollout).toEqual({ ...state, at: "2026-01-01T00:00:00.000Z", halted: "HTTP 503" });
  });

  it("waits at a pause step for a person, whatever the time; once promoted, takes the step after the pause with no check", () => {
    const spec: RolloutSpec = { ...SPEC, max_step: 40, shares: [10, { pause: true }, 50, 100] };
    const state: RolloutState = { from: { [A]: 100, [B]: 0 }, target: digest, step: 1, at: "2025-12-31T23:00:00.000Z" };
    const paused = only(plan(desired(target, spec), live({ [A]: 9000, [B]: 1000 }, state)));
    expect(paused.rollout).toMatchObject({ phase: "step", step: 2, steps: 4, status: "paused", paused_reason: "pause step 2 of 4", next_due_at: null });
    expect(paused.notes).toEqual(['paused: pause step 2 of 4; run "edgeplan rollout promote web" to go on']);

    const promoted = only(plan(desired(target, spec), live({ [A]: 9000, [B]: 1000 }, { ...state, promoted: 1 })));
    expect(promoted.rollout).toMatchObject({ phase: "step", step: 3, steps: 4, status: "due", check: null });
    expect(promoted.request.body?.backends).toEqual({ [A]: 5000, [B]: 5000 });
    // The step written records where it is, without `promoted`: the next step has its check again.
    expect(JSON.parse(promoted.request.body?.metadata ?? "").edgeplan.rollout).toEqual({
      from: { [A]: 100, [B]: 0 },
      target: digest,
      step: 3,
      at: "2026-01-01T00:00:00.000Z",
    });

    // A pause the marker records (an inconclusive analysis) holds any step, until promote clears it.
    const held = only(plan(desired(target), live({ [A]: 7500, [B]: 2500 }, { ...state, paused: "inconclusive: error-rate: no data" })));
    expect(held.rollout).toMatchObject({ step: 2, status: "paused", paused_reason: "inconclusive: error-rate: no data" });
    const waived = only(plan(desired(target), live({ [A]: 7500, [B]: 2500 }, { ...state, promoted: 1 })));
    expect(waived.rollout).toMatchObject({ step: 2, status: "due", check: null });
  });

  it("is not a rollout for a create, for a change of metadata only, or when a side sends no traffic", () => {
    expect(only(plan(desired(target), null)).action).toBe("create");
    expect(only(plan({ ...desired(target), description: "x" }, live(target))).action).toBe("update");
    expect(only(plan(desired(target), live({ [A]: 0, [B]: 0 }))).action).toBe("update");
  });
});

describe("a halt whose rollback was not written", () => {
  const [A, B] = [hrId(1), hrId(2)];
  const target = { [A]: 0, [B]: 100 };
  const spec: RolloutSpec = { max_step: 50, shares: null, interval: "1m", interval_ms: 60_000, check: null, analysis: [] };
  const NOW = Date.parse("2026-01-01T00:00:00Z");

  /** The plan of `web` whose live weights are `live` and whose marker records a halt after `step`. */
  function planned(live: Record<string, number>, step: number, maxShift = DEFAULT_MAX_SHIFT) {
    const state: RolloutState = { from: { [A]: 100, [B]: 0 }, target: rolloutTargetDigest(target), step, at: "2025-12-31T23:59:00.000Z", halted: "HTTP 503" };
    const metadata = JSON.stringify({ edgeplan: { name: "web", stack: "default", rollout: state } });
    const plan = buildPlan(
      { weightedBackends: [{ ...desiredWb("web", { backends: target }), rollout: spec }], edgeRoutes: [] },
      { weightedBackends: [liveWb(1, { backends: live, metadata })], routes: [] },
      { stack: "default", prune: false, takeover: false, maxShift, now: NOW },
    );
    return { plan, change: plan.changes[0] as WeightedBackendChange, state };
  }

  it("is planned as the rollback on the step's weights (a step, or the last one being confirmed), the marker kept as it is", () => {
    for (const [live, step] of [[{ [A]: 5000, [B]: 5000 }, 1] as const, [target, 2] as const]) {
      const { plan, change, state } = planned(live, step);
      expect(change.rollout).toMatchObject({ phase: "halt", status: "due", halted_reason: "HTTP 503", due_at: "2026-01-01T00:00:00.000Z" });
      expect(change.request.body?.backends).toEqual({ [A]: 100, [B]: 0 });
      expect(JSON.parse(change.request.body?.metadata ?? "").edgeplan.rollout).toEqual(state);
      expect(checkPlan(plan)).toEqual([]);
    }
  });

  it("needs no --ack: a rollback is judged by the weights it returns to, not by the rollout's end state", () => {
    const { plan, change } = planned({ [A]: 5000, [B]: 5000 }, 1, 10);
    expect(change.rollout).toMatchObject({ phase: "halt", status: "due" });
    expect(plan.risks).toEqual([]);
  });

  it("is left halted, nothing written, on weights a person set (neither the step's nor the starting ones)", () => {
    const { change } = planned({ [A]: 7000, [B]: 3000 }, 1);
    expect(change.rollout).toMatchObject({ phase: "step", status: "halted" });
  });
});
