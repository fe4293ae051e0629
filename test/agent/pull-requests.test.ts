/**
 * Acknowledgements the agent reads in the pull request that merged a commit (src/agent/pull-requests.ts), against the
 * loopback stand-in of GitHub: what counts for the agent's plan is an ack by a person who may merge that names its
 * digest, or one written after the Action showed a plan of that very digest; nothing else does, and the token never
 * appears in an error.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";
import { pullRequestAcks, type AckQuestion } from "../../src/agent/pull-requests.js";
import type { AgentSource, PullRequestSource } from "../../src/model/agent.js";
import { commentMarker, reviewedMarker } from "../../src/render/action.js";

const TOKEN = "ghs_agentReads_Qw3Er4Ty5";
const SHA = "4f".repeat(20);
const DIGEST = "ab12cd34ef56abcd".repeat(4);
const OTHER = "99".repeat(32);
const ISSUE = "acme/routes#7";

let gh: GitHubStandIn;
beforeAll(async () => {
  gh = await startGitHubStandIn(TOKEN);
});
afterAll(() => gh?.close());
beforeEach(() => {
  gh.comments.clear();
  gh.pulls.clear();
  gh.permissions.clear();
  gh.calls.length = 0;
  gh.permissions.set("alice", "write");
  gh.pulls.set(SHA, [{ number: 7, merged_at: "2026-11-25T13:10:00Z", merge_commit_sha: SHA, base: { ref: "main" }, head: { sha: "5e".repeat(20) } }]);
});

const source = (): AgentSource & { pullRequests: PullRequestSource } => ({
  name: "routing",
  url: "https://github.com/acme/routes.git",
  ref: "main",
  intervalMs: 60_000,
  timeoutMs: 10_000,
  pullRequests: { repository: "acme/routes", apiUrl: gh.url, token: { env: "GH_TOKEN" }, commentAuthor: "github-actions[bot]" },
});
const question: AckQuestion = { stack: "prod", environment: "production", sha: SHA, digest: DIGEST, rules: ["traffic-shift"] };
const read = (q: Partial<AckQuestion> = {}) => pullRequestAcks(source(), { ...question, ...q }, { GH_TOKEN: TOKEN });

/** The Action's comment of the stack, showing a plan of `digest` after the comments so far. */
function shown(digest: string, login = "github-actions[bot]", type = "Bot"): void {
  const after = Math.max(0, ...(gh.comments.get(ISSUE) ?? []).map((c) => c.id));
  const body = `${commentMarker("prod", "production")}\n${reviewedMarker({ digest, changes: {} }, ["traffic-shift"], { head: "5e".repeat(20), after, entries: [] })}\n## plan`;
  const list = gh.comments.get(ISSUE) ?? [];
  list.push({ id: 5000 + list.length, body, user: { login, type }, created_at: "2026-11-25T13:00:00Z" });
  gh.comments.set(ISSUE, list);
}

describe("acknowledgements in the merged pull request", () => {
  it("counts an ack naming the plan's digest, by a person who may merge", async () => {
    gh.comment(ISSUE, "alice", `/edgeplan ack traffic-shift --digest ${DIGEST.slice(0, 12)}`, "2026-11-25T13:05:00Z");
    expect(await read()).toEqual([{ stack: "prod", rule: "traffic-shift", digest: DIGEST, by: "@alice in pull request #7", at: "2026-11-25T13:05:00Z" }]);
    expect(gh.calls.every((c) => c.authorization === `token ${TOKEN}`)).toBe(true);
  });

  it("counts a plain ack written after the Action showed a plan of the same digest, and not one of another", async () => {
    gh.comment(ISSUE, "alice", "/edgeplan ack traffic-shift");
    shown(DIGEST);
    expect(await read()).toEqual([]);
    gh.comment(ISSUE, "alice", "/edgeplan ack traffic-shift");
    expect((await read()).map((a) => a.rule)).toEqual(["traffic-shift"]);
    expect(await read({ digest: OTHER })).toEqual([]);
    expect(await read({ environment: "staging" })).toEqual([]);
  });

  it("ignores acks by people who may not merge, a record written by a person, and commits no pull request merged", async () => {
    gh.comment(ISSUE, "bob", `/edgeplan ack traffic-shift --digest ${DIGEST.slice(0, 12)}`);
    shown(DIGEST, "mallory", "User");
    gh.comment(ISSUE, "alice", "/edgeplan ack traffic-shift");
    expect(await read()).toEqual([]);
    gh.comment(ISSUE, "alice", `<!-- /edgeplan ack traffic-shift --digest ${DIGEST.slice(0, 12)} -->`);
    expect(await read()).toEqual([]);
    expect(await read({ sha: "12".repeat(20) })).toEqual([]);
    expect(await read({ rules: ["no-such-policy"] })).toEqual([]);
  });

  it("fails with a message that names the repository and never the token", async () => {
    const wrong = pullRequestAcks({ ...source(), pullRequests: { ...source().pullRequests, token: { env: "GH_TOKEN" } } }, question, { GH_TOKEN: `${TOKEN}x` });
    const err = await wrong.then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).toMatch(/^GitHub: the pull request of commit 4f4f4f4 in acme\/routes could not be read \(/);
    expect(err?.message).not.toContain(TOKEN);
    await expect(pullRequestAcks(source(), question, {})).rejects.toThrow(/GH_TOKEN/);
  });
});
