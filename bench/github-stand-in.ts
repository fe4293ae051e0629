/**
 * A loopback stand-in for the parts of the GitHub REST API the action's Octokit calls: list the comments of an issue
 * (paged, with a `Link` header), create one, edit one; list the open issues of a label, open one, close one; the
 * pull requests of a commit; a user's permission on the repository. It
 * records every call, with the time it came in (`performance.now()`). In `readOnly` mode every write answers 403
 * the way GitHub answers a fork's token. The tests of the action use it, and so does the `action-start` benchmark.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface StandInComment {
  id: number;
  body: string;
  user: { login: string; type: string };
  created_at?: string;
  html_url?: string;
}

/** A pull request as "list pull requests associated with a commit" gives it. */
export interface StandInPull {
  number: number;
  merged_at: string | null;
  merge_commit_sha: string | null;
  base: { ref: string };
  /** The head commit the pull request merged. */
  head?: { sha: string };
}

export interface StandInIssue {
  number: number;
  title: string;
  body: string;
  labels: { name: string }[];
  state: "open" | "closed";
  state_reason?: string | null;
}

export interface StandInCall {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  accept: string | undefined;
  apiVersion: string | undefined;
  body?: unknown;
  /** When the request had been read whole (performance.now() of this process). */
  at: number;
}

export interface GitHubStandIn {
  url: string;
  token: string;
  calls: StandInCall[];
  /** Comments per `owner/repo#number`. */
  comments: Map<string, StandInComment[]>;
  /** Issues per `owner/repo`. */
  issues: Map<string, StandInIssue[]>;
  /** Pull requests per commit SHA. */
  pulls: Map<string, StandInPull[]>;
  /** Permission of each login on every repository (`admin`, `write`, `read`); others are `read`. */
  permissions: Map<string, string>;
  readOnly: boolean;
  /** Adds comments by someone else, to make the list span several pages. */
  seed(issue: string, count: number): void;
  /** A person's comment on `owner/repo#number`, at `at` (RFC 3339). */
  comment(issue: string, login: string, body: string, at?: string): StandInComment;
  writes(): StandInCall[];
  close(): Promise<void>;
}

/**
 * Starts the stand-in on 127.0.0.1, port 0. `token` is the only credential it accepts, sent as GitHub takes it:
 * `Authorization: token T` (what Octokit sends) or `Bearer T`.
 */
