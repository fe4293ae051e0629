/**
 * action.yml and the workflows are code too: these tests check that the action runs the committed bundle on Node 24,
 * declares what it reads and sets, and that each workflow uses current action majors and asks for no more than it
 * needs.
 */
// biome-ignore-all lint/suspicious/noExplicitAny: action.yml and the workflows are parsed YAML, read field by field as GitHub reads them
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { INPUT_NAMES, OUTPUT_NAMES } from "../../src/action/inputs.js";
import { fencedBlocks } from "../package/readme-blocks.js";

const root = new URL("../../", import.meta.url);
const load = (path: string): any => parse(readFileSync(new URL(path, root), "utf8"));

describe("action.yml", () => {
  const action = load("action.yml");

  it("is a JavaScript action on Node 24 whose main is the committed bundle", () => {
    expect(action.runs).toEqual({ using: "node24", main: "bundle/index.mjs" });
    expect(existsSync(new URL(action.runs.main, root))).toBe(true);
  });

  it("declares exactly the inputs the action reads, none required", () => {
    expect(Object.keys(action.inputs).sort()).toEqual([...INPUT_NAMES].sort());
    expect(action.inputs.comment.default).toBe("true");
    expect(action.inputs["drift-issue"].default).toBe("false");
    expect(action.inputs["github-token"].default).toBe("${{ github.token }}");
    expect(action.inputs.command.default).toBe("");
    expect(action.inputs["on-difference"].default).toBe("refuse");
    expect(action.inputs.wait.default).toBe("false");
    expect(action.inputs["rollouts-only"].default).toBe("false");
    expect(action.inputs["comment-author"].default).toBe("github-actions[bot]");
    for (const input of Object.values<any>(action.inputs)) expect(input.required).toBe(false);
  });

  it("declares exactly the outputs the action sets", () => {
    expect(Object.keys(action.outputs).sort()).toEqual([...OUTPUT_NAMES].sort());
    for (const name of OUTPUT_NAMES) expect(typeof action.outputs[name].description).toBe("string");
  });
});

/** Every `uses:` of a workflow's steps. */
const usesOf = (wf: any): string[] => Object.values<any>(wf.jobs).flatMap((job) => job.steps.map((s: any) => s.uses).filter(Boolean));

