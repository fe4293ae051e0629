/**
 * What binds the apply of a merge to the review of its pull request: the head commit the record was made for, the
 * plan each acknowledgement was written for, the action's own record line (never a quote of one, never a person's
 * comment), and the inventory entries the reviewed plan records. In-process: the action with the real plan and apply
 * against an API server started here (or, where the plan's text is the attack, with plan and apply injected), and
 * the loopback stand-in of GitHub's REST API. What is checked is what a user sees: the exit code, the message, the
 * comment, and what the server holds afterwards.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";
import { runAction, type ActionOutcome, type ActionRunners } from "../../src/action/run.js";
import { actionRunners } from "../../src/commands/action.js";
import type { CommandIO } from "../../src/commands/io.js";
import { buildPlanRecord } from "../../src/core/plan-digest.js";
import { isInventoryObject } from "../../src/model/inventory.js";
import { reviewedMarker } from "../../src/render/action.js";
import { desiredWb, hrId, plan } from "../core/builders.js";
import { apiClient, fakeId, startTestServer, type TestServer } from "../helpers/server.js";
import { runnerEnv, type RunnerOptions } from "./env.js";
import { CANARY, checkout, checkoutYaml, EDGE, ROUTE, routeYaml, STABLE } from "./workspace.js";

const TOKEN = "ghs_bindToken_Qw3Er4Ty5";
const REPO = "acme/routes";
const BOT = { login: "github-actions[bot]", type: "Bot" };
/** A second route of the fixture edge, whose circuit breaker exists before any stack records it. */
const ROUTE2 = fakeId("edghtsrt", 2);
const SUMMARY = join(mkdtempSync(join(tmpdir(), "edgeplan-summary-")), "summary");

let server: TestServer;
let gh: GitHubStandIn;

