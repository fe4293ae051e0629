/**
 * Policies end to end: the built CLI against the real server (one for the file), a project file with one policy of
 * each level, and what a user sees: the results in text, JSON and Markdown, exit codes, `--ack NAME`, a deny that
 * nothing lifts, a saved plan whose results were edited (apply computes them again), a policy that does not compile,
 * and `edgeplan policy test`.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PlanSchema } from "../../src/model/plan-schema.js";
import { closeWorlds, HR1, HR2, startWorld, wbYaml, type World } from "../apply/e2e.js";
import { REPO_ROOT, runCliIn } from "../helpers/server.js";

afterAll(closeWorlds);

const POLICIES = `policies:
  - name: described
    description: Every weighted backend says what it is for.
    level: warn
    match: {kinds: [weighted_backend], actions: [create, update]}
    expression: 'change.after.description != ""'
  - name: two-live-children
    description: A split keeps at least two children with traffic.
    level: ack
    match: {kinds: [weighted_backend], actions: [create, update]}
    expression: 'change.after.backends.filter(k, change.after.backends[k] > 0).size() >= 2'
  - name: no-deletes
    description: Nothing is deleted by this project.
    level: deny
    match: {actions: [delete]}
    expression: 'false'
`;

let w: World;
beforeAll(async () => {
  w = await startWorld();
  writeFileSync(join(w.dir, "edgeplan.yaml"), POLICIES);
});

/** Manifests of one weighted backend `a` with these weights and description. */
function one(backends: Record<string, number>, description = "A"): void {
  w.manifests({ "a.yaml": wbYaml("a", backends, { description }) });
}