export async function startGitHubStandIn(token: string, options: { defaultPerPage?: number } = {}): Promise<GitHubStandIn> {
  let nextId = 1000;
  let nextIssue = 500;
  const state: GitHubStandIn = {
    url: "",
    token,
    calls: [],
    comments: new Map(),
    issues: new Map(),
    pulls: new Map(),
    permissions: new Map(),
    readOnly: false,
    seed(issue, count) {
      const list = state.comments.get(issue) ?? [];
      for (let i = 0; i < count; i++) list.push({ id: nextId++, body: `comment ${i} by a person`, user: { login: "someone", type: "User" } });
      state.comments.set(issue, list);
    },
    comment(issue, login, body, at = "2026-11-25T13:04:00Z") {
      const id = nextId++;
      const comment = { id, body, user: { login, type: "User" }, created_at: at, html_url: `https://github.com/${issue.replace("#", "/pull/")}#issuecomment-${id}` };
      state.comments.set(issue, [...(state.comments.get(issue) ?? []), comment]);
      return comment;
    },
    writes: () => state.calls.filter((c) => c.method !== "GET"),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => send(res, 500, { message: String(err) }));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", state.url);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const call: StandInCall = {
      method: req.method ?? "",
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      authorization: req.headers.authorization,
      accept: req.headers.accept,
      apiVersion: req.headers["x-github-api-version"] as string | undefined,
      at: performance.now(),
    };
    if (text) call.body = JSON.parse(text);
    state.calls.push(call);

    if (req.headers.authorization !== `Bearer ${token}` && req.headers.authorization !== `token ${token}`) {
      return send(res, 401, { message: "Bad credentials" });
    }
    const write = req.method === "POST" || req.method === "PATCH";
    if (write && state.readOnly) return send(res, 403, { message: "Resource not accessible by integration" });
    const route = routes.find((r) => r.method === req.method && r.pattern.test(url.pathname));
    if (!route) return send(res, 404, { message: "Not Found" });
    const [, owner, repo, n] = route.pattern.exec(url.pathname) as RegExpExecArray;
    const answer = route.run({ repo: `${owner}/${repo}`, n: Number(n), key: n ?? "", url, body: (call.body ?? {}) as Record<string, unknown> });
    return send(res, answer.status, answer.body, answer.headers);
  }

  type Answer = { status: number; body: unknown; headers?: Record<string, string> };
  type Request = { repo: string; n: number; key: string; url: URL; body: Record<string, unknown> };

  /** A page of `items` as GitHub gives it, with `Link` headers to the next, last, first and previous pages. */
  function paged(url: URL, items: unknown[]): Answer {
    const perPage = Math.min(100, Number(url.searchParams.get("per_page") ?? options.defaultPerPage ?? 30));
    const page = Number(url.searchParams.get("page") ?? "1");
    const pages = Math.max(1, Math.ceil(items.length / perPage));
    const pageUrl = (p: number): string => {
      const u = new URL(url.pathname + url.search, state.url);
      u.searchParams.set("per_page", String(perPage));
      u.searchParams.set("page", String(p));
      return u.toString();
    };
    const links: string[] = [];
    if (page < pages) links.push(`<${pageUrl(page + 1)}>; rel="next"`, `<${pageUrl(pages)}>; rel="last"`);
    if (page > 1) links.push(`<${pageUrl(1)}>; rel="first"`, `<${pageUrl(page - 1)}>; rel="prev"`);
    return { status: 200, body: items.slice((page - 1) * perPage, page * perPage), headers: links.length ? { link: links.join(", ") } : {} };
  }

  function bodyText(body: Record<string, unknown>): string | Answer {
    if (typeof body.body !== "string") return { status: 422, body: { message: "body is missing" } };
    if (body.body.length > 65_536) return { status: 422, body: { message: "Body is too long (maximum is 65536 characters)" } };
    return body.body;
  }

  const routes: { method: string; pattern: RegExp; run: (r: Request) => Answer }[] = [
    { method: "GET", pattern: /^\/repos\/([^/]+)\/([^/]+)\/commits\/([0-9a-f]+)\/pulls$/, run: (r) => paged(r.url, state.pulls.get(r.key) ?? []) },
    {
      method: "GET",
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/collaborators\/([^/]+)\/permission$/,
      run: (r) => ({ status: 200, body: { permission: state.permissions.get(decodeURIComponent(r.key)) ?? "read", user: { login: decodeURIComponent(r.key) } } }),
    },
    { method: "GET", pattern: /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/, run: (r) => paged(r.url, state.comments.get(`${r.repo}#${r.n}`) ?? []) },
    {
      method: "POST",
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/,
      run: (r) => {
        const body = bodyText(r.body);
        if (typeof body !== "string") return body;
        const comments = state.comments.get(`${r.repo}#${r.n}`) ?? [];
        const id = nextId++;
        const html_url = `https://github.com/${r.repo}/pull/${r.n}#issuecomment-${id}`;
        const comment = { id, body, user: { login: "github-actions[bot]", type: "Bot" }, created_at: new Date().toISOString(), html_url };
        comments.push(comment);
        state.comments.set(`${r.repo}#${r.n}`, comments);
        return { status: 201, body: comment };
      },
    },
    {
      method: "PATCH",
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/issues\/comments\/(\d+)$/,
      run: (r) => {
        const comment = [...state.comments.values()].flat().find((c) => c.id === r.n);
        if (!comment) return { status: 404, body: { message: "Not Found" } };
        const body = bodyText(r.body);
        if (typeof body !== "string") return body;
        comment.body = body;
        return { status: 200, body: comment };
      },
    },
    {
      method: "GET",
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/issues()$/,
      run: (r) => {
        const want = r.url.searchParams.get("state") ?? "open";
        const labels = (r.url.searchParams.get("labels") ?? "").split(",").filter(Boolean);
        const issues = (state.issues.get(r.repo) ?? []).filter((i) => (want === "all" || i.state === want) && labels.every((l) => i.labels.some((x) => x.name === l)));
        return paged(r.url, issues);
      },
    },
    {
      method: "POST",
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/issues()$/,
      run: (r) => {
        const body = bodyText(r.body);
        if (typeof body !== "string") return body;
        if (typeof r.body.title !== "string" || r.body.title === "") return { status: 422, body: { message: "title is missing" } };
        const labels = Array.isArray(r.body.labels) ? (r.body.labels as string[]).map((name) => ({ name })) : [];
        const issue: StandInIssue = { number: nextIssue++, title: r.body.title, body, labels, state: "open" };
        state.issues.set(r.repo, [...(state.issues.get(r.repo) ?? []), issue]);
        return { status: 201, body: issue };
      },
    },
    {
      method: "PATCH",
      pattern: /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)$/,
      run: (r) => {
        const issue = (state.issues.get(r.repo) ?? []).find((i) => i.number === r.n);
        if (!issue) return { status: 404, body: { message: "Not Found" } };
        if (r.body.state === "open" || r.body.state === "closed") issue.state = r.body.state;
        if (typeof r.body.state_reason === "string") issue.state_reason = r.body.state_reason;
        return { status: 200, body: issue };
      },
    },
  ];

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}