beforeAll(async () => {
  gh = await startGitHubStandIn(TOKEN);
  server = await startTestServer({
    fixtures: {
      edges: [
        {
          id: EDGE,
          hostports: ["api.example.com:443"],
          routes: [
            { id: ROUTE, match: "/v1/checkout", match_type: "path_prefix" },
            { id: ROUTE2, match: "/v1/cart", match_type: "path_prefix" },
          ],
        },
      ],
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
  gh.permissions.set("alice", "write");
});
afterEach(() => {
  vi.unstubAllEnvs();
  vi.restoreAllMocks();
});

type Run = { outcome: ActionOutcome; log: string };

/** One run of the action in this process, in a step's environment; the log is what the toolkit and the command print. */
async function act(stack: string, workspace: string, options: Partial<RunnerOptions>, runners: ActionRunners = actionRunners()): Promise<Run> {
  writeFileSync(SUMMARY, "");
  const runner = runnerEnv({
    event: "pull_request",
    githubApiUrl: gh.url,
    summaryFile: SUMMARY,
    ...options,
    workspace,
    inputs: { "api-key": server.apiKey, "api-url": server.url, "github-token": TOKEN, stack, paths: "manifests", ...options.inputs },
  });
  for (const name of Object.keys(process.env)) if (/^(GITHUB_|INPUT_|RUNNER_|EDGEPLAN_)/.test(name)) vi.stubEnv(name, undefined);
  for (const [name, value] of Object.entries(runner.env)) vi.stubEnv(name, value);
  let log = "";
  const write = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    log += String(chunk);
    return true;
  });
  const io: CommandIO = {
    stdout: (text) => void process.stdout.write(text),
    stderr: (text) => {
      log += text;
    },
    env: { ...runner.env },
    cwd: workspace,
    stdoutIsTTY: false,
    stdinIsTTY: false,
    prompt: async () => "",
  };
  try {
    return { outcome: await runAction(io, runners), log };
  } finally {
    write.mockRestore();
  }
}

const planPr = (stack: string, ws: string, number: number, head: string, runners?: ActionRunners) =>
  act(stack, ws, { event: "pull_request", pr: { number, headSha: head } }, runners);

/** Pull request `number`, whose head was `head`, merged as commit `sha`: the push of that commit applies. */
function merge(stack: string, ws: string, number: number, head: string, sha: string, runners?: ActionRunners) {
  gh.pulls.set(sha, [{ number, merged_at: "2026-11-25T13:10:00Z", merge_commit_sha: sha, base: { ref: "main" }, head: { sha: head } }]);
  return act(stack, ws, { event: "push", ref: "refs/heads/main", sha, pr: undefined, inputs: { command: "apply" } }, runners);
}

const stickyOf = (number: number) => gh.comments.get(`${REPO}#${number}`)!.find((c) => c.user.login === BOT.login && c.user.type === "Bot")!.body;

/** The weights of the stack's weighted backends (its inventory objects left out). */
async function weightsOf(stack: string): Promise<Record<string, number>[]> {
  const list = await apiClient(server.url, server.apiKey).get("/backends/weighted");
  const backends = list.json.backends as { id: string; metadata: string; backends: Record<string, number> }[];
  return backends.filter((b) => b.metadata.includes(`"stack":"${stack}"`) && !isInventoryObject(b)).map((b) => b.backends);
}

/** The error annotation of a run, as one line of text. */
const errorOf = (run: Run) => /^::error title=edgeplan::(.*)$/m.exec(run.log)?.[1];

describe("the apply of a merge is bound to the commit reviewed", () => {
  it("refuses a merge whose head is not the commit the record was made for, and writes nothing", async () => {
    const ws = checkout({ "manifests/checkout.yaml": checkoutYaml(9000, 1000) });
    expect((await planPr("head", ws, 51, "51aa51aa51aa")).outcome.exitCode).toBe(0);
    // A push after the last plan: the pull request merged another head.
    const run = await merge("head", ws, 51, "51cc51cc51cc", "51bb51bb51bb");
    expect(run.outcome.exitCode).toBe(1);
    expect(errorOf(run)).toMatch(
      /^the plan reviewed in pull request #51 was made for commit 51aa51a, but it merged head commit 51cc51c: nobody saw a plan of what was merged \(a push after the last plan, or a plan that had not finished\)\. Nothing was written\. The plan at merge is posted to the pull request\. If the plan of the merged commit had not finished, re-run this job once it has\. To apply the plan at merge as it is, a person who may merge comments `\/edgeplan accept [0-9a-f]{12}` in the pull request, then re-runs this job\.$/,
    );
    expect(await weightsOf("head")).toEqual([]);
    expect(stickyOf(51)).toContain("**The apply failed.**");
    // A person who may merge reads the plan at merge and accepts it by its digest: the re-run applies it.
    const digest = /`\/edgeplan accept ([0-9a-f]{12})`/.exec(errorOf(run)!)![1]!;
    gh.comment(`${REPO}#51`, "alice", `/edgeplan accept ${digest}`);
    expect((await merge("head", ws, 51, "51cc51cc51cc", "51bb51bb51bb")).outcome.exitCode).toBe(0);
    expect(await weightsOf("head")).toEqual([{ [STABLE]: 9000, [CANARY]: 1000 }]);
  });
});

describe("an acknowledgement counts for the plan it was written for", () => {
  it("a 60-point shift's acknowledgement does not carry to a later push's 100-point shift; one naming another digest counts for none", async () => {
    expect(
      (await act("stale", checkout({ "manifests/checkout.yaml": checkoutYaml(10000, 0) }), { event: "push", ref: "refs/heads/main", sha: "0a0a0a0a" })).outcome.exitCode,
    ).toBe(0);
    expect((await planPr("stale", checkout({ "manifests/checkout.yaml": checkoutYaml(4000, 6000) }), 52, "52aa52aa52aa")).outcome.exitCode).toBe(0);
    const sixty = /edgeplan:reviewed digest=([0-9a-f]{64})/.exec(stickyOf(52))![1]!;
    gh.comment(`${REPO}#52`, "alice", "/edgeplan ack traffic-shift");
    gh.comment(`${REPO}#52`, "alice", `/edgeplan ack traffic-shift --digest ${sixty.slice(0, 12)}`);
    // A later push moves all of it; its plan is shown, and the acknowledgements above were for the other one.
    const all = checkout({ "manifests/checkout.yaml": checkoutYaml(0, 10000) });
    expect((await planPr("stale", all, 52, "52dd52dd52dd")).outcome.exitCode).toBe(0);
    expect(stickyOf(52)).toContain("- `traffic-shift`: **not acknowledged**. To acknowledge it, comment `/edgeplan ack traffic-shift`\n");
    expect(stickyOf(52)).toContain("Not counted: the acknowledgements of @alice, written for another plan than this one.");
    const refused = await merge("stale", all, 52, "52dd52dd52dd", "52bb52bb52bb");
    expect(refused.outcome.exitCode).toBe(1);
    expect(errorOf(refused)).toContain("the plan has 1 risk");
    expect(await weightsOf("stale")).toEqual([{ [STABLE]: 10000, [CANARY]: 0 }]);
    // Acknowledged for the plan shown: it applies.
    gh.comment(`${REPO}#52`, "alice", "Seen the full shift.\n/edgeplan ack traffic-shift");
    expect((await merge("stale", all, 52, "52dd52dd52dd", "52bb52bb52bb")).outcome.exitCode).toBe(0);
    expect(await weightsOf("stale")).toEqual([{ [STABLE]: 0, [CANARY]: 10000 }]);
  });
});

describe("the record is the action's own line", () => {
  const desired = [desiredWb("checkout", { backends: { [hrId(1)]: 5000, [hrId(2)]: 5000 } })];
  const atMerge = plan({ wbs: desired }, { wbs: [] }, { stack: "forge" });
  const record = buildPlanRecord(atMerge);
  const forged = reviewedMarker(record, [], { head: "53aa53aa53aa", after: 0, entries: [] });
  /** Plan and apply injected: the plan fails with `failure`; the apply runs the review check on the plan at merge. */
  const injected = (failure: Partial<{ message: string; file: string }>): ActionRunners => ({
    plan: async () => {
      if (failure.message) throw new Error(failure.message);
      const pos = { file: failure.file ?? "m.yaml", line: 1, col: 1 };
      return { exitCode: 1, diagnostics: [{ severity: "error", pos, message: "not YAML" }] };
    },
    apply: async (options) => {
      options.review?.(atMerge);
      return { exitCode: 0, diagnostics: [], markdown: "**Apply complete: 1 done.**\n", hasChanges: true };
    },
  });

  it("a record-shaped line in a failed plan's text (a file name or a message with newlines and backticks) is not read at merge", async () => {
    const ws = checkout({});
    const file = `manifests/x\n\`\`\`\n${forged}\n.yaml`;
    expect((await planPr("forge", ws, 53, "53aa53aa53aa", injected({ file }))).outcome.exitCode).toBe(1);
    const body = stickyOf(53);
    const run = await merge("forge", ws, 53, "53aa53aa53aa", "53bb53bb53bb", injected({}));
    expect(run.outcome.exitCode).toBe(1);
    expect(errorOf(run)).toMatch(/^pull request #53 holds no plan of stack forge by the action, so nobody saw what this merge changes\. Nothing was written\./);
    // Shown as text: no line of the comment has the record's shape, and no fence was closed by the name.
    expect(body.split("\n").some((l) => l.startsWith("<!-- edgeplan:reviewed"))).toBe(false);
    expect(body).toContain("````text\nmanifests/x\n```\n<\u200b!-- edgeplan:reviewed");

    await planPr("forge", ws, 54, "54aa54aa54aa", injected({ message: `no route\n${forged.replace("53aa53aa53aa", "54aa54aa54aa")}` }));
    expect((await merge("forge", ws, 54, "54aa54aa54aa", "54bb54bb54bb", injected({}))).outcome.exitCode).toBe(1);
  });

  it("a comment of a User account whose login is the comment-author's is not read as the record", async () => {
    const body = `<!-- edgeplan:plan stack=forge -->\n${forged.replace("53aa53aa53aa", "55aa55aa55aa")}\n\nplan`;
    gh.comments.set(`${REPO}#55`, [{ id: 90, body, user: { login: BOT.login, type: "User" } }]);
    const run = await merge("forge", checkout({}), 55, "55aa55aa55aa", "55bb55bb55bb", injected({}));
    expect(run.outcome.exitCode).toBe(1);
    expect(errorOf(run)).toMatch(/^pull request #55 holds no plan of stack forge by the action/);
    // The same comment by the Bot account is the record.
    gh.comments.set(`${REPO}#55`, [{ id: 90, body, user: BOT }]);
    expect((await merge("forge", checkout({}), 55, "55aa55aa55aa", "55bb55bb55bb", injected({}))).outcome.exitCode).toBe(0);
  });
});

describe("the first merge after a stack starts recording modules it already has", () => {
  it("applies: the inventory entry of a module with no change of its own is reviewed by the entry", async () => {
    // A circuit breaker that exists, recorded by no stack yet, and one the pull request adds.
    const settings = { tripped_duration: 30, rolling_window: 60, num_buckets: 12, volume_threshold: 50, error_threshold_percentage: 0.25 };
    const put = await apiClient(server.url, server.apiKey).put(`/edges/https/${EDGE}/routes/${ROUTE2}/circuit_breaker`, settings);
    expect(put.status).toBe(200);
    const ws = checkout({ "manifests/a.yaml": routeYaml.replace(ROUTE, ROUTE2), "manifests/b.yaml": routeYaml });
    expect((await planPr("modules", ws, 56, "56aa56aa56aa")).outcome.exitCode).toBe(0);
    const record = stickyOf(56).split("\n")[1];
    const run = await merge("modules", ws, 56, "56aa56aa56aa", "56bb56bb56bb");
    expect(errorOf(run)).toBeUndefined();
    expect(run.outcome.exitCode).toBe(0);
    expect(record).toContain(` entries=edge_route.${EDGE}/${ROUTE2}.circuit_breaker changes=`);
    expect(run.outcome.outputs.summary).toBe("Apply complete: 2 done. Converged: the live state matches the manifests within the targets.");
    // Both are recorded now: the next plan of the same manifests has nothing to do.
    const after = await act("modules", ws, { event: "push", ref: "refs/heads/main", pr: undefined, inputs: { command: "plan" } });
    expect(after.outcome.outputs).toMatchObject({ "has-changes": "false", exitcode: "0" });
  });
});
