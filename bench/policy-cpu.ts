/**
 * Benchmark `policy-cpu`: 10 policies in CEL (docs/policies.md) judged over the plan of the `plan-read` fleet (5,000
 * weighted backends and 1,000 routes, 2 % of them changed), beside `buildPlan` of the same inputs in the same
 * process, as `diff-cpu` times it: what policies add to a plan, as a ratio. The policies cover both scopes, every
 * kind, comprehensions over a change and over the whole plan. Target: judging takes less time than the diff.
 */
import { buildPolicyResults, compilePolicyExpression, type Policy, type PolicyMatch } from "../src/core/policies.js";
import { buildPlan } from "../src/core/plan.js";
import type { PolicyLevel } from "../src/model/plan.js";
import { buildDiffInputs } from "./diff-cpu.js";
import { BENCH_STACK, type FleetSpec } from "./fleet.js";
import { median, round1, type Measurement, type Scenario } from "./measure.js";
import { PLAN_READ_SIZES } from "./plan-read.js";

export interface PolicyCpuSize {
  fleet: FleetSpec;
  /** Timed runs of each (the first is left out of the medians: it includes the compilation of the code). */
  runs: number;
}

export const POLICY_CPU_SIZES: { full: PolicyCpuSize; quick: PolicyCpuSize } = {
  full: { fleet: PLAN_READ_SIZES.full.fleet, runs: 21 },
  quick: { fleet: PLAN_READ_SIZES.quick.fleet, runs: 7 },
};

/** The 10 policies: as a team would write them, over every kind and both scopes. */
const RULES: Array<{ name: string; level: PolicyLevel; match: PolicyMatch; expression: string }> = [
  {
    name: "two-live",
    level: "ack",
    match: { kinds: ["weighted_backend"], actions: ["create", "update"] },
    expression: "change.after.backends.filter(k, change.after.backends[k] > 0).size() >= 2",
  },
  {
    name: "weights-bounded",
    level: "deny",
    match: { kinds: ["weighted_backend"], actions: ["create", "update"] },
    expression: "change.after.backends.all(k, change.after.backends[k] <= 10000)",
  },
  { name: "described", level: "warn", match: { kinds: ["weighted_backend"], actions: ["create", "update"] }, expression: 'change.after.description != ""' },
  {
    name: "team-set",
    level: "warn",
    match: { kinds: ["weighted_backend"], actions: ["create", "update"] },
    expression: 'type(change.after.metadata) != map || !has(change.after.metadata.team) || change.after.metadata.team != ""',
  },
  { name: "no-orphan-delete", level: "ack", match: { kinds: ["weighted_backend"], actions: ["delete"] }, expression: 'change.before.description != "keep"' },
  { name: "saml-reauth", level: "deny", match: { kinds: ["saml"], actions: ["replace"] }, expression: "change.after.force_authn || !change.after.enabled" },
  {
    name: "breaker-threshold",
    level: "ack",
    match: { kinds: ["circuit_breaker"], actions: ["replace"] },
    expression: "double(change.after.error_threshold_percentage) <= 0.5",
  },
  { name: "module-kept", level: "deny", match: { actions: ["delete"] }, expression: 'change.kind == "weighted_backend"' },
  { name: "few-deletes", level: "deny", match: { scope: "plan" }, expression: 'plan.changes.filter(c, c.action == "delete").size() <= 50' },
  { name: "small-plan", level: "warn", match: { scope: "plan" }, expression: 'plan.summary.total <= 1000 && plan.changes.exists(c, c.kind == "weighted_backend")' },
];

function compileRules(): Policy[] {
  return RULES.map(({ name, level, match, expression }) => {
    const compiled = compilePolicyExpression(expression, match.scope);
    if ("problem" in compiled) throw new Error(`policy-cpu: ${name}: ${compiled.problem.message}`);
    return { name, description: `${name} holds.`, level, match, program: compiled.program };
  });
}

/** The median of the runs after the first (all of them when there is one). */
const settled = (times: number[]): number => median(times.length > 1 ? times.slice(1) : times);

/** Times buildPlan and then the 10 policies over its plan, alternately, `runs` times each. */
export async function measurePolicyCpu(size: PolicyCpuSize): Promise<Measurement> {
  const { desired, live } = await buildDiffInputs(size.fleet);
  const policies = compileRules();
  const options = { stack: BENCH_STACK, prune: true, takeover: false, maxShift: 50 };
  const diff: number[] = [];
  const judge: number[] = [];
  let evaluated = 0;
  let violations = 0;
  let changes = 0;
  for (let i = 0; i < size.runs; i++) {
    let started = performance.now();
    const plan = buildPlan(desired, live, options);
    diff.push(performance.now() - started);
    started = performance.now();
    const judged = buildPolicyResults(policies, plan, null);
    judge.push(performance.now() - started);
    ({ evaluated } = judged);
    violations = judged.results.length;
    changes = plan.changes.length;
  }
  const wall = settled(judge);
  const diffMs = settled(diff);
  return {
    wall_ms: round1(wall),
    first_run_ms: round1(judge[0] ?? 0),
    diff_ms: round1(diffMs),
    vs_diff: Math.round((wall / diffMs) * 100) / 100,
    runs: size.runs,
    rules: policies.length,
    weighted_backends: desired.weightedBackends.length,
    changes,
    evaluated,
    violations,
    ok: wall < diffMs,
    target: "10 policies judged in less time than buildPlan of the same fleet (median)",
  };
}

export const policyCpuScenario: Scenario = {
  name: "policy-cpu",
  description: "10 CEL policies over the plan of the plan-read fleet, beside buildPlan of the same inputs",
  run: ({ quick }) => measurePolicyCpu(quick ? POLICY_CPU_SIZES.quick : POLICY_CPU_SIZES.full),
};
