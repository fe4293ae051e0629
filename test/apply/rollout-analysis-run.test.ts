/** One run of apply's rollout steps with an analysis, measured by an analyzer of the test's own: go on, roll back, pause. */
import { describe, expect, it } from "vitest";
import type { Analyzer } from "../../src/apply/analysis.js";
import { prepareRolloutRun, type Checker } from "../../src/apply/rollout.js";
import type { Measurement } from "../../src/core/analysis.js";
import { buildPlan, DEFAULT_MAX_SHIFT } from "../../src/core/plan.js";
import { rolloutTargetDigest } from "../../src/kinds/weighted-backend-rollout.js";
import type { WeightedBackendChange } from "../../src/model/plan.js";
import type { RolloutMetric, RolloutSpec, RolloutState } from "../../src/model/state.js";
import { desiredWb, hrId, liveWb } from "../core/builders.js";

const [A, B] = [hrId(1), hrId(2)];
const METRIC: RolloutMetric = {
  name: "error-rate",
  provider: { kind: "prometheus", address: "https://prometheus.example.com", query: "sum(rate(errors[1m]))", timeout_ms: 1000 },
  success: "result < 0.01",
  failure: "result >= 0.05",
  initial_delay_ms: 0,
  interval_ms: 1000,
  count: 2,
  failure_limit: 0,
};
const SPEC: RolloutSpec = { max_step: 25, shares: null, interval: "1m", interval_ms: 60_000, check: null, analysis: [METRIC] };
const NOW = Date.parse("2026-01-01T00:00:00Z");
const target = { [A]: 0, [B]: 100 };
const AT = "2025-12-31T23:59:00.000Z";

/** The plan's change of `web` at step 3 of 4 (step 2 written a minute before NOW), due at NOW. */
function step3(extra: Partial<RolloutState> = {}): WeightedBackendChange {
  const state: RolloutState = { from: { [A]: 100, [B]: 0 }, target: rolloutTargetDigest(target), step: 2, at: AT, ...extra };
  const live = liveWb(1, { backends: { [A]: 5000, [B]: 5000 }, metadata: JSON.stringify({ edgeplan: { name: "web", stack: "default", rollout: state } }) });
  const plan = buildPlan(
    { weightedBackends: [{ ...desiredWb("web", { backends: target }), rollout: SPEC }], edgeRoutes: [] },
    { weightedBackends: [live], routes: [] },
    { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT, now: NOW },
  );
  return plan.changes[0] as WeightedBackendChange;
}

const ok: Checker = async () => ({ ok: true });
const reading = (value: string | null, verdict: Measurement["verdict"], why: string): Measurement => ({ metric: "error-rate", value, verdict, why });

/** An analyzer that answers `measured` and records what it was asked. */
function analyzer(measured: Measurement[]): { analyze: Analyzer; asked: Array<{ names: string[]; since: number }> } {
  const asked: Array<{ names: string[]; since: number }> = [];
  return {
    asked,
    analyze: async (metrics, options) => {
      asked.push({ names: metrics.map((m) => m.name), since: options.since });
      return [measured];
    },
  };
}

const marker = (c: WeightedBackendChange) => JSON.parse(c.request.body?.metadata ?? "").edgeplan.rollout as RolloutState;

