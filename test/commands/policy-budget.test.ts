/**
 * Policies whose cost the data decides, in-process: a backtracking pattern over a description a pull request
 * writes, and a list built by concatenation over 200 changes. `policy test` ends within 2 s with each policy's
 * failure saying why; `plan` judges the pattern at once (the same judging over a plan of 200 changes, timed, is in
 * test/core/policies.test.ts); a pattern RE2 cannot run is refused when the policies are read.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { captureIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import { runPolicyTest } from "../../src/commands/policy-test.js";
import { CEL_BUDGET } from "../../src/model/cel-budget.js";

const tmp = mkdtempSync(path.join(tmpdir(), "edgeplan-policy-budget-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** 41 letters and a `!`: a backtracking engine tries 2^40 ways to split the letters before it gives up. */
const EVIL_DESCRIPTION = `${"a".repeat(41)}!`;
const CHANGES = 200;
/** Manifests of a plan: enough to judge, few enough to plan in a fraction of a second. */
const MANIFESTS = 3;

const POLICIES = `policies:
  - name: plain-description
    description: A description is words.
    level: deny
    match: {kinds: [weighted_backend], actions: [create, update]}
    expression: "change.after.description.matches('^([A-Za-z0-9]+ ?)*$')"
  - name: quadratic
    description: Nothing.
    level: warn
    expression: 'plan.changes.map(c, plan.changes + plan.changes + plan.changes + plan.changes + plan.changes + plan.changes + plan.changes + plan.changes).size() > 0'
`;

const REWRITE = "write it to read each list once and to build no list or string by concatenation (docs/policies.md, Budgets)";

/** A project folder with the policies and `MANIFESTS` weighted backends, the first with the evil description. */
function project(name: string, policies = POLICIES): string {
  const dir = path.join(tmp, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, "edgeplan.yaml"), policies);
  const docs = Array.from({ length: MANIFESTS }, (_, i) => {
    const description = i === 0 ? EVIL_DESCRIPTION : `Split ${i}`;
    return `kind: WeightedBackend\nname: w${i}\ndescription: ${JSON.stringify(description)}\nbackends:\n  bkdhr_${String(i).padStart(27, "0")}: 100\n`;
  });
  writeFileSync(path.join(dir, "m.yaml"), docs.join("---\n"));
  return dir;
}

async function timed<T>(f: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await f();
  return { value, ms: performance.now() - start };
}

describe("policies over budget", () => {
  it("plan: the pattern is judged at once, as the deny policy's violation", async () => {
    const dir = project("plan");
    const io = captureIO({ EDGEPLAN_LOCAL_DIR: path.join(dir, "state") }, dir);
    const { value: result, ms } = await timed(() => runPlan({ paths: ["m.yaml"], local: true, format: "json" }, io));
    expect(ms).toBeLessThan(2000);
    expect(result.exitCode).toBe(1);
    expect(result.plan?.policies?.results.map((r) => [r.rule, r.address, r.message])).toEqual([["plain-description", "weighted_backend.w0", "A description is words."]]);
    expect(io.err).toContain("  plain-description: weighted_backend.w0: A description is words.\n");
  });

  it("policy test: each ends within 2 s as a failure that says why", async () => {
    const dir = project("cases");
    mkdirSync(path.join(dir, "tests"));
    const change = (i: number) => ({ address: `weighted_backend.w${i}`, kind: "weighted_backend", action: "create", before: null, after: {} });
    const plan = { changes: Array.from({ length: CHANGES }, (_, i) => change(i)), summary: { create: CHANGES } };
    writeFileSync(
      path.join(dir, "tests", "evil.yaml"),
      JSON.stringify({
        change: { kind: "weighted_backend", action: "create", after: { description: EVIL_DESCRIPTION } },
        plan,
        expect: { "plain-description": "pass", quadratic: "pass" },
      }),
    );
    const io = captureIO({}, dir);
    const { value: code, ms } = await timed(() => runPolicyTest("tests", {}, io));
    expect(ms).toBeLessThan(2000);
    expect(code).toBe(1);
    expect(io.out).toBe(
      [
        "FAIL tests/evil.yaml",
        "  plain-description: expected pass, got fail (A description is words.)",
        `  quadratic: expected pass, got fail (the expression went over budget: one evaluation may take ${CEL_BUDGET.evaluationCost} steps and this one takes more; ${REWRITE})`,
        "1 case: 0 passed, 1 failed",
        "",
      ].join("\n"),
    );
  });

  it("a backreference is refused when the policies are read, at its file:line:col", async () => {
    const written = "policies:\n  - name: twice\n    description: x\n    level: warn\n    expression: 'change.address.matches(\"(a)\\\\1\")'\n";
    const dir = project("backref", written);
    await expect(runPlan({ paths: ["m.yaml"], local: true }, captureIO({}, dir))).rejects.toMatchObject({
      diagnostics: [
        {
          pos: { file: "edgeplan.yaml", line: 5, col: 41 },
          message:
            'policy twice: the regular expression "(a)\\\\1" is not RE2 syntax (invalid escape sequence: `\\1`); matches() takes RE2, which has no backreferences or lookaround (docs/policies.md); fix the expression (docs/policies.md lists what it may use)',
        },
      ],
    });
  });
});
