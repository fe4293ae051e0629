/**
 * Policies: rules a team writes in CEL over a plan (docs/policies.md). Each policy's expression says what must hold
 * for each change it matches (or once for the whole plan, `match.scope: plan`); a false expression, or one that
 * cannot be evaluated, is a violation at the policy's level: `warn` is shown, `ack` joins the plan's risks (`--ack
 * NAME`), `deny` refuses the plan. Plan and apply (a saved plan included) compute them here from the changes. Pure.
 */
import { celValue, compileCel, type CelProblem, type CelProgram, type CelVariables } from "../model/cel.js";
import { CelMeter } from "../model/cel-budget.js";
import { compareText } from "../model/canonical.js";
import type { Change, Plan, PlanPolicies, PlanSummary, PolicyLevel, PolicyResult, Risk } from "../model/plan.js";
import { POLICY_LEVELS, RISK_RULES } from "../model/plan.js";
import { jsonEqual } from "../model/json-equal.js";
import { changeWriteOf } from "./change-write.js";
import { buildSummary } from "./summary.js";

/** Which changes a policy judges; an absent list matches everything. `scope: plan` judges the plan once instead. */
export interface PolicyMatch {
  kinds?: readonly string[];
  actions?: readonly string[];
  /** Never matches when the plan has no environment. */
  environments?: readonly string[];
  scope?: "change" | "plan";
}

/** A policy as the project file declares it, its expression compiled. */
export interface Policy {
  name: string;
  description: string;
  level: PolicyLevel;
  match: PolicyMatch;
  program: CelProgram;
}

/** The environment a plan is made for, as policies see it; null when the project defines none. */
export type PolicyEnv = { name: string; vars: Readonly<Record<string, string>> } | null;

/** The variables of a policy over each change, and of one over the whole plan (no `change`). */
const CHANGE_VARIABLES: CelVariables = { change: "map", plan: "map", env: "dyn" };
const PLAN_VARIABLES: CelVariables = { plan: "map", env: "dyn" };

/**
 * Compiles a policy's expression for its scope: a policy over the whole plan may not name `change`. A problem is at
 * offsets into the expression (see `compileCel`).
 */
export function compilePolicyExpression(source: string, scope: PolicyMatch["scope"]): { program: CelProgram } | { problem: CelProblem } {
  return compileCel(source, scope === "plan" ? PLAN_VARIABLES : CHANGE_VARIABLES);
}

/**
 * A change as policies see it: the fields the plan shows, and `final`, what it commits to (`after` for a plain
 * change, a rollout's end state for a rollout step), numbers as CEL values.
 */
export function policyChangeOf(change: Change): Record<string, unknown> {
  const { address, kind, action, before, after } = change;
  return celValue({ address, kind, action, before, after, final: changeWriteOf(change).end }) as Record<string, unknown>;
}

/**
 * A rollout is an update made in steps, so a policy over updates judges it; it is judged by what this step writes
 * (`after`) and by the end state it commits to (`after` set to `final`): a rule written for plain changes sees the
 * end state as it would see the same change made at once.
 */
function actionMatches(actions: readonly string[], action: string): boolean {
  return actions.includes(action) || (action === "rollout" && actions.includes("update"));
}

/** The `plan` variable: every change as `policyChangeOf` gives it, and the summary. */
export function policyPlanOf(changes: readonly Record<string, unknown>[], summary: PlanSummary): Record<string, unknown> {
  return { changes, summary: celValue(summary) };
}

function matches(match: PolicyMatch, change: Pick<Change, "kind" | "action">, env: PolicyEnv): boolean {
  if (match.kinds && !match.kinds.includes(change.kind)) return false;
  if (match.actions && !actionMatches(match.actions, change.action)) return false;
  return environmentMatches(match, env);
}

function environmentMatches(match: PolicyMatch, env: PolicyEnv): boolean {
  if (!match.environments) return true;
  return env !== null && match.environments.includes(env.name);
}

