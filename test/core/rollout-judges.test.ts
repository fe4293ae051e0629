/**
 * A rollout judged as any write: its risks, its policies and its review record read what it commits to (the end
 * state, and the pace and gates of every step to it), not only the step it writes now.
 */
import { describe, expect, it } from "vitest";
import { buildPlan, DEFAULT_MAX_SHIFT } from "../../src/core/plan.js";
import { checkPlan } from "../../src/core/plan-check.js";
import { buildPlanRecord, diffPlanRecords } from "../../src/core/plan-digest.js";
import { compilePolicyExpression, deniedResults, type Policy } from "../../src/core/policies.js";
import { reviewedMarker } from "../../src/render/action.js";
import type { Plan, WeightedBackendChange } from "../../src/model/plan.js";
import type { DesiredWeightedBackend, RolloutMetric, RolloutSpec, RolloutState } from "../../src/model/state.js";
import { rolloutTargetDigest } from "../../src/kinds/weighted-backend-rollout.js";
import { desiredWb, hrId, liveWb } from "./builders.js";

const [A, B] = [hrId(1), hrId(2)];
const NOW = Date.parse("2026-01-01T00:00:00Z");
const TOKEN = "s3cr3t-bearer-Qx7";
const METRIC: RolloutMetric = {
  name: "health",
  provider: {
    kind: "web",
    url: "https://status.example.com/ok",
    method: "GET",
    headers: { Authorization: `Bearer ${TOKEN}` },
    body: null,
    json_path: null,
    timeout_ms: 5000,
  },
  success: "result == 1",
  failure: null,
  initial_delay_ms: 0,
  interval_ms: 1000,
  count: 1,
  failure_limit: 0,
};
const SPEC: RolloutSpec = { max_step: 50, shares: null, interval: "5m", interval_ms: 300_000, check: null, analysis: [METRIC] };
const TARGET = { [A]: 0, [B]: 10000 };

function desired(spec: Partial<RolloutSpec> = {}): DesiredWeightedBackend {
  return { ...desiredWb("web", { backends: TARGET }), rollout: { ...SPEC, ...spec } };
}

function live(backends: Record<string, number>, rollout?: RolloutState) {
  return liveWb(1, { backends, metadata: JSON.stringify({ edgeplan: { name: "web", stack: "default", ...(rollout ? { rollout } : {}) } }) });
}

function plan(d: DesiredWeightedBackend, backends: Record<string, number>, extra: { policies?: Policy[]; rollout?: RolloutState; now?: number } = {}): Plan {
  return buildPlan(
    { weightedBackends: [d], edgeRoutes: [] },
    { weightedBackends: [live(backends, extra.rollout)], routes: [] },
    { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT, now: extra.now ?? NOW, ...(extra.policies ? { policies: extra.policies } : {}) },
  );
}

const rolloutOf = (p: Plan) => (p.changes[0] as WeightedBackendChange).rollout;

function deny(name: string, expression: string, actions: string[]): Policy {
  const compiled = compilePolicyExpression(expression, "change");
  if ("problem" in compiled) throw new Error(compiled.problem.message);
  return {
    name,
    description: "A split keeps at least two children with traffic.",
    level: "deny",
    match: { kinds: ["weighted_backend"], actions },
    program: compiled.program,
  };
}

describe("traffic-shift of a rollout", () => {
  it("is raised by a 90-point move whose one step moves it all (max_step 100)", () => {
    const p = plan(desired({ max_step: 100 }), { [A]: 9000, [B]: 1000 });
    expect(rolloutOf(p)).toMatchObject({ step: 1, steps: 1 });
    expect(p.risks).toEqual([
      {
        rule: "traffic-shift",
        addresses: ["weighted_backend.web"],
        message:
          `weighted_backend.web: the rollout moves traffic by more than 50 percentage points to its final weights, in a step of more than 50: ` +
          `${A} from 90% to 0%; ${B} from 10% to 100%. Lower the rollout's max_step (or the gaps of its steps:) to 50 points or less, or check the weights and apply with --ack traffic-shift.`,
      },
    ]);
  });

  it("is not raised when every step still to come is within --max-shift, and is when one is not", () => {
    expect(plan(desired(), { [A]: 9000, [B]: 1000 }).risks).toEqual([]);
    // A steps: list whose last gap (10% to 100% of a 90-point move) is 81 points.
    expect(plan(desired({ shares: [10, 100] }), { [A]: 9000, [B]: 1000 }).risks.map((r) => r.rule)).toEqual(["traffic-shift"]);
  });
});