describe("example workflows", () => {
  const plan = load("examples/workflows/plan-on-pr.yml");
  const apply = load("examples/workflows/apply-on-merge.yml");
  const drift = load("examples/workflows/drift-check.yml");
  const rollout = load("examples/workflows/rollout.yml");
  const edgeplanStep = (wf: any, job: string): any => wf.jobs[job].steps.find((s: any) => String(s.uses).includes("/edgeplan@"));

  it("plan on pull requests may comment and nothing more; a comment on a pull request refreshes its acknowledgements", () => {
    expect(Object.keys(plan.on)).toEqual(["pull_request", "issue_comment"]);
    expect(plan.permissions).toEqual({ contents: "read", "pull-requests": "write" });
    const step = edgeplanStep(plan, "plan");
    expect(step.with["api-key"]).toBe("${{ secrets.EDGEPLAN_API_KEY }}");
    expect(step.with.command).toBeUndefined();
    expect(plan.jobs.plan.if).toBe("github.event_name == 'pull_request'");
    // The acknowledgement job plans nothing: no API key reaches it.
    expect(plan.jobs.acknowledge.if).toContain("github.event_name == 'issue_comment' && github.event.issue.pull_request");
    expect(edgeplanStep(plan, "acknowledge").with).toBeUndefined();
  });

  it("path filters name files that exist once the examples are copied to .github/workflows/", () => {
    const workflows = plan.on.pull_request.paths.filter((p: string) => p.startsWith(".github/workflows/"));
    expect(workflows.length).toBeGreaterThan(0);
    for (const path of workflows) expect(existsSync(new URL(`examples/workflows/${path.slice(".github/workflows/".length)}`, root))).toBe(true);
    for (const wf of [plan.on.pull_request, apply.on.push]) expect(wf.paths).toEqual(expect.arrayContaining(["manifests/**", "edgeplan.yaml"]));
  });

  it("apply on merge: one run per merge (no group that could cancel a pending one), the reviewed plan only, result posted", () => {
    expect(apply.on.push.branches).toEqual(["main"]);
    expect(apply.permissions).toEqual({ contents: "read", "pull-requests": "write" });
    expect(apply.concurrency).toBeUndefined();
    expect(apply.jobs.apply.concurrency).toBeUndefined();
    const step = edgeplanStep(apply, "apply");
    expect(step.with).toMatchObject({ command: "apply", "on-difference": "refuse", wait: true, "lock-timeout": "30m" });
    expect(step.with.ack).toBeUndefined();
    expect(step.with["api-key"]).toBe("${{ secrets.EDGEPLAN_API_KEY }}");
  });

  it("rollout applies rollout steps on a schedule, needs no approval per run, and its group is its own", () => {
    expect(rollout.on.schedule).toEqual([{ cron: "*/5 * * * *" }]);
    expect(rollout.permissions).toEqual({ contents: "read" });
    expect(rollout.jobs.rollout.environment).toBeUndefined();
    expect(rollout.concurrency).toEqual({ group: "edgeplan-rollout-production", "cancel-in-progress": false });
    const step = edgeplanStep(rollout, "rollout");
    expect(step.with).toMatchObject({ command: "apply", comment: false, "rollouts-only": true });
    // The stack and paths come from edgeplan.yaml, as for the other workflows: none is written here.
    expect(Object.keys(step.with).filter((name) => ["stack", "paths", "environment"].includes(name))).toEqual([]);
  });

  it("drift check plans nightly, and the action keeps the drift issue", () => {
    expect(drift.on.schedule).toEqual([{ cron: "17 3 * * *" }]);
    expect(drift.permissions).toEqual({ contents: "read", issues: "write" });
    expect(drift.concurrency).toEqual({ group: "edgeplan-drift-production", "cancel-in-progress": true });
    const step = edgeplanStep(drift, "drift");
    expect(step.with).toMatchObject({ command: "plan", comment: false, "drift-issue": true });
    expect(drift.jobs.drift.steps.at(-1)).toBe(step);
  });

  it("every step that holds an API key pins its API URL in the workflow, never from the pull request's files", () => {
    const environments = load("examples/workflows/environments.yml");
    const steps = [plan, apply, drift, rollout, environments].flatMap((wf) =>
      Object.values<any>(wf.jobs).flatMap((job) => job.steps.filter((s: any) => String(s.uses).includes("/edgeplan@") && s.with?.["api-key"])),
    );
    expect(steps).toHaveLength(6);
    for (const step of steps) expect(["${{ vars.EDGEPLAN_API_URL }}", "${{ vars[matrix.url] }}"]).toContain(step.with["api-url"]);
    // Each environment's plan and apply take the URL and key of its matrix entry.
    for (const job of ["plan", "apply"]) {
      expect(environments.jobs[job].strategy.matrix.include).toEqual([
        { environment: "staging", url: "EDGEPLAN_API_URL_STAGING", key: "EDGEPLAN_API_KEY_STAGING" },
        { environment: "production", url: "EDGEPLAN_API_URL_PROD", key: "EDGEPLAN_API_KEY_PROD" },
      ]);
      expect(edgeplanStep(environments, job).with).toMatchObject({ environment: "${{ matrix.environment }}", "api-key": "${{ secrets[matrix.key] }}" });
    }
    // The apply of a merge runs in the GitHub environment of its name, whose protection rules guard it.
    expect(environments.jobs.apply.environment).toBe("${{ matrix.environment }}");
  });

  it("no job that plans a pull request runs in a GitHub environment, whose reviewers would hold the plan", () => {
    const environments = load("examples/workflows/environments.yml");
    const onPullRequests = [plan, apply, drift, rollout, environments].flatMap((wf) =>
      "pull_request" in wf.on ? Object.entries<any>(wf.jobs).filter(([, job]) => job.if === undefined || String(job.if).includes("github.event_name == 'pull_request'")) : [],
    );
    expect(onPullRequests.map(([name]) => name)).toEqual(["plan", "plan"]);
    for (const [, job] of onPullRequests) expect(job.environment).toBeUndefined();
  });

  it("every workflow with a plan on pull requests takes acknowledgements from their comments", () => {
    const environments = load("examples/workflows/environments.yml");
    for (const wf of [plan, environments]) {
      expect(wf.on.issue_comment).toEqual({ types: ["created", "edited"] });
      expect(wf.jobs.acknowledge.if).toContain("github.event_name == 'issue_comment' && github.event.issue.pull_request");
      expect(edgeplanStep(wf, "acknowledge").with?.["api-key"]).toBeUndefined();
    }
  });

  it("the README's workflow is plan-on-pr.yml's in short: the same events, jobs and conditions", () => {
    const block = fencedBlocks(readFileSync(new URL("README.md", root), "utf8")).find((b) => b.body.startsWith("# .github/workflows/plan-on-pr.yml\n"));
    const readme = parse(block!.body);
    expect(readme.on).toEqual({ ...plan.on, pull_request: { paths: ["manifests/**", "edgeplan.yaml"] } });
    expect(readme.permissions).toEqual(plan.permissions);
    expect(Object.keys(readme.jobs)).toEqual(Object.keys(plan.jobs));
    for (const job of Object.keys(plan.jobs)) {
      expect(readme.jobs[job].if).toBe(plan.jobs[job].if);
      expect(edgeplanStep(readme, job).with).toEqual(edgeplanStep(plan, job).with);
    }
  });

  it("no two workflows share a concurrency group", () => {
    const groups = [plan, apply, drift, rollout].flatMap((wf) => [wf.concurrency, ...Object.values<any>(wf.jobs).map((j) => j.concurrency)]).filter(Boolean);
    const names = groups.map((g: any) => g.group);
    expect(new Set(names).size).toBe(names.length);
  });

  it("use action majors that run on Node 24", () => {
    const release = load(".github/workflows/release.yml");
    const uses = [plan, apply, drift, release].flatMap(usesOf).filter((u) => u.startsWith("actions/"));
    expect([...new Set(uses)].sort()).toEqual(["actions/checkout@v6", "actions/setup-node@v6"]);
    expect(release.jobs.release.steps.find((s: any) => s.uses === "actions/setup-node@v6").with["node-version"]).toBe("24");
    expect(release.permissions).toEqual({ contents: "write", "id-token": "write" });
  });

  it("release checks, then publishes one packed tarball to npm with provenance and attaches it to the GitHub release", () => {
    const release = load(".github/workflows/release.yml");
    const steps: { name?: string; run?: string; env?: Record<string, string> }[] = release.jobs.release.steps;
    const at = (text: string): number => steps.findIndex((s) => s.run?.includes(text) === true);
    const order = ['require("./package.json").version', "npm run lint", "npm test", "npm pack", "npm publish", "gh release create"].map(at);
    // Every check passes before anything leaves the runner, and what is published is what is attached.
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
    const publish = order[4]!;
    const attach = order[5]!;
    expect(steps[publish]!.run).toBe('npm publish "./${{ steps.pack.outputs.tarball }}" --provenance --access public');
    expect(steps[publish]!.env).toEqual({ NODE_AUTH_TOKEN: "${{ secrets.NPM_TOKEN }}" });
    expect(steps[attach]!.run).toContain('gh release create "$GITHUB_REF_NAME" "${{ steps.pack.outputs.tarball }}"');
    const setup = steps.find((s: any) => s.uses === "actions/setup-node@v6") as { with: Record<string, string> };
    expect(setup.with["registry-url"]).toBe("https://registry.npmjs.org");
  });
});