describe("policies (built CLI, real server)", () => {
  it("warn: shown in text, JSON and Markdown; plan and apply go on", async () => {
    one({ [HR1]: 5000, [HR2]: 5000 }, "");
    const text = await w.cli(["plan", "m"]);
    expect(text.code).toBe(0);
    expect(text.stdout.split("\n\n")[0]).toBe(
      ["Policies: 3 rules, 2 checks: 1 passed, 1 failed (warn 1).", "  x described (warn: a warning): weighted_backend.a: Every weighted backend says what it is for."].join(
        "\n",
      ),
    );
    const json = await w.cli(["plan", "m", "--format", "json"]);
    expect(json.code).toBe(0);
    expect(PlanSchema.parse(JSON.parse(json.stdout)).policies).toEqual({
      rules: 3,
      evaluated: 2,
      passed: 1,
      results: [{ rule: "described", level: "warn", address: "weighted_backend.a", message: "Every weighted backend says what it is for.", error: false }],
    });
    const md = await w.cli(["plan", "m", "--format", "markdown"]);
    expect(md.stdout).toContain(
      [
        "#### Policies",
        "",
        "Policies: 3 rules, 2 checks: 1 passed, 1 failed (warn 1).",
        "",
        "- **`described`** (warn: a warning) on `weighted_backend.a`: Every weighted backend says what it is for.",
        "",
      ].join("\n"),
    );
    const from = w.log().length;
    expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
    expect(w.changeWrites(from).map((l) => l.method)).toEqual(["POST"]);
  });

  it("ack: a risk apply refuses without --ack NAME and sends with it", async () => {
    one({ [HR1]: 10000, [HR2]: 0 });
    const plan = await w.cli(["plan", "m"]);
    expect(plan.code).toBe(0);
    expect(plan.stdout.split("\n\n").slice(0, 2)).toEqual([
      [
        "Risks: apply needs --ack RULE for each rule below (or --force):",
        "  ! two-live-children: weighted_backend.a: A split keeps at least two children with traffic. Apply with --ack two-live-children if that is intended.",
      ].join("\n"),
      [
        "Policies: 3 rules, 2 checks: 1 passed, 1 failed (ack 1).",
        "  x two-live-children (ack: apply needs --ack two-live-children): weighted_backend.a: A split keeps at least two children with traffic.",
      ].join("\n"),
    ]);
    const md = await w.cli(["plan", "m", "--format", "markdown"]);
    expect(md.stdout).toContain(
      "- **`two-live-children`** (ack: apply needs --ack `two-live-children`) on `weighted_backend.a`: A split keeps at least two children with traffic.\n",
    );

    const from = w.log().length;
    const refused = await w.cli(["apply", "m", "--auto-approve"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      [
        "edgeplan: the plan has 1 risk that must be acknowledged before it is applied:",
        "  two-live-children (--ack two-live-children): weighted_backend.a: A split keeps at least two children with traffic. Apply with --ack two-live-children if that is intended.",
        "No change was sent. If the plan is what you want, apply it with --ack two-live-children (or --force to acknowledge every risk).",
        "",
      ].join("\n"),
    );
    expect(w.changeWrites(from)).toEqual([]);
    const unknown = await w.cli(["apply", "m", "--auto-approve", "--ack", "two-live"]);
    expect(unknown.stderr).toBe(
      'edgeplan: --ack: unknown rule "two-live"; the rules are auth-removal, traffic-shift, no-traffic, mass-delete, and the policies described, two-live-children, no-deletes\n',
    );
    expect(unknown.code).toBe(1);

    const applied = await w.cli(["apply", "m", "--auto-approve", "--ack", "two-live-children"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect((await w.owned()).get("a")?.backends).toEqual({ [HR1]: 10000, [HR2]: 0 });
  });

  it("ack: apply of a saved plan whose results were edited out computes them again and refuses", async () => {
    one({ [HR1]: 10000 });
    expect((await w.cli(["plan", "m", "--out", "saved.json"])).code).toBe(0);
    const file = join(w.dir, "saved.json");
    const saved = JSON.parse(readFileSync(file, "utf8"));
    expect(saved.policies.results.map((r: { rule: string }) => r.rule)).toEqual(["two-live-children"]);
    writeFileSync(file, JSON.stringify({ ...saved, risks: [], policies: { rules: 3, evaluated: 1, passed: 1, results: [] } }));
    // show judges the changes as apply does, with the project's policies.
    const shown = await w.cli(["show", "saved.json"]);
    expect(shown.stdout).toContain("Policies: 3 rules, 2 checks: 1 passed, 1 failed (ack 1).\n");

    const from = w.log().length;
    const refused = await w.cli(["apply", "--plan", "saved.json", "--auto-approve"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("edgeplan: the plan has 1 risk that must be acknowledged before it is applied:\n  two-live-children (--ack two-live-children)");
    expect(w.changeWrites(from)).toEqual([]);
  });

  it("deny: plan exits 1 and saves nothing; apply refuses whatever is acknowledged", async () => {
    w.manifests({ "b.yaml": wbYaml("b", { [HR1]: 1, [HR2]: 1 }, { description: "B" }) });
    const text = await w.cli(["plan", "m", "--prune", "--out", "denied.json"]);
    expect(text.code).toBe(1);
    expect(text.stdout.split("\n\n")[0]).toBe(
      [
        "Policies: 3 rules, 3 checks: 2 passed, 1 failed (deny 1).",
        "  x no-deletes (deny: the plan cannot be applied): weighted_backend.a: Nothing is deleted by this project.",
      ].join("\n"),
    );
    expect(text.stderr).toBe(
      [
        "edgeplan: the plan has 1 violation of policies of level deny:",
        "  no-deletes: weighted_backend.a: Nothing is deleted by this project.",
        "The plan was not saved: the plan is denied by no-deletes. Change the manifests so that it holds (--ack and --force do not lift a deny), then plan again.",
        "",
      ].join("\n"),
    );
    expect(() => readFileSync(join(w.dir, "denied.json"))).toThrow();
    const json = await w.cli(["plan", "m", "--prune", "--format", "json"]);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout).policies.results).toEqual([
      { rule: "no-deletes", level: "deny", address: "weighted_backend.a", message: "Nothing is deleted by this project.", error: false },
    ]);
    const md = await w.cli(["plan", "m", "--prune", "--format", "markdown"]);
    expect(md.code).toBe(1);
    expect(md.stdout).toContain("- **`no-deletes`** (deny: the plan cannot be applied) on `weighted_backend.a`: Nothing is deleted by this project.\n");

    const from = w.log().length;
    const apply = await w.cli(["apply", "m", "--prune", "--auto-approve", "--force"]);
    expect(apply.code).toBe(1);
    expect(apply.stderr).toContain(
      "edgeplan: the plan has 1 violation of policies of level deny:\n  no-deletes: weighted_backend.a: Nothing is deleted by this project.\nNo change was sent: the plan is denied by no-deletes.",
    );
    expect(w.changeWrites(from)).toEqual([]);
    expect([...(await w.owned()).keys()]).toEqual(["a"]);
    // Without the delete, the same manifests pass.
    expect((await w.cli(["plan", "m"])).code).toBe(0);
  });

  it("a policy that does not compile stops every command at its file:line:col", async () => {
    writeFileSync(join(w.dir, "bad.yaml"), "policies:\n  - name: typo\n    description: D.\n    level: warn\n    expression: 'change.after.backends.size() > \"1\"'\n");
    const from = w.log().length;
    const plan = await w.cli(["plan", "m", "--config", "bad.yaml"]);
    expect(plan.code).toBe(1);
    expect(plan.stderr).toBe(
      [
        "bad.yaml:5:18: policy typo: no such overload: int > string; fix the expression (docs/policies.md lists what it may use)",
        "edgeplan: 1 error in bad.yaml; nothing was sent to the API",
        "",
      ].join("\n"),
    );
    expect(w.log(from)).toEqual([]);
  });
});

describe("edgeplan policy test", () => {
  const examples = join(REPO_ROOT, "examples", "policies");

  it("passes the examples' cases", async () => {
    const run = await runCliIn(examples, ["policy", "test", "tests"]);
    expect(run.stderr).toBe("");
    expect(run.stdout).toBe(
      [
        "ok   tests/breaker-whole.yaml",
        "ok   tests/breaker.yaml",
        "ok   tests/saml-production-reauth.yaml",
        "ok   tests/saml-production.yaml",
        "ok   tests/split-one-child.yaml",
        "ok   tests/split-staging.yaml",
        "ok   tests/split-two-children.yaml",
        "7 cases: 7 passed, 0 failed",
        "",
      ].join("\n"),
    );
    expect(run.code).toBe(0);
  });

  it("fails a case that gets what it does not expect, naming expected and got", async () => {
    const cases = join(w.dir, "cases");
    writeFileSync(join(w.dir, "edgeplan.yaml"), POLICIES);
    const { mkdirSync } = await import("node:fs");
    mkdirSync(cases, { recursive: true });
    writeFileSync(
      join(cases, "one-child.yaml"),
      "change: {kind: weighted_backend, action: create, after: {description: '', backends: {x: 1}}}\nexpect: {two-live-children: pass, described: fail, no-deletes: fail}\n",
    );
    writeFileSync(join(cases, "typo.yaml"), "change: {kind: saml, action: replace}\nexpect: {two-live: skip}\n");
    const run = await runCliIn(w.dir, ["policy", "test", "cases"]);
    expect(run.stdout).toBe(
      [
        "FAIL cases/one-child.yaml",
        "  two-live-children: expected pass, got fail (A split keeps at least two children with traffic.)",
        "  no-deletes: expected fail, got skip",
        "FAIL cases/typo.yaml",
        '  cases/typo.yaml:2:10: expect: no policy is named "two-live"; the policies are described, two-live-children, no-deletes',
        "2 cases: 0 passed, 2 failed",
        "",
      ].join("\n"),
    );
    expect(run.code).toBe(1);
  });

  it("takes --env: the policies of the environment chosen, where the file defines several", async () => {
    const { mkdirSync } = await import("node:fs");
    const dir = join(w.dir, "two-envs");
    mkdirSync(join(dir, "cases"), { recursive: true });
    writeFileSync(join(dir, "edgeplan.yaml"), `${POLICIES}environments:\n  staging: {}\n  production: {}\n`);
    writeFileSync(join(dir, "cases", "delete.yaml"), "change: {kind: weighted_backend, action: delete}\nexpect: {no-deletes: fail}\n");
    const unnamed = await runCliIn(dir, ["policy", "test", "cases"]);
    expect(unnamed).toMatchObject({
      code: 1,
      stderr: "edgeplan: edgeplan.yaml defines 2 environments (staging, production): choose one with --env NAME or EDGEPLAN_ENV\n",
    });
    const named = await runCliIn(dir, ["policy", "test", "cases", "--env", "production"]);
    expect(named).toMatchObject({ code: 0, stderr: "", stdout: "ok   cases/delete.yaml\n1 case: 1 passed, 0 failed\n" });
  });
});
