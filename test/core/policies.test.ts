/**
 * Policies judged over plans built by `buildPlan`: which changes each one sees, what a violation at each level
 * becomes (a result, a risk), evaluation errors as results, and `policy test`'s verdicts over one case.
 */
import { describe, expect, it } from "vitest";
import { buildPolicyResults, compilePolicyExpression, deniedResults, judgeCase, withPolicies, type Policy, type PolicyMatch } from "../../src/core/policies.js";
import { CEL_BUDGET } from "../../src/model/cel-budget.js";
import type { PolicyLevel } from "../../src/model/plan.js";
import { desiredWb, hrId, liveWb, markerMetadata, plan } from "./builders.js";

function policy(name: string, level: PolicyLevel, expression: string, match: PolicyMatch = {}): Policy {
  const compiled = compilePolicyExpression(expression, match.scope);
  if ("problem" in compiled) throw new Error(compiled.problem.message);
  return { name, description: `${name} holds.`, level, match, program: compiled.program };
}

const TWO_LIVE = "change.after.backends.filter(k, change.after.backends[k] > 0).size() >= 2";
const owned = (n: number, name: string, backends: Record<string, number>) => liveWb(n, { metadata: markerMetadata("default", name), backends });

/** A create of `one` (one child) and an update of `two` (two children with traffic). */
function twoChanges(policies: Policy[]) {
  return plan(
    { wbs: [desiredWb("one", { backends: { [hrId(1)]: 100 } }), desiredWb("two", { backends: { [hrId(1)]: 50, [hrId(2)]: 50 } })] },
    { wbs: [owned(1, "two", { [hrId(1)]: 100, [hrId(2)]: 0 })] },
    { policies },
  );
}

describe("policies over a plan", () => {
  it("judge each matching change, list only violations, and count the passes", () => {
    const p = twoChanges([
      policy("two-live", "warn", TWO_LIVE, { kinds: ["weighted_backend"] }),
      policy("creates-only", "warn", 'change.action == "create"', { actions: ["update"] }),
    ]);
    expect(p.policies).toEqual({
      rules: 2,
      evaluated: 3,
      passed: 1,
      results: [
        { rule: "creates-only", level: "warn", address: "weighted_backend.two", message: "creates-only holds.", error: false },
        { rule: "two-live", level: "warn", address: "weighted_backend.one", message: "two-live holds.", error: false },
      ],
    });
    expect(p.risks).toEqual([]);
  });

  it("make an ack violation a risk named by the policy, and a deny violation a denial", () => {
    const p = twoChanges([policy("two-live", "ack", TWO_LIVE), policy("no-creates", "deny", 'change.action != "create"')]);
    expect(p.risks).toEqual([
      {
        rule: "two-live",
        addresses: ["weighted_backend.one"],
        message: "weighted_backend.one: two-live holds. Apply with --ack two-live if that is intended.",
      },
    ]);
    expect(deniedResults(p).map((r) => [r.rule, r.address])).toEqual([["no-creates", "weighted_backend.one"]]);
    // Levels sort deny first.
    expect(p.policies?.results.map((r) => r.level)).toEqual(["deny", "ack"]);
  });

  it("report an evaluation error as that policy's violation, never a throw, and reach no prototype", () => {
    const p = twoChanges([policy("proto", "ack", "change.constructor == null"), policy("missing", "warn", "change.after.nothing > 1")]);
    expect(p.policies?.results).toEqual([
      { rule: "proto", level: "ack", address: "weighted_backend.one", message: "the expression could not be evaluated: No such key: constructor", error: true },
      { rule: "proto", level: "ack", address: "weighted_backend.two", message: "the expression could not be evaluated: No such key: constructor", error: true },
      { rule: "missing", level: "warn", address: "weighted_backend.one", message: "the expression could not be evaluated: No such key: nothing", error: true },
      { rule: "missing", level: "warn", address: "weighted_backend.two", message: "the expression could not be evaluated: No such key: nothing", error: true },
    ]);
  });

  it("judge a policy over the whole plan once, and environments only when the plan has one", () => {
    const policies = [policy("small", "deny", "plan.summary.total <= 1", { scope: "plan" }), policy("prod", "deny", "false", { environments: ["production"] })];
    const p = twoChanges(policies);
    expect(p.policies?.results).toEqual([{ rule: "small", level: "deny", address: null, message: "small holds.", error: false }]);
    expect(p.policies?.evaluated).toBe(1);
    const prod = withPolicies(p, policies, { name: "production", vars: {} });
    expect(prod.policies?.results.map((r) => [r.rule, r.address])).toEqual([
      ["prod", "weighted_backend.one"],
      ["prod", "weighted_backend.two"],
      ["small", null],
    ]);
    expect(buildPolicyResults(policies, p, { name: "staging", vars: {} }).evaluated).toBe(1);
  });

  it("replace the policies and policy risks a plan carries with what the policies say now", () => {
    const p = twoChanges([]);
    const forged = { ...p, risks: [{ rule: "two-live", addresses: [], message: "forged" }], policies: { rules: 1, evaluated: 9, passed: 9, results: [] } };
    const judged = withPolicies(forged, [policy("two-live", "ack", TWO_LIVE)], null);
    expect(judged.risks.map((r) => r.message)).toEqual(["weighted_backend.one: two-live holds. Apply with --ack two-live if that is intended."]);
    expect(judged.policies?.evaluated).toBe(2);
    expect(withPolicies(forged, undefined, null)).not.toHaveProperty("policies");
  });
});