/**
 * The result of one evaluation on `meter` (the policy's over the plan), or null when the expression held; `what`
 * names the state judged when it is not the change as shown. Over its budget is a violation that says so; once the
 * meter is spent, the policy's other checks of the plan are not made.
 */
function judge(policy: Policy, address: string | null, vars: Record<string, unknown>, meter: CelMeter, what = ""): PolicyResult | null {
  const outcome = policy.program.run(vars, meter);
  if ("value" in outcome && outcome.value) return null;
  const base = { rule: policy.name, level: policy.level, address };
  if ("error" in outcome && outcome.overBudget) {
    const rest = meter.exhausted ? "; the policy's other checks of this plan were not made" : "";
    return { ...base, message: `${what}the expression went ${outcome.error}${rest}`, error: true };
  }
  if ("error" in outcome) return { ...base, message: `${what}the expression could not be evaluated: ${outcome.error}`, error: true };
  return { ...base, message: `${what}${policy.description}`, error: false };
}

/**
 * The result of a policy over one change: the change as it is, then, when it commits to something else than it
 * writes now (a rollout step), the change with `after` set to its end state. One result at most: the first violation.
 */
function judgeChange(
  policy: Policy,
  address: string | null,
  change: Record<string, unknown>,
  vars: { plan: unknown; env: unknown },
  endDiffers: boolean,
  meter: CelMeter,
): PolicyResult | null {
  const now = judge(policy, address, { ...vars, change }, meter);
  if (now || !endDiffers || meter.exhausted) return now;
  return judge(policy, address, { ...vars, change: { ...change, after: change.final } }, meter, "at the end state the rollout commits to (its final weights): ");
}

/**
 * Judges every policy over the changes (inventory writes are edgeplan's bookkeeping: no policy sees them) and the
 * plan. An evaluation error is that policy's violation for that change, never a throw. Deterministic: results are
 * sorted by level (deny, ack, warn), rule, then address.
 */
export function buildPolicyResults(policies: readonly Policy[], plan: Pick<Plan, "changes" | "summary">, env: PolicyEnv): PlanPolicies {
  const changes = plan.changes.filter((c) => c.kind !== "inventory");
  const values = changes.map(policyChangeOf);
  const endDiffers = changes.map((c) => !jsonEqual(changeWriteOf(c).end, c.after));
  const planValue = policyPlanOf(values, plan.summary);
  const envValue = env === null ? null : celValue(env);
  const results: PolicyResult[] = [];
  let evaluated = 0;
  for (const policy of policies) {
    // One meter per policy over the plan: the number of changes cannot multiply what one evaluation may cost.
    const meter = new CelMeter();
    if (policy.match.scope === "plan") {
      if (!environmentMatches(policy.match, env)) continue;
      evaluated++;
      const result = judge(policy, null, { plan: planValue, env: envValue }, meter);
      if (result) results.push(result);
      continue;
    }
    for (const [i, change] of changes.entries()) {
      if (!matches(policy.match, change, env) || meter.exhausted) continue;
      evaluated++;
      const result = judgeChange(policy, change.address, values[i] as Record<string, unknown>, { plan: planValue, env: envValue }, endDiffers[i] as boolean, meter);
      if (result) results.push(result);
    }
  }
  const level = (l: PolicyLevel): number => POLICY_LEVELS.indexOf(l);
  results.sort((a, b) => level(a.level) - level(b.level) || compareText(a.rule, b.rule) || compareText(a.address ?? "", b.address ?? ""));
  return { rules: policies.length, evaluated, passed: evaluated - results.length, results };
}

/** How many violations a risk's message names; the others are counted (the policies' results list them all). */
const RISK_NAMES = 10;

