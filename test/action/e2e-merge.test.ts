/**
 * The pull-request workflow end to end, with the bundled action (run as a runner starts it) against the real API
 * server and the loopback stand-in of GitHub: a pull request is planned, people comment on it, it is merged, and the
 * push of the merge commit applies. What is checked is what a user sees: the exit code, the comment on the pull
 * request, and what the server holds afterwards.
 */
import { isInventoryObject } from "../../src/model/inventory.js";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";
import { apiClient, startTestServer, type TestServer } from "../helpers/server.js";
import { runnerEnv, type RunnerOptions } from "./env.js";
import { CANARY, checkout, checkoutYaml, EDGE, ROUTE, routeYaml, STABLE } from "./workspace.js";
import { copyAction, runNode, withDefaults } from "./run-cli.js";

const TOKEN = "ghs_mergeToken_Zx9Cv8Bn7";
const REPO = "acme/routes";

let server: TestServer;
let gh: GitHubStandIn;
let action: { dir: string; main: string };

beforeAll(async () => {
  gh = await startGitHubStandIn(TOKEN);
  action = copyAction();
  server = await startTestServer({
    fixtures: {
      edges: [{ id: EDGE, hostports: ["api.example.com:443"], routes: [{ id: ROUTE, match: "/v1/checkout", match_type: "path_prefix" }] }],
      backends: [
        { id: STABLE, type: "tunnel_group" },
        { id: CANARY, type: "tunnel_group" },
      ],
    },
  });
});
afterAll(async () => {
  await gh?.close();
  await server?.close();
});
beforeEach(() => {
  gh.calls.length = 0;
  gh.comments.clear();
  gh.pulls.clear();
  gh.permissions.clear();
  gh.readOnly = false;
  gh.permissions.set("alice", "write");
  gh.permissions.set("bob", "read");
});

async function act(stack: string, workspace: string, options: Partial<RunnerOptions> & { inputs?: Record<string, string> }) {
  const runner = runnerEnv({
    event: "pull_request",
    githubApiUrl: gh.url,
    ...options,
    workspace,
    inputs: { "api-key": server.apiKey, "api-url": server.url, "github-token": TOKEN, stack, paths: "manifests", ...options.inputs },
  });
  const run = await runNode(process.execPath, [action.main], withDefaults(runner.env), workspace);
  expect(run.stderr).not.toContain("internal error");
  // The key appears only in the mask command the runner consumes.
  const written = [...run.stdout.split("\n").filter((l) => !l.startsWith("::add-mask::")), run.stderr, ...[...gh.comments.values()].flat().map((c) => c.body)];
  expect(written.join("\n")).not.toContain(server.apiKey);
  return { runner, run };
}

/** The head commit each pull request was last planned at: what its merge merges. */
const heads = new Map<number, string>();

/** The plan of pull request `number` at `head`. */
const planPr = (stack: string, ws: string, number: number, head: string) => {
  heads.set(number, head);
  return act(stack, ws, { event: "pull_request", pr: { number, headSha: head } });
};

/** Pull request `number` (at the head it was last planned at) merged as commit `sha`; the push of that commit runs the apply. */
function merge(stack: string, ws: string, number: number, sha: string, inputs: Record<string, string> = {}) {
  const head = { sha: heads.get(number) ?? "0" };
  gh.pulls.set(sha, [{ number, merged_at: "2026-11-25T13:10:00Z", merge_commit_sha: sha, base: { ref: "main" }, head }]);
  return act(stack, ws, { event: "push", ref: "refs/heads/main", sha, inputs: { command: "apply", ...inputs } });
}

/** A push that no pull request made (the first apply of a stack). */
const push = (stack: string, ws: string, sha = "0000000aaaa") => act(stack, ws, { event: "push", ref: "refs/heads/main", sha, inputs: { command: "apply" } });

const stickyOf = (number: number) => gh.comments.get(`${REPO}#${number}`)!.find((c) => c.user.login === "github-actions[bot]")!.body;