describe("policies whose cost the data decides", () => {
  const REWRITE = "write it to read each list once and to build no list or string by concatenation (docs/policies.md, Budgets)";

  it("end within 2 s over 200 changes, each as its policy's violation (a backtracking pattern, a list built by concatenation)", () => {
    const wbs = Array.from({ length: 200 }, (_, i) => desiredWb(`w${i}`, { description: i === 7 ? `${"a".repeat(41)}!` : `Split ${i}`, backends: { [hrId(1)]: 100 } }));
    const policies = [
      policy("plain", "deny", "change.after.description.matches('^([A-Za-z0-9]+ ?)*$')"),
      policy("quadratic", "warn", `plan.changes.map(c, plan.changes${" + plan.changes".repeat(7)}).size() > 0`),
    ];
    const start = performance.now();
    const p = plan({ wbs }, {}, { policies });
    expect(performance.now() - start).toBeLessThan(2000);
    const quadratic = p.policies?.results.filter((r) => r.rule === "quadratic") ?? [];
    const once = `the expression went over budget: one evaluation may take ${CEL_BUDGET.evaluationCost} steps and this one takes more; ${REWRITE}`;
    // Each evaluation goes over its own budget until the policy's budget over the plan is spent: the rest is not run.
    expect(quadratic.slice(0, -1).map((r) => r.message)).toEqual(Array(quadratic.length - 1).fill(once));
    expect(quadratic.at(-1)).toMatchObject({
      level: "warn",
      message: `the expression went over budget: its evaluations over this plan took more than ${CEL_BUDGET.meterCost} steps; ${REWRITE}; the policy's other checks of this plan were not made`,
      error: true,
    });
    expect(quadratic.length).toBe(5);
    expect(deniedResults(p).map((r) => [r.rule, r.address, r.message])).toEqual([["plain", "weighted_backend.w7", "plain holds."]]);
    expect(p.policies?.evaluated).toBe(200 + 5);
  });
});

describe("judgeCase", () => {
  it("gives pass, fail (with the message) or skip for each policy", () => {
    const policies = [policy("two-live", "deny", TWO_LIVE, { kinds: ["weighted_backend"] }), policy("saml", "deny", "change.after.force_authn", { kinds: ["saml"] })];
    const verdicts = judgeCase(policies, {
      change: { address: "weighted_backend.x", kind: "weighted_backend", action: "update", before: null, after: { backends: { a: 1 } } },
      env: null,
    });
    expect(Object.fromEntries(verdicts)).toEqual({ "two-live": { verdict: "fail", message: "two-live holds." }, saml: { verdict: "skip" } });
  });

  it("judges only the policies over the whole plan when a case gives a plan and no change", () => {
    const policies = [policy("few-deletes", "deny", "plan.summary.delete <= 1", { scope: "plan" }), policy("two-live", "deny", TWO_LIVE)];
    const plan = { changes: [], summary: { delete: 2 } };
    expect(Object.fromEntries(judgeCase(policies, { plan, env: null }))).toEqual({
      "few-deletes": { verdict: "fail", message: "few-deletes holds." },
      "two-live": { verdict: "skip" },
    });
    const one = { address: "weighted_backend.x", kind: "weighted_backend", action: "delete", before: null, after: null };
    expect(judgeCase(policies, { change: one, env: null }).get("few-deletes")).toEqual({ verdict: "pass" });
  });
});