describe("policies over a rollout", () => {
  const TWO_LIVE = "change.after.backends.filter(k, change.after.backends[k] > 0).size() >= 2";

  it("a rule over create and update judges the step and the end state: a rollout to one child is denied", () => {
    const p = plan(desired(), { [A]: 9000, [B]: 1000 }, { policies: [deny("two-live-children", TWO_LIVE, ["create", "update"])] });
    // The step itself writes 45/55: two live children.
    expect((p.changes[0] as WeightedBackendChange).after?.backends).toEqual({ [A]: 4500, [B]: 5500 });
    expect(p.policies).toEqual({
      rules: 1,
      evaluated: 1,
      passed: 0,
      results: [
        {
          rule: "two-live-children",
          level: "deny",
          address: "weighted_backend.web",
          message: "at the end state the rollout commits to (its final weights): A split keeps at least two children with traffic.",
          error: false,
        },
      ],
    });
    expect(deniedResults(p)).toHaveLength(1);
  });

  it("see the end state as change.final, and pass a rollout that keeps two children", () => {
    const onFinal = deny("final-two", "change.final.backends.filter(k, change.final.backends[k] > 0).size() >= 2", ["rollout"]);
    expect(plan(desired(), { [A]: 9000, [B]: 1000 }, { policies: [onFinal] }).policies?.results.map((r) => r.message)).toEqual([
      "A split keeps at least two children with traffic.",
    ]);
    const split = { ...desiredWb("web", { backends: { [A]: 1000, [B]: 9000 } }), rollout: SPEC };
    expect(plan(split, { [A]: 9000, [B]: 1000 }, { policies: [onFinal, deny("two", TWO_LIVE, ["update"])] }).policies).toMatchObject({ evaluated: 2, passed: 2 });
  });
});

describe("the review record of a rollout", () => {
  const reviewed = plan(desired(), { [A]: 9000, [B]: 1000 });
  const record = buildPlanRecord(reviewed);
  const changed = (d: DesiredWeightedBackend) => diffPlanRecords(record, buildPlanRecord(plan(d, { [A]: 9000, [B]: 1000 })));
  const withMetric = (provider: Partial<Extract<RolloutMetric["provider"], { kind: "web" }>>) =>
    desired({ analysis: [{ ...METRIC, provider: { ...(METRIC.provider as Extract<RolloutMetric["provider"], { kind: "web" }>), ...provider } }] });

  it("changes with the steps, the interval, the check and the analysis URL and headers", () => {
    const differs = { added: [], removed: [], changed: ["weighted_backend.web"] };
    expect(changed(desired({ max_step: 100 }))).toEqual(differs);
    expect(changed(desired({ shares: [50, 100] }))).toEqual(differs);
    expect(changed(desired({ interval: "1s", interval_ms: 1000 }))).toEqual(differs);
    expect(changed(desired({ check: { url: "https://evil.example.com/", expect_status: null, timeout_ms: 1000 } }))).toEqual(differs);
    expect(changed(withMetric({ url: "https://evil.example.com/collect" }))).toEqual(differs);
    expect(changed(withMetric({ headers: { Authorization: "Bearer other" } }))).toEqual(differs);
    expect(changed(desired())).toEqual({ added: [], removed: [], changed: [] });
  });

  it("stays the same when the rollout takes its next step, and holds no header value", () => {
    const state: RolloutState = { from: { [A]: 9000, [B]: 1000 }, target: rolloutTargetDigest(TARGET), step: 1, at: new Date(NOW).toISOString() };
    const next = plan(desired(), { [A]: 4500, [B]: 5500 }, { rollout: state, now: NOW + 600_000 });
    expect(rolloutOf(next)).toMatchObject({ step: 2, status: "due" });
    expect(buildPlanRecord(next)).toEqual(record);
    expect(reviewedMarker(record, [])).not.toContain(TOKEN);
  });
});

describe("a saved plan of a rollout", () => {
  it("is refused when the check or analysis before its step is not the rollout's own", () => {
    const state: RolloutState = { from: { [A]: 9000, [B]: 1000 }, target: rolloutTargetDigest(TARGET), step: 1, at: new Date(NOW).toISOString() };
    const saved = plan(desired(), { [A]: 4500, [B]: 5500 }, { rollout: state, now: NOW + 600_000 });
    expect(checkPlan(saved)).toEqual([]);
    const edited = JSON.parse(JSON.stringify(saved)) as Plan; // as read from its file
    const r = (edited.changes[0] as WeightedBackendChange).rollout;
    if (!r?.analysis?.[0]) throw new Error("the step has no analysis");
    r.analysis[0] = { ...r.analysis[0], provider: { ...METRIC.provider, url: "https://collector.example.net/" } as RolloutMetric["provider"] };
    expect(checkPlan(edited)).toEqual([{ address: "weighted_backend.web", what: "the check or analysis before this step is not the rollout's (rollout.gates)" }]);
  });
});
