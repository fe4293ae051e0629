/**
 * The bundled action end to end, as a runner starts it: action.yml and its `runs.main` copied into an empty folder
 * (no node_modules above it), run by Node 20 and by Node 24 with the INPUT_ and GITHUB_ variables of a step, against
 * the real API server (in this process, port 0) and a loopback stand-in of GitHub, with a repository checkout in a
 * temporary folder. Every byte the action writes is searched for the API key.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from "vitest";
import { apiClient, startTestServer, type TestServer } from "../helpers/server.js";
import { runnerEnv, type RunnerOptions } from "./env.js";
import { CANARY as CANARY_BACKEND, checkout, checkoutYaml, EDGE, ROUTE, routeYaml, STABLE } from "./workspace.js";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";
import { copyAction, nodeModulesAbove, runNode, withDefaults, type CliRun } from "./run-cli.js";
import { buildPlanRecord } from "../../src/core/plan-digest.js";
import type { Plan } from "../../src/model/plan.js";
import { reviewedMarker } from "../../src/render/action.js";

const TOKEN = "ghs_e2eToken_Ww2Ee4Rr6Tt8";

let server: TestServer;
let gh: GitHubStandIn;

/** A fresh server for each runtime: each starts from the same live state. */
async function startServer(): Promise<TestServer> {
  return startTestServer({
    fixtures: {
      edges: [{ id: EDGE, hostports: ["api.example.com:443"], routes: [{ id: ROUTE, match: "/v1/checkout", match_type: "path_prefix" }] }],
      backends: [
        { id: STABLE, type: "tunnel_group" },
        { id: CANARY_BACKEND, type: "tunnel_group" },
      ],
    },
  });
}

beforeAll(async () => {
  gh = await startGitHubStandIn(TOKEN);
});
afterAll(async () => {
  await gh?.close();
});
beforeEach(() => {
  gh.calls.length = 0;
  gh.comments.clear();
  gh.issues.clear();
  gh.readOnly = false;
});

/** The runtime of a describe block below, and the copied action it runs. */
let node = process.execPath;
let action: { dir: string; main: string };

async function act(workspace: string, options: Partial<RunnerOptions> & { inputs?: Record<string, string> } = {}) {
  const runner = runnerEnv({
    event: "pull_request",
    githubApiUrl: gh.url,
    pr: { number: 21, headSha: "5e5e5e5e5e5e" },
    ...options,
    workspace,
    inputs: { "api-key": server.apiKey, "api-url": server.url, "github-token": TOKEN, stack: "e2e", paths: "manifests", ...options.inputs },
  });
  const run = await runNode(node, [action.main], withDefaults(runner.env), workspace);
  return { runner, run };
}

/** The key appears nowhere but in the mask command the runner consumes. */
function expectNoKey(run: CliRun, runner: ReturnType<typeof runnerEnv>, extra: string[] = []): void {
  const lines = run.stdout.split("\n");
  expect(lines.filter((l) => l.includes(server.apiKey))).toEqual([`::add-mask::${server.apiKey}`]);
  const written = [
    lines.filter((l) => !l.startsWith("::add-mask::")).join("\n"),
    run.stderr,
    runner.summary(),
    readFileSync(runner.env.GITHUB_OUTPUT!, "utf8"),
    ...gh.calls.map((c) => JSON.stringify(c.body ?? null)),
    ...[...gh.comments.values()].flat().map((c) => c.body),
    ...extra,
  ].join("\n");
  expect(written).not.toContain(server.apiKey);
  expect(written).not.toContain(TOKEN.slice(4));
}

const RUNTIMES: [string, () => string][] = [
  ["Node 20 (the tests' own)", () => process.execPath],
  ["Node 24 (action.yml runs.using)", () => inject("node24")],
];