describe("prepareRolloutRun with an analysis", () => {
  it("measures before the step, from the previous step's time, and sends it as planned when every measurement succeeds", async () => {
    expect(step3().rollout?.analysis).toEqual([METRIC]);
    const a = analyzer([reading("0.001", "success", "result < 0.01"), reading("0.002", "success", "result < 0.01")]);
    const run = await prepareRolloutRun([step3()], ok, () => NOW, undefined, { analyzer: a.analyze });
    expect(a.asked).toEqual([{ names: ["error-rate"], since: Date.parse(AT) }]);
    expect(run.changes).toEqual([step3()]);
    expect(run.halted).toEqual([]);
    expect(run.paused).toEqual([]);
    expect(run.analysis).toEqual([
      { address: "weighted_backend.web", step: 3, steps: 4, metric: "error-rate", value: "0.001", verdict: "success", why: "result < 0.01" },
      { address: "weighted_backend.web", step: 3, steps: 4, metric: "error-rate", value: "0.002", verdict: "success", why: "result < 0.01" },
    ]);
  });

  it("counts initial_delay from this process's write of the previous step when it was later than the time recorded", async () => {
    const a = analyzer([reading("0.001", "success", "result < 0.01"), reading("0.002", "success", "result < 0.01")]);
    const wrote = Date.parse(AT) + 20_000;
    await prepareRolloutRun([step3()], ok, () => NOW, undefined, { analyzer: a.analyze, writtenAt: new Map([["weighted_backend.web", wrote]]) });
    await prepareRolloutRun([step3()], ok, () => NOW, undefined, { analyzer: a.analyze, writtenAt: new Map([["weighted_backend.web", Date.parse(AT) - 1]]) });
    expect(a.asked.map((x) => x.since)).toEqual([wrote, Date.parse(AT)]);
  });

  it("rolls back past failure_limit: the starting weights in one write, the marker halted with the reason", async () => {
    const a = analyzer([reading("0.07", "failure", "result >= 0.05")]);
    const run = await prepareRolloutRun([step3()], ok, () => NOW + 1000, undefined, { analyzer: a.analyze });
    const reason = "analysis error-rate failed (0.07, result >= 0.05)";
    expect(run.halted).toEqual([{ address: "weighted_backend.web", name: "web", reason, weights: { [A]: 100, [B]: 0 } }]);
    const halt = run.changes[0] as WeightedBackendChange;
    expect(halt.rollout?.phase).toBe("halt");
    expect(halt.request.body?.backends).toEqual({ [A]: 100, [B]: 0 });
    expect(marker(halt)).toEqual({ from: { [A]: 100, [B]: 0 }, target: rolloutTargetDigest(target), step: 2, at: "2026-01-01T00:00:01.000Z", halted: reason });
  });

  it("pauses on no data: the live weights stay, the live state gets paused with the reason, nothing rolls back", async () => {
    const a = analyzer([reading(null, "inconclusive", "no data"), reading("0.001", "success", "result < 0.01")]);
    const run = await prepareRolloutRun([step3()], ok, () => NOW, undefined, { analyzer: a.analyze });
    expect(run.halted).toEqual([]);
    expect(run.paused).toEqual([{ address: "weighted_backend.web", name: "web", reason: "inconclusive: error-rate: no data" }]);
    const pause = run.changes[0] as WeightedBackendChange;
    expect(pause.rollout?.phase).toBe("pause");
    expect(pause.request.body?.backends).toEqual({ [A]: 5000, [B]: 5000 });
    expect(marker(pause)).toEqual({ from: { [A]: 100, [B]: 0 }, target: rolloutTargetDigest(target), step: 2, at: AT, paused: "inconclusive: error-rate: no data" });
  });

  it("takes a promoted step (promoted equal to the live step) with no check and no measurement", async () => {
    const a = analyzer([reading(null, "inconclusive", "no data")]);
    const checks: string[] = [];
    const checker: Checker = async (c) => {
      checks.push(c.url);
      return { ok: false, reason: "down" };
    };
    const promoted = step3({ promoted: 2 });
    const withCheck = {
      ...promoted,
      rollout: { ...(promoted.rollout as NonNullable<WeightedBackendChange["rollout"]>), check: { url: "https://s.example.com/", expect_status: null, timeout_ms: 1000 } },
    };
    const run = await prepareRolloutRun([withCheck], checker, () => NOW, undefined, { analyzer: a.analyze });
    expect(run.changes).toEqual([withCheck]);
    expect(a.asked).toEqual([]);
    expect(checks).toEqual([]);
    // A promote of an earlier step waives nothing now.
    const stale = await prepareRolloutRun([step3({ promoted: 1 })], ok, () => NOW, undefined, { analyzer: a.analyze });
    expect(stale.paused).toHaveLength(1);
  });
});
