/**
 * The GitHub REST calls of the action, through the Actions toolkit's Octokit (`@actions/github`): the sticky
 * comment of a pull request, the permission of a comment's author, the pull request that merged a commit, and the
 * drift issue of a stack. The token goes to the configured API origin only.
 */
import type { getOctokit } from "@actions/github";
import { EdgeplanError } from "../model/errors.js";

export const GITHUB_API_VERSION = "2022-11-28";

/** How many pages of 100 items are read at most while looking for the sticky comment or the drift issue. */
export const MAX_PAGES = 50;

/** The label of drift issues. */
export const DRIFT_LABEL = "edgeplan-drift";

export type Octokit = ReturnType<typeof getOctokit>;

export interface RepoRef {
  owner: string;
  repo: string;
}

/** A pull request (an issue, for the comments API) in a repository. */
export interface IssueRef extends RepoRef {
  number: number;
}

/**
 * An Octokit for `apiUrl` (GITHUB_API_URL) that sends GitHub's current media type and API version, and refuses a
 * request to any other origin (a `Link: rel="next"` elsewhere would otherwise take the token with it).
 *
 * `@actions/github` is imported here, when a post is made, not when the action starts: on import it parses the
 * event payload, and a payload that is not JSON would end the process before the action could say so.
 */
export async function createGitHub(apiUrl: string, token: string): Promise<Octokit> {
  const baseUrl = apiUrl.replace(/\/+$/, "");
  const origin = new URL(baseUrl).origin;
  const { getOctokit } = await import("@actions/github");
  const octokit = getOctokit(token, { baseUrl, userAgent: "edgeplan-action" });
  octokit.hook.before("request", (options) => {
    const url = String(options.url);
    if (/^[a-z][a-z0-9+.-]*:/i.test(url) && new URL(url).origin !== origin) {
      throw new EdgeplanError(`GitHub API: refused to follow a link to ${new URL(url).origin}, which is not ${origin}`);
    }
    options.headers.accept = "application/vnd.github+json";
    options.headers["x-github-api-version"] = GITHUB_API_VERSION;
  });
  return octokit;
}

/** The HTTP status of a failed GitHub call (403: a read-only token, as a fork's); undefined when none came back. */
export function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === "number" ? status : undefined;
}

/** True when `body` starts with `marker` (the marker is its first line, not a quote of it). */
export function startsWithMarker(body: string | null | undefined, marker: string): boolean {
  return typeof body === "string" && body.trimStart().startsWith(marker);
}

/** Items of every page (at most MAX_PAGES of 100), stopping at the first that `found` accepts. */
async function findPaged<T>(pages: AsyncIterable<{ data: T[] }>, found: (item: T) => boolean): Promise<T | undefined> {
  let page = 0;
  for await (const { data } of pages) {
    const hit = data.find(found);
    if (hit !== undefined || ++page >= MAX_PAGES) return hit;
  }
  return undefined;
}

export type StickyResult = { action: "created" | "updated"; id: number };

/** The login the workflow's token (GITHUB_TOKEN) writes comments as. */
export const ACTIONS_BOT = "github-actions[bot]";

/** A comment of a pull request, as the action reads it. */
export interface IssueComment {
  id: number;
  body: string;
  login: string;
  /** The author's account type: `Bot` for the workflow's token and for a GitHub App, `User` for a person. */
  type: string;
  /** RFC 3339, as GitHub gives it. */
  createdAt: string;
  url: string;
}

/** Every comment of a pull request (at most MAX_PAGES pages of 100), oldest first. */
export async function listIssueComments(octokit: Octokit, issue: IssueRef): Promise<IssueComment[]> {
  const { owner, repo, number } = issue;
  const pages = octokit.paginate.iterator(octokit.rest.issues.listComments, { owner, repo, issue_number: number, per_page: 100 });
  const comments: IssueComment[] = [];
  let page = 0;
  for await (const { data } of pages) {
    for (const c of data) comments.push({ id: c.id, body: c.body ?? "", login: c.user?.login ?? "", type: c.user?.type ?? "", createdAt: c.created_at, url: c.html_url });
    if (++page >= MAX_PAGES) break;
  }
  return comments;
}

/**
 * True when the action wrote `comment`: its author is `author` (the comment-author input) and a `Bot` account (the
 * workflow's token or a GitHub App). A person's account is never the action, whatever its login.
 */