/** The weights of the stack's weighted backends (its inventory objects, which record modules, left out). */
async function weightsOf(stack: string): Promise<Record<string, number>[]> {
  const list = await apiClient(server.url, server.apiKey).get("/backends/weighted");
  const backends = list.json.backends as { id: string; metadata: string; backends: Record<string, number> }[];
  return backends.filter((b) => b.metadata.includes(`"stack":"${stack}"`) && !isInventoryObject(b)).map((b) => b.backends);
}

describe("the pull-request workflow with the bundled action", () => {
  it("a risk acknowledged in the pull request by a person who may merge: shown in the comment, merged, applied, result posted", async () => {
    expect((await push("ack", checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000) }))).run.code).toBe(0);
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(0, 10000) });
    const plan = await planPr("ack", ws, 31, "31aa31aa31aa");
    expect(plan.run.code).toBe(0);
    const body = stickyOf(31);
    expect(body).toMatch(
      /^<!-- edgeplan:plan stack=ack -->\n<!-- edgeplan:reviewed digest=[0-9a-f]{64} head=31aa31aa31aa after=0 risks=traffic-shift changes=weighted_backend\.checkout=[0-9a-f]{16} -->\n<!-- edgeplan:acks -->\n/,
    );
    expect(body).toContain("- `traffic-shift`: **not acknowledged**. To acknowledge it, comment `/edgeplan ack traffic-shift`\n");

    // A forged record in someone else's comment, then commands: bob may not merge, alice may.
    gh.comment(`${REPO}#31`, "mallory", `<!-- edgeplan:plan stack=ack -->\n<!-- edgeplan:reviewed digest=${"0".repeat(64)} risks= changes= -->`);
    gh.comment(`${REPO}#31`, "bob", "/edgeplan ack traffic-shift", "2026-11-25T13:03:00Z");
    const ack = gh.comment(`${REPO}#31`, "alice", "Looks right, the canary is healthy.\n/edgeplan ack traffic-shift", "2026-11-25T13:04:00Z");
    const refresh = await act("ack", checkout({}), { event: "issue_comment", commentOn: 31, inputs: { "api-key": "" } });
    expect(refresh.run.code).toBe(0);
    expect(refresh.runner.outputs().summary).toBe("The acknowledgements of pull request #31 for stack ack are updated in its comment.");
    const acked = stickyOf(31);
    expect(acked).toContain(`- \`traffic-shift\`: acknowledged by @alice on 2026-11-25 13:04 UTC ([comment](${ack.html_url}))\n`);
    expect(acked).toContain("Ignored: the commands of @bob, who may not merge this pull request.\n");
    expect(acked.replace(/<!-- edgeplan:acks -->[\s\S]*<!-- \/edgeplan:acks -->/, "")).toBe(body.replace(/<!-- edgeplan:acks -->[\s\S]*<!-- \/edgeplan:acks -->/, ""));

    const applied = await merge("ack", ws, 31, "31bb31bb31bb");
    expect(applied.run.code).toBe(0);
    expect(await weightsOf("ack")).toEqual([{ [STABLE]: 0, [CANARY]: 10000 }]);
    const result = stickyOf(31);
    expect(result.split("\n").slice(0, 2)).toEqual(body.split("\n").slice(0, 2));
    expect(result).toContain("### edgeplan apply: stack `ack`\n\n**Apply complete: 1 done.**\n");
    expect(result).toContain("Converged: the live state matches the manifests within the targets.");
    expect(result).toContain("acknowledged by @alice on 2026-11-25 13:04 UTC");
    expect(result).toContain("<sub>Merged as 31bb31b · [workflow run](https://github.com/acme/routes/actions/runs/4242)</sub>");
    expect(gh.comments.get(`${REPO}#31`)!.filter((c) => c.user.login === "github-actions[bot]")).toHaveLength(1);
  });

  it("the same without an acknowledgement (bob's does not count): nothing written, the comment says what to do", async () => {
    expect((await push("noack", checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000) }))).run.code).toBe(0);
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(0, 10000) });
    expect((await planPr("noack", ws, 32, "32aa32aa")).run.code).toBe(0);
    gh.comment(`${REPO}#32`, "bob", "/edgeplan ack traffic-shift");
    const refused = await merge("noack", ws, 32, "32bb32bb");
    expect(refused.run.code).toBe(1);
    expect(refused.run.stdout).toContain(
      "%0AA person who may merge acknowledges each rule with a comment in pull request #32 (`/edgeplan ack traffic-shift`), then re-runs this job.\n",
    );
    expect(await weightsOf("noack")).toEqual([{ [STABLE]: 9000, [CANARY]: 1000 }]);
    const body = stickyOf(32);
    expect(body).toContain("### edgeplan apply: stack `noack`\n\n**The apply failed.**\n");
    expect(body).toContain("- `traffic-shift`: **not acknowledged**. To acknowledge it, comment `/edgeplan ack traffic-shift`\n");
    expect(body).toContain("Ignored: the commands of @bob, who may not merge this pull request.");
  });

  it("live objects changed between review and merge: nothing written, the new plan posted, the step failed with the reason", async () => {
    expect((await push("drift", checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000) }))).run.code).toBe(0);
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(6000, 4000) });
    expect((await planPr("drift", ws, 33, "33aa33aa")).run.code).toBe(0);
    const reviewed = stickyOf(33).split("\n")[1];
    // Someone changes the live object by hand after the review.
    const api = apiClient(server.url, server.apiKey);
    const list = await api.get("/backends/weighted");
    const live = (list.json.backends as { id: string; metadata: string; description: string }[]).find((b) => b.metadata.includes('"stack":"drift"'))!;
    const patched = await api.patch(`/backends/weighted/${live.id}`, {
      description: live.description,
      metadata: live.metadata,
      backends: { [STABLE]: 8000, [CANARY]: 2000 },
    });
    expect(patched.status).toBe(200);

    const refused = await merge("drift", ws, 33, "33bb33bb");
    expect(refused.run.code).toBe(1);
    const reason =
      "the plan at merge is not the plan reviewed in pull request #33: `weighted_backend.checkout` would now do something else than the reviewed plan showed. Nothing was written.";
    expect(refused.run.stdout).toContain(`::error title=edgeplan::${reason} The plan at merge is posted to the pull request.`);
    expect(refused.runner.outputs()).toMatchObject({ exitcode: "1", "has-changes": "false" });
    expect(await weightsOf("drift")).toEqual([{ [STABLE]: 8000, [CANARY]: 2000 }]);
    const body = stickyOf(33);
    expect(body.split("\n")[1]).toBe(reviewed);
    expect(body).toContain(`**The apply failed.**\n\n\`\`\`text\n${reason}`);
    expect(body).toContain("### edgeplan plan: stack `drift`");
    expect(body).toContain(`-     ${STABLE}: 8000 (80%)\n+     ${STABLE}: 6000 (60%)\n`);
    expect(body).toContain("<sub>Merged as 33bb33b · ");

    // A person who may merge accepts the plan at merge by its digest; the re-run applies exactly it.
    const digest = /`\/edgeplan accept ([0-9a-f]{12})`/.exec(body)![1]!;
    gh.comment(`${REPO}#33`, "bob", `/edgeplan accept ${digest}`);
    expect((await merge("drift", ws, 33, "33bb33bb")).run.code).toBe(1);
    gh.comment(`${REPO}#33`, "alice", `/edgeplan accept ${digest}`);
    const rerun = await merge("drift", ws, 33, "33bb33bb");
    expect(rerun.run.code).toBe(0);
    expect(rerun.run.stdout).toContain(`::notice title=edgeplan::applying the plan ${digest} that @alice accepted in pull request #33\n`);
    expect(await weightsOf("drift")).toEqual([{ [STABLE]: 6000, [CANARY]: 4000 }]);
  });

  it("two pull requests merged in quick succession: both applied, whichever runs first, and nothing no plan showed", async () => {
    const base = { "manifests/checkout.yaml": checkoutYaml(9000, 1000) };
    expect((await push("quick", checkout(base))).run.code).toBe(0);
    // A changes the weights, B adds a circuit breaker; both are planned against the same live state.
    const branchA = checkout({ "manifests/checkout.yaml": checkoutYaml(7000, 3000) });
    const branchB = checkout({ ...base, "manifests/routes.yaml": routeYaml });
    expect((await planPr("quick", branchA, 41, "41aa41aa")).run.code).toBe(0);
    expect((await planPr("quick", branchB, 42, "42aa42aa")).run.code).toBe(0);
    // A merges, then B: B's merge commit holds both. B's run takes the stack's lease first.
    const mergedB = checkout({ "manifests/checkout.yaml": checkoutYaml(7000, 3000), "manifests/routes.yaml": routeYaml });
    const runB = await merge("quick", mergedB, 42, "42bb42bb");
    expect(runB.run.code).toBe(0);
    // The circuit breaker and the inventory write that records it.
    expect(runB.runner.outputs().summary).toBe("Apply complete: 2 done. Converged: the live state matches the manifests within the targets.");
    expect(await weightsOf("quick")).toEqual([{ [STABLE]: 9000, [CANARY]: 1000 }]);
    const runA = await merge("quick", branchA, 41, "41bb41bb");
    expect(runA.run.code).toBe(0);
    expect(runA.runner.outputs().summary).toBe("Apply complete: 1 done. Converged: the live state matches the manifests within the targets.");
    expect(await weightsOf("quick")).toEqual([{ [STABLE]: 7000, [CANARY]: 3000 }]);
    const cb = await apiClient(server.url, server.apiKey).get(`/edges/https/${EDGE}/routes/${ROUTE}/circuit_breaker`);
    expect(cb.json).toMatchObject({ tripped_duration: 30, num_buckets: 12 });
    expect(stickyOf(41)).toContain("**Apply complete: 1 done.**");
    expect(stickyOf(42)).toContain("**Apply complete: 2 done.**");
    // The merged branch has nothing left to do.
    const after = await act("quick", mergedB, { event: "push", ref: "refs/heads/main", inputs: { command: "plan" } });
    expect(after.runner.outputs()).toMatchObject({ "has-changes": "false", exitcode: "0" });
  });

  it("a push that no pull request merged applies as before and says no reviewed plan was found", async () => {
    const { run } = await push("direct", checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000) }), "99cc99cc");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("::notice title=edgeplan::no reviewed plan was found: no pull request merged commit 99cc99c; the manifests are applied as they are\n");
    expect(await weightsOf("direct")).toEqual([{ [STABLE]: 9000, [CANARY]: 1000 }]);
    expect(gh.writes()).toEqual([]);
  });

  it("a scheduled apply with rollouts-only never writes a change that is not a rollout step", async () => {
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000) });
    const { run } = await act("sched", ws, { event: "schedule", inputs: { command: "apply", "rollouts-only": "true", comment: "false" } });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      "::error title=edgeplan::rollouts-only: the plan of stack sched has changes that are not rollout steps (weighted_backend.checkout), so nothing was written;",
    );
    expect(await weightsOf("sched")).toEqual([]);
  });

  it("a fork's pull request with a read-only token: the plan in the summary only, no failure", async () => {
    gh.readOnly = true;
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(0, 10000) });
    const { run, runner } = await act("fork", ws, { pr: { number: 43, headSha: "43aa43aa", fork: true } });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("the token is read-only (as it is for pull requests from forks); the plan is in the job summary");
    expect(runner.summary()).toContain("**Plan: 1 to create, 0 to update, 0 to delete.**");
    expect(gh.comments.get(`${REPO}#43`)).toBeUndefined();
  });
});