describe.each(RUNTIMES)("the bundled action on %s against the real server", (_name, runtime) => {
  beforeAll(async () => {
    node = runtime();
    action = copyAction();
    server = await startServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it("runs from a folder of action.yml and the bundle alone, with no node_modules above it", () => {
    expect(readdirSync(action.dir, { recursive: true }).sort()).toEqual(["action.yml", "bundle", "bundle/index.mjs"]);
    expect(nodeModulesAbove(action.dir)).toEqual([]);
    const version = execFileSync(node, ["--version"], { encoding: "utf8" });
    expect(version.startsWith(node === process.execPath ? process.version : "v24.")).toBe(true);
  });

  it("plans a pull request twice into ONE comment, edited once, with outputs and summary", async () => {
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000), "manifests/routes.yaml": routeYaml });
    const first = await act(ws);
    expect(first.run.stderr).not.toContain("internal error");
    expect(first.run.code).toBe(0);
    const outputs = first.runner.outputs();
    expect(outputs).toEqual({
      "has-changes": "true",
      exitcode: "2",
      "plan-file": join(first.runner.dir, "temp", "edgeplan-plan-e2e.json"),
      summary: "Plan: 3 to create (1 weighted backend, 1 module, 1 inventory record), 0 to update, 0 to delete.",
    });
    const saved = JSON.parse(readFileSync(outputs["plan-file"]!, "utf8")) as Plan;
    expect(saved.format_version).toBe(1);
    expect(saved.stack).toBe("e2e");
    // The weighted backend, the circuit breaker, and the inventory write that records the circuit breaker.
    expect(saved.changes).toHaveLength(3);
    expect(first.run.stdout).toContain("::notice title=edgeplan::Plan: 3 to create (1 weighted backend, 1 module, 1 inventory record), 0 to update, 0 to delete.\n");

    const comments = gh.comments.get("acme/routes#21")!;
    expect(comments).toHaveLength(1);
    const body1 = comments[0]!.body;
    expect(
      body1.startsWith(
        `<!-- edgeplan:plan stack=e2e -->\n${reviewedMarker(buildPlanRecord(saved), [], { head: "5e5e5e5e5e5e", after: 0, entries: [] })}\n\n### edgeplan plan: stack \`e2e\`\n\n**Plan: 3 to create (1 weighted backend, 1 module, 1 inventory record), 0 to update, 0 to delete.**\n`,
      ),
    ).toBe(true);
    expect(body1).toContain("weighted_backend.checkout");
    expect(body1).toContain("<sub>Commit 5e5e5e5 · [workflow run](https://github.com/acme/routes/actions/runs/4242)</sub>");
    expect(first.runner.summary()).toContain("**Plan: 3 to create (1 weighted backend, 1 module, 1 inventory record), 0 to update, 0 to delete.**");
    expectNoKey(first.run, first.runner, [readFileSync(outputs["plan-file"]!, "utf8")]);

    // A second push changes the weights: the same comment is edited, not a second one added.
    writeFileSync(join(ws, "manifests/checkout.yaml"), checkoutYaml(5000, 5000));
    const second = await act(ws, { pr: { number: 21, headSha: "6f6f6f6f6f6f" } });
    expect(second.run.code).toBe(0);
    const after = gh.comments.get("acme/routes#21")!;
    expect(after).toHaveLength(1);
    expect(after[0]!.id).toBe(comments[0]!.id);
    expect(after[0]!.body).toContain("<sub>Commit 6f6f6f6 · ");
    expect(after[0]!.body).toContain(`${STABLE}`);
    expect(gh.writes().map((c) => `${c.method} ${c.path}`)).toEqual([
      "POST /repos/acme/routes/issues/21/comments",
      `PATCH /repos/acme/routes/issues/comments/${comments[0]!.id}`,
    ]);
    for (const call of gh.calls) {
      expect(call.authorization).toBe(`token ${TOKEN}`);
      expect(call.accept).toBe("application/vnd.github+json");
      expect(call.apiVersion).toBe("2022-11-28");
    }
    expectNoKey(second.run, second.runner);
  });

  it("says which event payload cannot be read, instead of crashing on it", async () => {
    const runner = runnerEnv({ event: "push", githubApiUrl: gh.url, inputs: { "api-key": server.apiKey } });
    writeFileSync(runner.env.GITHUB_EVENT_PATH!, "{not json");
    const run = await runNode(node, [action.main], withDefaults(runner.env), runner.workspace);
    expect(run.code).toBe(1);
    const message = `GITHUB_EVENT_PATH ${runner.env.GITHUB_EVENT_PATH}: the event payload cannot be read as JSON`;
    expect(run.stdout.split("\n").slice(0, 2)).toEqual([`::add-mask::${server.apiKey}`, expect.stringContaining(`::error title=edgeplan::${message} (`)]);
    expect(runner.outputs()).toMatchObject({ "has-changes": "false", exitcode: "1", "plan-file": "" });
  });

  it("opens the drift issue on a scheduled plan that finds drift, and fails the step", async () => {
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000) });
    const { run, runner } = await act(ws, { event: "schedule", pr: undefined, inputs: { stack: "nightly", comment: "false", "drift-issue": "true" } });
    expect(run.code).toBe(2);
    expect(run.stdout).toContain("::error title=edgeplan drift::drift in stack nightly: Plan: 1 to create, 0 to update, 0 to delete.\n");
    expect(runner.outputs()).toMatchObject({ "has-changes": "true", exitcode: "2" });
    const [issue] = gh.issues.get("acme/routes")!;
    expect(issue).toMatchObject({ title: "edgeplan: drift in stack nightly", state: "open", labels: [{ name: "edgeplan-drift" }] });
    expect(issue!.body.startsWith("<!-- edgeplan:drift stack=nightly -->\nLive state of stack `nightly` differs from the manifests.")).toBe(true);
    expect(issue!.body).toContain("weighted_backend.checkout");
    expect(gh.comments.size).toBe(0);
    expectNoKey(run, runner, [issue!.body]);
  });

  it("annotates a broken manifest at its lines, sends nothing to the API and fails", async () => {
    const ws = checkout({
      "manifests/checkout.yaml": ["kind: WeightedBackend", "name: checkout", "backends:", `  ${STABLE}: 10001`, "descripton: typo", ""].join("\n"),
    });
    const requestsBefore = server.logLines.length;
    const { run, runner } = await act(ws);
    expect(run.code).toBe(1);
    const annotations = run.stdout.split("\n").filter((l) => /^::(error|warning) .*file=/.test(l));
    expect(annotations).toEqual([
      `::error title=edgeplan,file=manifests/checkout.yaml,line=4,col=38::backends.${STABLE}: 10001 is out of range 0 to 10000`,
      "::error title=edgeplan,file=manifests/checkout.yaml,line=5,col=1::unknown field descripton; did you mean description?",
    ]);
    expect(server.logLines.length).toBe(requestsBefore);
    expect(runner.outputs()).toMatchObject({ "has-changes": "false", exitcode: "1", "plan-file": "" });
    expect(runner.outputs().summary).toBe("The plan of stack e2e failed: 2 errors in the manifests.");
    const body = gh.comments.get("acme/routes#21")![0]!.body;
    expect(body).toContain("**The plan failed.**\n\n2 errors in the manifests; nothing was sent to the API:\n\n```text\nmanifests/checkout.yaml:4:38: ");
    expectNoKey(run, runner);
  });

  it("never posts the text of a file that is not a manifest: a project file naming .git/config, or paths naming a key file", async () => {
    const secret = "CANARY-e2e-5b1d7c-secret";
    const credential = Buffer.from(`x-access-token:${secret}`).toString("base64");
    const gitConfig = `[core]\n\tbare = false\n[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic ${credential}\n`;
    const keyDir = mkdtempSync(join(tmpdir(), "edgeplan-key-"));
    writeFileSync(join(keyDir, "key"), `${secret}\n`);
    const refused = checkout({ "edgeplan.yaml": "paths: [.git/config]\n", ".git/config": gitConfig });
    const named = checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000), ".git/config": gitConfig });
    const requestsBefore = server.logLines.length;
    const first = await act(refused, { inputs: { paths: "" } });
    const second = await act(named, { pr: { number: 23, headSha: "6f6f6f6f" }, inputs: { paths: `.git/config\n${join(keyDir, "key")}` } });
    expect(server.logLines.length).toBe(requestsBefore);
    const annotations = (run: CliRun) => run.stdout.split("\n").filter((l) => /^::(error|warning) .*file=/.test(l));
    expect(first.run.code).toBe(1);
    expect(annotations(first.run)).toEqual([
      "::error title=edgeplan,file=edgeplan.yaml,line=1,col=9::paths: this path is inside .git/, which holds no manifests; name the folders of the manifests",
    ]);
    expect(second.run.code).toBe(1);
    expect(annotations(second.run).filter((l) => l.includes("file=.git/config"))).toEqual([
      "::error title=edgeplan,file=.git/config,line=2,col=2::YAML syntax: Unexpected scalar at node end; fix the YAML at this position",
      "::error title=edgeplan,file=.git/config,line=2,col=72::YAML syntax: Unexpected map-value-ind token in YAML stream; fix the YAML at this position",
      "::error title=edgeplan,file=.git/config,line=2,col=74::YAML syntax: Unexpected scalar token in YAML stream; fix the YAML at this position",
    ]);
    for (const { run, runner } of [first, second]) {
      const written = [
        run.stdout,
        run.stderr,
        runner.summary(),
        readFileSync(runner.env.GITHUB_OUTPUT!, "utf8"),
        ...[...gh.comments.values()].flat().map((c) => c.body),
      ].join("\n");
      expect(written).not.toContain(secret);
      expect(written).not.toContain(credential);
    }
    expect(gh.comments.get("acme/routes#23")![0]!.body).toContain(
      "a manifest document must be a mapping with a kind, not text; start it with kind: WeightedBackend or kind: EdgeRoute",
    );
  });

  it("falls back to the job summary on a fork's read-only token", async () => {
    gh.readOnly = true;
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000) });
    const { run, runner } = await act(ws, { pr: { number: 22, headSha: "7a7a7a7a", fork: true } });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      "::notice title=edgeplan::the plan could not be posted as a pull-request comment: the token is read-only (as it is for pull requests from forks); the plan is in the job summary\n",
    );
    expect(runner.summary()).toContain("**Plan: 1 to create, 0 to update, 0 to delete.**");
    expect(runner.outputs()).toMatchObject({ "has-changes": "true", exitcode: "2" });
    expect(gh.writes()).toHaveLength(1);
    expect(gh.comments.get("acme/routes#22")).toBeUndefined();
    expectNoKey(run, runner);
  });

  it("applies on a push to the default branch, refuses an unacknowledged risk, and converges", async () => {
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000), "manifests/routes.yaml": routeYaml });
    const push = { event: "push" as const, ref: "refs/heads/main", inputs: { stack: "merge" } };
    const first = await act(ws, push);
    expect(first.run.stderr).not.toContain("internal error");
    expect(first.run.code).toBe(0);
    expect(first.runner.outputs()).toEqual({
      "has-changes": "true",
      exitcode: "0",
      "plan-file": "",
      summary: "Apply complete: 3 done. Converged: the live state matches the manifests.",
    });
    const summary = first.runner.summary();
    expect(summary.startsWith("### edgeplan apply: stack `merge`\n\n**Apply complete: 3 done.**\n")).toBe(true);
    expect(summary).toContain("\nConverged: the live state matches the manifests.\n");
    expect(summary).toContain("<details><summary>The plan that was applied</summary>\n\n### edgeplan plan: stack `merge`");
    expect(gh.calls).toHaveLength(0);
    expectNoKey(first.run, first.runner);

    // What the server holds now: the weighted backend with its weights and owner marker, the circuit breaker.
    const api = apiClient(server.url, server.apiKey);
    const list = await api.get("/backends/weighted");
    const mine = (list.json.backends as { metadata: string; backends: Record<string, number> }[]).filter(
      (b) => b.metadata.includes('"stack":"merge"') && b.metadata.includes('"name":'),
    );
    expect(mine.map((b) => b.backends)).toEqual([{ [STABLE]: 9000, [CANARY_BACKEND]: 1000 }]);
    const cb = await api.get(`/edges/https/${EDGE}/routes/${ROUTE}/circuit_breaker`);
    expect(cb.json).toMatchObject({ tripped_duration: 30, rolling_window: 60, num_buckets: 12, volume_threshold: 50, error_threshold_percentage: 0.25 });

    // A plan right after has nothing to do (the drift check's exit code 0).
    const replan = await act(ws, { ...push, inputs: { ...push.inputs, command: "plan" } });
    expect(replan.run.code).toBe(0);
    expect(replan.runner.outputs()).toMatchObject({ "has-changes": "false", exitcode: "0", summary: "No changes. Live state matches the manifests." });

    // Moving 90 % of the traffic is a risk: refused until the ack input names it.
    writeFileSync(join(ws, "manifests/checkout.yaml"), checkoutYaml(0, 10000));
    const refused = await act(ws, push);
    expect(refused.run.code).toBe(1);
    expect(refused.run.stdout).toMatch(/^::error title=edgeplan::the plan has 1 risk that must be acknowledged before it is applied:%0A {2}traffic-shift /m);
    expect(refused.run.stdout).toContain("%0AIn the action, name the rules in the ack input (for example `ack: traffic-shift`).\n");
    expect(refused.runner.outputs()).toMatchObject({ exitcode: "1", "has-changes": "false" });
    expect(refused.runner.summary()).toContain("**The apply failed.**");
    const unchanged = await api.get("/backends/weighted");
    expect(
      (unchanged.json.backends as { metadata: string; backends: Record<string, number> }[])
        .filter((b) => b.metadata.includes('"stack":"merge"') && b.metadata.includes('"name":'))
        .map((b) => b.backends),
    ).toEqual([{ [STABLE]: 9000, [CANARY_BACKEND]: 1000 }]);

    const acked = await act(ws, { ...push, inputs: { ...push.inputs, ack: "traffic-shift" } });
    expect(acked.run.code).toBe(0);
    expect(acked.runner.outputs().summary).toBe("Apply complete: 1 done. Converged: the live state matches the manifests.");
    const finalPlan = await act(ws, { ...push, inputs: { ...push.inputs, command: "plan" } });
    expect(finalPlan.runner.outputs()).toMatchObject({ "has-changes": "false", exitcode: "0" });
    expectNoKey(acked.run, acked.runner);
  });

  it("reads edgeplan.yaml: the inputs left empty take its paths and stack, and its max_shift reaches the plan", async () => {
    const ws = checkout({
      "edgeplan.yaml": "paths: [manifests]\nstack: from-file\nmax_shift: 5\n",
      "manifests/checkout.yaml": checkoutYaml(9000, 1000),
    });
    const { run, runner } = await act(ws, { inputs: { stack: "", paths: "" } });
    expect(run.stderr).not.toContain("internal error");
    expect(run.code).toBe(0);
    const outputs = runner.outputs();
    expect(outputs["plan-file"]).toBe(join(runner.dir, "temp", "edgeplan-plan-from-file.json"));
    const saved = JSON.parse(readFileSync(outputs["plan-file"]!, "utf8")) as { stack: string; options: { max_shift: number }; changes: Array<{ address: string }> };
    expect(saved.stack).toBe("from-file");
    expect(saved.options.max_shift).toBe(5);
    expect(saved.changes.map((c) => c.address)).toEqual(["weighted_backend.checkout"]);
    expect(gh.comments.get("acme/routes#21")![0]!.body.startsWith("<!-- edgeplan:plan stack=from-file -->\n")).toBe(true);
  });
});
