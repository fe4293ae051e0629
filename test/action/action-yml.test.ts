/**
 * action.yml and the example workflows are code too: these tests check that every input reaches the command under
 * the variable name it reads, that every output is wired, and that each workflow asks for no more than it needs.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { INPUT_NAMES, OUTPUT_NAMES, inputEnvName } from "../../src/action/inputs.js";

const root = new URL("../../", import.meta.url);
const load = (path: string): any => parse(readFileSync(new URL(path, root), "utf8"));

describe("action.yml", () => {
  const action = load("action.yml");
  const steps: any[] = action.runs.steps;
  const run = steps.find((s) => s.id === "edgeplan");

  it("is a composite action that builds from source with Node 20", () => {
    expect(action.runs.using).toBe("composite");
    expect(steps[0]).toEqual({ name: "Set up Node.js 20", uses: "actions/setup-node@v4", with: { "node-version": "20" } });
    expect(steps[1]["working-directory"]).toBe("${{ github.action_path }}");
    expect(steps[1].run.trim().split("\n")).toEqual(["npm ci --no-audit --no-fund --loglevel=error", "npm run build"]);
    expect(run.run).toBe('node "${{ github.action_path }}/dist/src/cli.js" action');
    for (const step of steps.filter((s) => s.run)) expect(step.shell).toBe("bash");
  });

  it("declares exactly the inputs the command reads, each mapped to its INPUT_ variable", () => {
    expect(Object.keys(action.inputs).sort()).toEqual([...INPUT_NAMES].sort());
    const expected = Object.fromEntries(INPUT_NAMES.map((name) => [inputEnvName(name), `\${{ inputs.${name} }}`]));
    expect(run.env).toEqual(expected);
    expect(run.env["INPUT_API-KEY"]).toBe("${{ inputs.api-key }}");
    expect(action.inputs.comment.default).toBe("true");
    expect(action.inputs["github-token"].default).toBe("${{ github.token }}");
    expect(action.inputs.command.default).toBe("");
    for (const input of Object.values<any>(action.inputs)) expect(input.required).toBe(false);
  });

  it("wires every output to the step's output of the same name", () => {
    expect(Object.keys(action.outputs).sort()).toEqual([...OUTPUT_NAMES].sort());
    for (const name of OUTPUT_NAMES) expect(action.outputs[name].value).toBe(`\${{ steps.edgeplan.outputs.${name} }}`);
  });
});

describe("example workflows", () => {
  const plan = load("examples/workflows/plan-on-pr.yml");
  const apply = load("examples/workflows/apply-on-merge.yml");
  const drift = load("examples/workflows/drift-check.yml");
  const edgeplanStep = (wf: any, job: string): any => wf.jobs[job].steps.find((s: any) => String(s.uses).includes("/edgeplan@"));

  it("plan on pull requests may comment and nothing more", () => {
    expect(Object.keys(plan.on)).toEqual(["pull_request"]);
    expect(plan.permissions).toEqual({ contents: "read", "pull-requests": "write" });
    const step = edgeplanStep(plan, "plan");
    expect(step.with["api-key"]).toBe("${{ secrets.EDGEPLAN_API_KEY }}");
    expect(step.with.command).toBeUndefined();
  });

  it("apply on merge runs one at a time, never cancelled, read-only on the repository", () => {
    expect(apply.on.push.branches).toEqual(["main"]);
    expect(apply.permissions).toEqual({ contents: "read" });
    expect(apply.concurrency).toEqual({ group: "edgeplan-apply-production", "cancel-in-progress": false });
    const step = edgeplanStep(apply, "apply");
    expect(step.with.command).toBe("apply");
    expect(step.with["api-key"]).toBe("${{ secrets.EDGEPLAN_API_KEY }}");
  });

  it("drift check plans nightly, then opens an issue and fails on exit code 2", () => {
    expect(drift.on.schedule).toEqual([{ cron: "17 3 * * *" }]);
    expect(drift.permissions).toEqual({ contents: "read", issues: "write" });
    expect(drift.concurrency).toEqual(apply.concurrency);
    const step = edgeplanStep(drift, "drift");
    expect(step.with).toMatchObject({ command: "plan", comment: false });
    const after = drift.jobs.drift.steps.slice(drift.jobs.drift.steps.indexOf(step) + 1);
    expect(after.map((s: any) => s.if)).toEqual(["steps.edgeplan.outputs.exitcode == '2'", "steps.edgeplan.outputs.exitcode == '2'"]);
    expect(after[0].run).toContain("gh issue create");
    expect(after[1].run).toContain("exit 2");
  });
});
