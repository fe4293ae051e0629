/** The action's GitHub calls through the toolkit's Octokit, against the loopback stand-in of GitHub's REST API. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  ACTIONS_BOT,
  createGitHub,
  DRIFT_LABEL,
  findStickyComment,
  listIssueComments,
  statusOf,
  syncDriftIssue,
  writeStickyComment,
  type IssueRef,
  type Octokit,
} from "../../src/action/github.js";
import { startGitHubStandIn, type GitHubStandIn } from "../../bench/github-stand-in.js";

const TOKEN = "ghs_standInToken0123456789";
let gh: GitHubStandIn;

beforeAll(async () => {
  gh = await startGitHubStandIn(TOKEN);
});
afterAll(async () => {
  await gh.close();
});
beforeEach(() => {
  gh.calls.length = 0;
  gh.comments.clear();
  gh.issues.clear();
  gh.readOnly = false;
});

const issue = { owner: "acme", repo: "routes", number: 12 };

/** What a plan run does with the sticky comment: read every comment, find the action's own, edit it or create it. */
async function upsertStickyComment(octokit: Octokit, where: IssueRef, marker: string, body: string) {
  const existing = findStickyComment(await listIssueComments(octokit, where), marker, ACTIONS_BOT);
  return writeStickyComment(octokit, where, existing?.id, body);
}
const marker = "<!-- edgeplan:plan stack=prod -->";

describe("sticky comment", () => {
  it("creates the comment once, then edits it in place, even on a later page, with GitHub's headers", async () => {
    gh.seed("acme/routes#12", 120);
    const octokit = await createGitHub(`${gh.url}/`, TOKEN);
    const first = await upsertStickyComment(octokit, issue, marker, `${marker}\nfirst`);
    expect(first.action).toBe("created");
    gh.seed("acme/routes#12", 5);
    // A quote of the marker by someone else is not the sticky comment.
    gh.comments.get("acme/routes#12")!.push({ id: 1, body: `> ${marker}\n> first`, user: { login: "p", type: "User" } });
    const second = await upsertStickyComment(octokit, issue, marker, `${marker}\nsecond`);
    expect(second).toEqual({ action: "updated", id: first.id });
    const mine = gh.comments.get("acme/routes#12")!.filter((c) => c.body.startsWith(marker));
    expect(mine).toEqual([
      {
        id: first.id,
        body: `${marker}\nsecond`,
        user: { login: "github-actions[bot]", type: "Bot" },
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        html_url: `https://github.com/acme/routes/pull/12#issuecomment-${first.id}`,
      },
    ]);
    expect(gh.calls.map((c) => `${c.method} ${c.path} ${c.query.page ?? "-"}`)).toEqual([
      "GET /repos/acme/routes/issues/12/comments -",
      "GET /repos/acme/routes/issues/12/comments 2",
      "POST /repos/acme/routes/issues/12/comments -",
      "GET /repos/acme/routes/issues/12/comments -",
      "GET /repos/acme/routes/issues/12/comments 2",
      `PATCH /repos/acme/routes/issues/comments/${first.id} -`,
    ]);
    for (const call of gh.calls) {
      expect(call.authorization).toBe(`token ${TOKEN}`);
      expect(call.accept).toBe("application/vnd.github+json");
      expect(call.apiVersion).toBe("2022-11-28");
    }
    expect(gh.calls[0]!.query.per_page).toBe("100");
  });

  it("reports a read-only token as a 403 without the token in the message", async () => {
    gh.readOnly = true;
    const err = await upsertStickyComment(await createGitHub(gh.url, TOKEN), issue, marker, "x").catch((e: unknown) => e);
    expect(statusOf(err)).toBe(403);
    expect((err as Error).message).toContain("Resource not accessible by integration");
    expect((err as Error).message).not.toContain(TOKEN);
  });

  it("never follows a next link to another origin", async () => {
    const other = await startGitHubStandIn(TOKEN);
    const original = gh.url;
    try {
      // A stand-in whose links point elsewhere: the token is not sent there.
      gh.seed("acme/routes#12", 150);
      gh.url = other.url;
      const err = await upsertStickyComment(await createGitHub(original, TOKEN), issue, marker, "x").catch((e: unknown) => e);
      expect((err as Error).message).toBe(`GitHub API: refused to follow a link to ${other.url}, which is not ${original}`);
      expect(other.calls).toHaveLength(0);
      expect(gh.writes()).toHaveLength(0);
    } finally {
      gh.url = original;
      await other.close();
    }
  });
});

describe("drift issue", () => {
  const repo = { owner: "acme", repo: "routes" };
  const drift = (hasDrift: boolean, stack = "prod") => ({
    marker: `<!-- edgeplan:drift stack=${stack} -->`,
    title: `edgeplan: drift in stack ${stack}`,
    issueBody: `<!-- edgeplan:drift stack=${stack} -->\nopened`,
    commentBody: "again",
    resolvedBody: "resolved",
    hasDrift,
  });

  it("opens one issue per stack, comments on it while drift lasts, and closes it when none is left", async () => {
    const octokit = await createGitHub(gh.url, TOKEN);
    // Someone else's issue with the label, and a closed drift issue of the stack, are not the open one.
    gh.issues.set("acme/routes", [
      { number: 7, title: "other", body: "about drift", labels: [{ name: DRIFT_LABEL }], state: "open" },
      { number: 8, title: "old", body: "<!-- edgeplan:drift stack=prod -->\nold", labels: [{ name: DRIFT_LABEL }], state: "closed" },
    ]);
    expect(await syncDriftIssue(octokit, repo, drift(false))).toEqual({ action: "none" });
    const opened = await syncDriftIssue(octokit, repo, drift(true));
    expect(opened).toEqual({ action: "opened", number: 500 });
    expect(await syncDriftIssue(octokit, repo, drift(true, "staging"))).toEqual({ action: "opened", number: 501 });
    expect(await syncDriftIssue(octokit, repo, drift(true))).toEqual({ action: "commented", number: 500 });
    expect(await syncDriftIssue(octokit, repo, drift(false))).toEqual({ action: "closed", number: 500 });

    const issues = gh.issues.get("acme/routes")!;
    expect(issues.map((i) => [i.number, i.state, i.title, i.labels.map((l) => l.name)])).toEqual([
      [7, "open", "other", [DRIFT_LABEL]],
      [8, "closed", "old", [DRIFT_LABEL]],
      [500, "closed", "edgeplan: drift in stack prod", [DRIFT_LABEL]],
      [501, "open", "edgeplan: drift in stack staging", [DRIFT_LABEL]],
    ]);
    expect(issues[2]!.state_reason).toBe("completed");
    expect(gh.comments.get("acme/routes#500")!.map((c) => c.body)).toEqual(["again", "resolved"]);
    expect(gh.calls.filter((c) => c.method === "GET").every((c) => c.query.labels === DRIFT_LABEL && c.query.state === "open")).toBe(true);
  });
});
