/**
 * The few GitHub REST calls the action makes (issue comments of a pull request), over undici with the headers
 * GitHub documents. The token is sent to the configured API origin only and never appears in an error.
 */
import { Agent, request } from "undici";
import { EdgeplanError } from "../model/errors.js";
import { isStickyComment } from "./comment.js";

export const GITHUB_API_VERSION = "2022-11-28";

/** A pull request (an issue, for the comments API) in a repository. */
export interface IssueRef {
  owner: string;
  repo: string;
  number: number;
}

export interface IssueComment {
  id: number;
  body: string | null;
  html_url?: string;
}

/** A GitHub answer that was not a success. `status` 403 is what a read-only token (a fork's) receives. */
export class GitHubApiError extends EdgeplanError {
  override name = "GitHubApiError";
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly ghMessage: string,
    options?: { cause?: unknown },
  ) {
    super(`GitHub API ${method} ${path}: ${status}${ghMessage ? `: ${ghMessage}` : ""}`, options);
  }
}

/** How many pages of 100 comments are read at most while looking for the sticky comment. */
export const MAX_COMMENT_PAGES = 50;

export interface GitHubClientOptions {
  /** REST base URL, e.g. `https://api.github.com` (GITHUB_API_URL). */
  apiUrl: string;
  token: string;
  timeoutMs?: number;
  userAgent?: string;
}

/** A small GitHub REST client; call `close()` when done so no keep-alive socket holds the process open. */
export class GitHubClient {
  private readonly base: URL;
  private readonly agent: Agent;

  constructor(private readonly options: GitHubClientOptions) {
    this.base = new URL(options.apiUrl.replace(/\/+$/, "") + "/");
    const timeout = options.timeoutMs ?? 30_000;
    this.agent = new Agent({ headersTimeout: timeout, bodyTimeout: timeout, connections: 4 });
  }

  /** Every comment of an issue or pull request, oldest first, following the `Link: rel="next"` pages. */
  async listIssueComments(issue: IssueRef): Promise<IssueComment[]> {
    const all: IssueComment[] = [];
    let url: URL | undefined = this.url(`repos/${enc(issue.owner)}/${enc(issue.repo)}/issues/${issue.number}/comments`);
    url.searchParams.set("per_page", "100");
    for (let page = 0; url && page < MAX_COMMENT_PAGES; page++) {
      const res: { json: unknown; headers: Record<string, string | string[] | undefined> } = await this.call("GET", url);
      if (!Array.isArray(res.json)) throw new GitHubApiError("GET", url.pathname, 200, "the answer is not a list of comments");
      for (const c of res.json as unknown[]) {
        const item = c as Partial<IssueComment>;
        if (typeof item.id === "number") all.push({ id: item.id, body: typeof item.body === "string" ? item.body : null });
      }
      url = this.nextPage(res.headers.link);
    }
    return all;
  }

  async createIssueComment(issue: IssueRef, body: string): Promise<IssueComment> {
    const url = this.url(`repos/${enc(issue.owner)}/${enc(issue.repo)}/issues/${issue.number}/comments`);
    return commentOf((await this.call("POST", url, { body })).json);
  }

  async updateIssueComment(owner: string, repo: string, commentId: number, body: string): Promise<IssueComment> {
    const url = this.url(`repos/${enc(owner)}/${enc(repo)}/issues/comments/${commentId}`);
    return commentOf((await this.call("PATCH", url, { body })).json);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  private url(path: string): URL {
    return new URL(path, this.base);
  }

  /** The `rel="next"` link, only when it stays on the API's origin (the token is never sent elsewhere). */
  private nextPage(link: string | string[] | undefined): URL | undefined {
    const header = Array.isArray(link) ? link.join(",") : link;
    if (!header) return undefined;
    for (const part of header.split(",")) {
      const m = /<([^>]+)>\s*;(.*)/.exec(part.trim());
      const rel = /\brel="?([^";]*)"?/.exec(m?.[2] ?? "")?.[1] ?? "";
      if (m?.[1] && rel.split(/\s+/).includes("next")) {
        const next = new URL(m[1], this.base);
        return next.origin === this.base.origin ? next : undefined;
      }
    }
    return undefined;
  }

  private async call(
    method: "GET" | "POST" | "PATCH",
    url: URL,
    body?: unknown,
  ): Promise<{ json: unknown; headers: Record<string, string | string[] | undefined> }> {
    // GET and PATCH (full body) can be repeated safely; a POST whose outcome is unknown is not, so it is tried once.
    const attempts = method === "POST" ? 1 : 3;
    let lastError: unknown;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      try {
        const res = await request(url, {
          method,
          dispatcher: this.agent,
          headers: {
            authorization: `Bearer ${this.options.token}`,
            accept: "application/vnd.github+json",
            "x-github-api-version": GITHUB_API_VERSION,
            "user-agent": this.options.userAgent ?? "edgeplan-action",
            ...(body !== undefined ? { "content-type": "application/json" } : {}),
          },
          body: body !== undefined ? JSON.stringify(body) : null,
        });
        const text = await res.body.text();
        if (res.statusCode >= 200 && res.statusCode < 300) {
          return { json: text ? (JSON.parse(text) as unknown) : null, headers: res.headers };
        }
        const error = new GitHubApiError(method, url.pathname, res.statusCode, messageOf(text));
        if (![502, 503, 504].includes(res.statusCode) || attempt === attempts) throw error;
        lastError = error;
      } catch (err) {
        if (err instanceof GitHubApiError) throw err;
        lastError = err;
        if (attempt === attempts) {
          throw new GitHubApiError(method, url.pathname, 0, `no answer (${(err as Error).message})`, { cause: err });
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 250 * 2 ** attempt * Math.random()));
    }
    throw lastError;
  }
}

function enc(segment: string): string {
  return encodeURIComponent(segment);
}

function commentOf(json: unknown): IssueComment {
  const c = json as Partial<IssueComment> | null;
  if (!c || typeof c.id !== "number") throw new GitHubApiError("POST", "comment", 200, "the answer has no comment id");
  const out: IssueComment = { id: c.id, body: typeof c.body === "string" ? c.body : null };
  if (typeof c.html_url === "string") out.html_url = c.html_url;
  return out;
}

function messageOf(text: string): string {
  try {
    const m = (JSON.parse(text) as { message?: unknown }).message;
    if (typeof m === "string") return m.slice(0, 300);
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.slice(0, 300);
}

export type StickyResult = { action: "created" | "updated"; id: number };

/**
 * Creates the comment marked by `marker` on the pull request, or edits it in place when one exists (the first
 * whose body starts with the marker), so every push updates one comment instead of adding one.
 */
export async function upsertStickyComment(
  client: Pick<GitHubClient, "listIssueComments" | "createIssueComment" | "updateIssueComment">,
  issue: IssueRef,
  marker: string,
  body: string,
): Promise<StickyResult> {
  const comments = await client.listIssueComments(issue);
  const existing = comments.find((c) => isStickyComment(c.body, marker));
  if (existing) {
    await client.updateIssueComment(issue.owner, issue.repo, existing.id, body);
    return { action: "updated", id: existing.id };
  }
  const created = await client.createIssueComment(issue, body);
  return { action: "created", id: created.id };
}
