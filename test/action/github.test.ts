import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { GitHubApiError, GitHubClient, upsertStickyComment } from "../../src/action/github.js";
import { startGitHubStandIn, type GitHubStandIn } from "./github-stand-in.js";

const TOKEN = "ghs_standInToken0123456789";
let gh: GitHubStandIn;
let client: GitHubClient;

beforeAll(async () => {
  gh = await startGitHubStandIn(TOKEN);
  client = new GitHubClient({ apiUrl: `${gh.url}/`, token: TOKEN });
});
afterAll(async () => {
  await client.close();
  await gh.close();
});
beforeEach(() => {
  gh.calls.length = 0;
  gh.comments.clear();
  gh.readOnly = false;
});

const issue = { owner: "acme", repo: "routes", number: 12 };
const marker = "<!-- edgeplan:plan stack=prod -->";

describe("GitHub client", () => {
  it("sends GitHub's headers and follows every page of comments", async () => {
    gh.seed("acme/routes#12", 250);
    const comments = await client.listIssueComments(issue);
    expect(comments).toHaveLength(250);
    expect(comments[249]!.body).toBe("comment 249 by a person");
    expect(gh.calls.map((c) => `${c.method} ${c.path} ${c.query.page ?? "-"} ${c.query.per_page}`)).toEqual([
      "GET /repos/acme/routes/issues/12/comments - 100",
      "GET /repos/acme/routes/issues/12/comments 2 100",
      "GET /repos/acme/routes/issues/12/comments 3 100",
    ]);
    for (const call of gh.calls) {
      expect(call.authorization).toBe(`Bearer ${TOKEN}`);
      expect(call.accept).toBe("application/vnd.github+json");
      expect(call.apiVersion).toBe("2022-11-28");
    }
  });

  it("creates the sticky comment once, then edits it in place, even on a later page", async () => {
    gh.seed("acme/routes#12", 120);
    const first = await upsertStickyComment(client, issue, marker, `${marker}\nfirst`);
    expect(first.action).toBe("created");
    gh.seed("acme/routes#12", 5);
    // A quote of the marker by someone else is not the sticky comment.
    gh.comments.get("acme/routes#12")!.push({ id: 1, body: `> ${marker}\n> first`, user: { login: "p", type: "User" } });
    const second = await upsertStickyComment(client, issue, marker, `${marker}\nsecond`);
    expect(second).toEqual({ action: "updated", id: first.id });
    const mine = gh.comments.get("acme/routes#12")!.filter((c) => c.body.startsWith(marker));
    expect(mine).toEqual([{ id: first.id, body: `${marker}\nsecond`, user: { login: "github-actions[bot]", type: "Bot" } }]);
    expect(gh.writes().map((c) => `${c.method} ${c.path}`)).toEqual([
      "POST /repos/acme/routes/issues/12/comments",
      `PATCH /repos/acme/routes/issues/comments/${first.id}`,
    ]);
  });

  it("reports a read-only token as a 403 without the token in the message", async () => {
    gh.readOnly = true;
    const err = await upsertStickyComment(client, issue, marker, "x").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GitHubApiError);
    expect((err as GitHubApiError).status).toBe(403);
    expect((err as Error).message).toBe("GitHub API POST /repos/acme/routes/issues/12/comments: 403: Resource not accessible by integration");
    expect((err as Error).message).not.toContain(TOKEN);
  });

  it("never follows a next link to another origin", async () => {
    const other = await startGitHubStandIn("other-token");
    try {
      other.seed("acme/routes#12", 3);
      // A stand-in whose links point elsewhere: only the first page is read.
      const bad = new GitHubClient({ apiUrl: gh.url, token: TOKEN });
      const original = gh.url;
      gh.url = other.url;
      gh.seed("acme/routes#12", 150);
      try {
        const comments = await bad.listIssueComments(issue);
        expect(comments).toHaveLength(100);
        expect(other.calls).toHaveLength(0);
      } finally {
        gh.url = original;
        await bad.close();
      }
    } finally {
      await other.close();
    }
  });
});
