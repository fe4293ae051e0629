/**
 * The check the apply on merge runs against the pull request's record, for a rollout: a head commit that changed only
 * the rollout's steps, interval or analysis after the review is not the reviewed plan, and nothing is written.
 */
import { describe, expect, it } from "vitest";
import { reviewCheck, UnreviewedPlanError, type MergeReview } from "../../src/action/review.js";
import type { ActionRun } from "../../src/action/run.js";
import { buildPlan, DEFAULT_MAX_SHIFT } from "../../src/core/plan.js";
import { buildPlanRecord } from "../../src/core/plan-digest.js";
import { parseReviewedMarker, reviewedMarker } from "../../src/render/action.js";
import type { Plan } from "../../src/model/plan.js";
import type { RolloutMetric, RolloutSpec } from "../../src/model/state.js";
import { desiredWb, hrId, liveWb } from "../core/builders.js";

const [A, B] = [hrId(1), hrId(2)];
const METRIC: RolloutMetric = {
  name: "health",
  provider: { kind: "web", url: "https://status.example.com/ok", method: "GET", headers: { Authorization: "Bearer t0k3n" }, body: null, json_path: null, timeout_ms: 5000 },
  success: "result == 1",
  failure: null,
  initial_delay_ms: 0,
  interval_ms: 1000,
  count: 1,
  failure_limit: 0,
};
const SPEC: RolloutSpec = { max_step: 30, shares: null, interval: "5m", interval_ms: 300_000, check: null, analysis: [METRIC] };

function rolloutPlan(spec: Partial<RolloutSpec>): Plan {
  const live = liveWb(1, { backends: { [A]: 9000, [B]: 1000 }, metadata: JSON.stringify({ edgeplan: { name: "web", stack: "default" } }) });
  return buildPlan(
    { weightedBackends: [{ ...desiredWb("web", { backends: { [A]: 0, [B]: 10000 } }), rollout: { ...SPEC, ...spec } }], edgeRoutes: [] },
    { weightedBackends: [live], routes: [] },
    { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT, now: Date.parse("2026-01-01T00:00:00Z") },
  );
}

const HEAD = "0123456789abcdef0123456789abcdef01234567";

/**
 * The merge of pull request #7 at the head that was planned, whose comment records the plan `reviewed` (the record on
 * the comment's second line, as the action writes it), with no acknowledgement or acceptance.
 */
function check(reviewed: Plan): (plan: Plan) => void {
  const comment = `<!-- edgeplan:plan stack=default -->\n${reviewedMarker(buildPlanRecord(reviewed), [], { head: HEAD, after: 1, entries: [] })}`;
  const review = {
    issue: { number: 7 },
    head: HEAD,
    reviewed: parseReviewedMarker(comment),
    commands: { acks: [], accepted: [], ignored: [] },
  } as unknown as MergeReview;
  return reviewCheck(review, { stack: "default", inputs: { onDifference: "refuse" } } as unknown as ActionRun);
}

describe("the apply on merge of a rollout", () => {
  const reviewed = rolloutPlan({});
  const refused =
    "the plan at merge is not the plan reviewed in pull request #7: `weighted_backend.web` would now do something else than the reviewed plan showed. Nothing was written.";

  it("applies the reviewed rollout", () => {
    expect(() => check(reviewed)(rolloutPlan({}))).not.toThrow();
  });

  it.each([
    ["its steps", { max_step: 100 }],
    ["its steps: list", { shares: [100] }],
    ["its interval", { interval: "1s", interval_ms: 1000 }],
    ["its analysis URL", { analysis: [{ ...METRIC, provider: { ...METRIC.provider, url: "https://collector.example.net/" } as RolloutMetric["provider"] }] }],
    ["its analysis headers", { analysis: [{ ...METRIC, provider: { ...METRIC.provider, headers: { Authorization: "Bearer other" } } as RolloutMetric["provider"] }] }],
  ] as const)("refuses a head that changed only %s after the review", (_what, spec) => {
    const atMerge = rolloutPlan(spec as Partial<RolloutSpec>);
    expect(() => check(reviewed)(atMerge)).toThrow(UnreviewedPlanError);
    expect(() => check(reviewed)(atMerge)).toThrow(refused);
  });
});