export function isOwnComment(comment: IssueComment, author: string): boolean {
  return comment.login === author && comment.type === "Bot";
}

/**
 * The sticky comment among `comments`: the first whose body starts with `marker` and that the action wrote. Anyone
 * may write a comment that starts with the marker; only the action's own is read back or edited.
 */
export function findStickyComment(comments: readonly IssueComment[], marker: string, author: string): IssueComment | undefined {
  return comments.find((c) => isOwnComment(c, author) && startsWithMarker(c.body, marker));
}

/** Edits the sticky comment `existing` in place, or creates it when there is none. */
export async function writeStickyComment(octokit: Octokit, issue: IssueRef, existing: number | undefined, body: string): Promise<StickyResult> {
  const { owner, repo, number } = issue;
  if (existing !== undefined) {
    await octokit.rest.issues.updateComment({ owner, repo, comment_id: existing, body });
    return { action: "updated", id: existing };
  }
  const created = await octokit.rest.issues.createComment({ owner, repo, issue_number: number, body });
  return { action: "created", id: created.data.id };
}

/** True when `login` may push to (and so merge into) the repository: admin, maintain or write. */
export async function canMerge(octokit: Octokit, repo: RepoRef, login: string): Promise<boolean> {
  try {
    const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({ ...repo, username: login });
    return data.permission === "admin" || data.permission === "write";
  } catch (err) {
    // Not a collaborator (404) is no permission; anything else is not taken as one either.
    if (statusOf(err) === 404) return false;
    throw err;
  }
}

/** A merged pull request: its number and the head commit it merged (undefined when GitHub did not say). */
export interface MergedPullRequest {
  number: number;
  headSha: string | undefined;
}

/**
 * The pull request merged into `branch` by commit `sha` (GitHub's "list pull requests associated with a commit"),
 * or undefined for a push no pull request made.
 */
export async function findMergedPullRequest(octokit: Octokit, repo: RepoRef, sha: string, branch: string | undefined): Promise<MergedPullRequest | undefined> {
  const { data } = await octokit.rest.repos.listPullRequestsAssociatedWithCommit({ ...repo, commit_sha: sha, per_page: 100 });
  const merged = data.filter((pr) => pr.merged_at && (branch === undefined || pr.base.ref === branch));
  // The merge commit names the pull request it merged; a commit also on other merged branches is matched by it first.
  const pr = merged.find((p) => p.merge_commit_sha === sha) ?? merged[0];
  if (!pr) return undefined;
  const headSha = typeof pr.head?.sha === "string" ? pr.head.sha.toLowerCase() : undefined;
  return { number: pr.number, headSha };
}

/** The open drift issue whose body starts with `marker`, if any. */
async function findDriftIssue(octokit: Octokit, repo: RepoRef, marker: string): Promise<number | undefined> {
  const pages = octokit.paginate.iterator(octokit.rest.issues.listForRepo, { ...repo, state: "open", labels: DRIFT_LABEL, per_page: 100 });
  return (await findPaged(pages, (i) => !i.pull_request && startsWithMarker(i.body, marker)))?.number;
}

export type DriftResult = { action: "opened" | "commented" | "closed" | "none"; number?: number };

/**
 * Keeps one open issue per stack while live state differs from the manifests: opens it (labelled edgeplan-drift)
 * on the first drift, comments on it on each later one, and closes it with a comment once a plan finds no changes.
 */
export async function syncDriftIssue(
  octokit: Octokit,
  repo: RepoRef,
  drift: { marker: string; title: string; issueBody: string; commentBody: string; resolvedBody: string; hasDrift: boolean },
): Promise<DriftResult> {
  const number = await findDriftIssue(octokit, repo, drift.marker);
  if (!drift.hasDrift) {
    if (number === undefined) return { action: "none" };
    await octokit.rest.issues.createComment({ ...repo, issue_number: number, body: drift.resolvedBody });
    await octokit.rest.issues.update({ ...repo, issue_number: number, state: "closed", state_reason: "completed" });
    return { action: "closed", number };
  }
  if (number !== undefined) {
    await octokit.rest.issues.createComment({ ...repo, issue_number: number, body: drift.commentBody });
    return { action: "commented", number };
  }
  const created = await octokit.rest.issues.create({ ...repo, title: drift.title, body: drift.issueBody, labels: [DRIFT_LABEL] });
  return { action: "opened", number: created.data.number };
}