/** The risks of the `ack` results: one per policy, naming every change it found, acknowledged with `--ack NAME`. */
export function buildPolicyRisks(results: readonly PolicyResult[]): Risk[] {
  const byRule = new Map<string, PolicyResult[]>();
  for (const r of results) {
    if (r.level !== "ack") continue;
    const found = byRule.get(r.rule) ?? [];
    if (found.length === 0) byRule.set(r.rule, found);
    found.push(r);
  }
  return [...byRule].map(([rule, found]) => {
    const named = found.slice(0, RISK_NAMES).map((r) => `${r.address ?? "the plan"}: ${r.message.replace(/\.$/, "")}`);
    const more = found.length > RISK_NAMES ? `; and ${found.length - RISK_NAMES} more` : "";
    return {
      rule,
      addresses: found.flatMap((r) => (r.address === null ? [] : [r.address])),
      message: `${named.join("; ")}${more}. Apply with --ack ${rule} if that is intended.`,
    };
  });
}

/** The `deny` results: a plan that has any is refused by plan (exit 1) and by apply, whatever is acknowledged. */
export function deniedResults(plan: Pick<Plan, "policies">): PolicyResult[] {
  return plan.policies?.results.filter((r) => r.level === "deny") ?? [];
}

/**
 * The plan with its policies judged: `policies` set, and the `ack` violations added to its risks (after the
 * built-in rules, which keep their order). A plan's `policies` and policy risks from elsewhere (a saved file) are
 * replaced, never kept. Without policies, the plan is returned without `policies`.
 */
export function withPolicies(plan: Plan, policies: readonly Policy[] | undefined, env: PolicyEnv): Plan {
  const { policies: _, ...rest } = plan;
  const builtIn = plan.risks.filter((r) => (RISK_RULES as readonly string[]).includes(r.rule));
  if (!policies || policies.length === 0) return { ...rest, risks: builtIn };
  const judged = buildPolicyResults(policies, plan, env);
  return { ...rest, risks: [...builtIn, ...buildPolicyRisks(judged.results)], policies: judged };
}

/** What became of one policy in a `policy test` case: it held, it did not (or could not be evaluated), or it did not match. */
export type PolicyVerdict = "pass" | "fail" | "skip";

/**
 * The input of one `policy test` case: a change, the plan around it, or both, and the environment. A case without a
 * change judges only the policies over the whole plan.
 */
export interface PolicyCaseInput {
  /** `final` (what the change commits to) is `after` when absent. */
  change?: { address: string; kind: string; action: string; before: unknown; after: unknown; final?: unknown };
  /** Default: a plan of that one change. */
  plan?: { changes: unknown[]; summary: Record<string, number> };
  env: PolicyEnv;
}

/**
 * Judges every policy over one case, as plan would over its change: a policy whose `match` leaves the change (or,
 * over the whole plan, the environment) out is `skip`. A failure carries its message (the description, or the
 * evaluation error).
 */
export function judgeCase(policies: readonly Policy[], input: PolicyCaseInput): Map<string, { verdict: PolicyVerdict; message?: string }> {
  const given = input.change;
  const change = celValue(given ? { ...given, final: given.final === undefined ? given.after : given.final } : given) as Record<string, unknown>;
  const plan = input.plan
    ? { changes: celValue(input.plan.changes), summary: celValue(input.plan.summary) }
    : policyPlanOf(given ? [change] : [], buildSummary(given ? [given as Pick<Change, "kind" | "action">] : [], []));
  const env = input.env === null ? null : celValue(input.env);
  const verdicts = new Map<string, { verdict: PolicyVerdict; message?: string }>();
  for (const policy of policies) {
    const plansOnly = policy.match.scope === "plan";
    const applies = plansOnly
      ? environmentMatches(policy.match, input.env)
      : given !== undefined && matches(policy.match, given as Pick<Change, "kind" | "action">, input.env);
    if (!applies) {
      verdicts.set(policy.name, { verdict: "skip" });
      continue;
    }
    const meter = new CelMeter();
    const result = plansOnly
      ? judge(policy, null, { plan, env }, meter)
      : judgeChange(policy, given?.address ?? null, change, { plan, env }, given?.final !== undefined && !jsonEqual(given.final, given.after), meter);
    verdicts.set(policy.name, result ? { verdict: "fail", message: result.message } : { verdict: "pass" });
  }
  return verdicts;
}
