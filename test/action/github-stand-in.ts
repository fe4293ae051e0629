/**
 * A loopback stand-in for the parts of the GitHub REST API the action calls: list the comments of an issue (paged,
 * with a `Link` header), create one, edit one. It records every call. In `readOnly` mode every write answers 403
 * the way GitHub answers a fork's token.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface StandInComment {
  id: number;
  body: string;
  user: { login: string; type: string };
}

export interface StandInCall {
  method: string;
  path: string;
  query: Record<string, string>;
  authorization: string | undefined;
  accept: string | undefined;
  apiVersion: string | undefined;
  body?: unknown;
}

export interface GitHubStandIn {
  url: string;
  token: string;
  calls: StandInCall[];
  /** Comments per `owner/repo#number`. */
  comments: Map<string, StandInComment[]>;
  readOnly: boolean;
  /** Adds comments by someone else, to make the list span several pages. */
  seed(issue: string, count: number): void;
  writes(): StandInCall[];
  close(): Promise<void>;
}

/** Starts the stand-in on 127.0.0.1, port 0. `token` is the only credential it accepts. */
export async function startGitHubStandIn(token: string, options: { defaultPerPage?: number } = {}): Promise<GitHubStandIn> {
  let nextId = 1000;
  const state: GitHubStandIn = {
    url: "",
    token,
    calls: [],
    comments: new Map(),
    readOnly: false,
    seed(issue, count) {
      const list = state.comments.get(issue) ?? [];
      for (let i = 0; i < count; i++) list.push({ id: nextId++, body: `comment ${i} by a person`, user: { login: "someone", type: "User" } });
      state.comments.set(issue, list);
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
    };
    if (text) call.body = JSON.parse(text);
    state.calls.push(call);

    if (req.headers.authorization !== `Bearer ${token}`) return send(res, 401, { message: "Bad credentials" });
    const write = req.method === "POST" || req.method === "PATCH";
    if (write && state.readOnly) return send(res, 403, { message: "Resource not accessible by integration" });

    const list = /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/.exec(url.pathname);
    if (list) {
      const key = `${list[1]}/${list[2]}#${list[3]}`;
      const comments = state.comments.get(key) ?? [];
      if (req.method === "GET") {
        const perPage = Math.min(100, Number(url.searchParams.get("per_page") ?? options.defaultPerPage ?? 30));
        const page = Number(url.searchParams.get("page") ?? "1");
        const pages = Math.max(1, Math.ceil(comments.length / perPage));
        const links: string[] = [];
        const pageUrl = (n: number): string => {
          const u = new URL(url.pathname, state.url);
          u.searchParams.set("per_page", String(perPage));
          u.searchParams.set("page", String(n));
          return u.toString();
        };
        if (page < pages) links.push(`<${pageUrl(page + 1)}>; rel="next"`, `<${pageUrl(pages)}>; rel="last"`);
        if (page > 1) links.push(`<${pageUrl(1)}>; rel="first"`, `<${pageUrl(page - 1)}>; rel="prev"`);
        const headers: Record<string, string> = links.length ? { link: links.join(", ") } : {};
        return send(res, 200, comments.slice((page - 1) * perPage, page * perPage), headers);
      }
      if (req.method === "POST") {
        const body = (call.body as { body?: unknown } | undefined)?.body;
        if (typeof body !== "string") return send(res, 422, { message: "body is missing" });
        if (body.length > 65_536) return send(res, 422, { message: "Body is too long (maximum is 65536 characters)" });
        const comment = { id: nextId++, body, user: { login: "github-actions[bot]", type: "Bot" } };
        comments.push(comment);
        state.comments.set(key, comments);
        return send(res, 201, comment);
      }
    }
    const edit = /^\/repos\/([^/]+)\/([^/]+)\/issues\/comments\/(\d+)$/.exec(url.pathname);
    if (edit && req.method === "PATCH") {
      const id = Number(edit[3]);
      for (const comments of state.comments.values()) {
        const comment = comments.find((c) => c.id === id);
        if (!comment) continue;
        const body = (call.body as { body?: unknown } | undefined)?.body;
        if (typeof body !== "string") return send(res, 422, { message: "body is missing" });
        if (body.length > 65_536) return send(res, 422, { message: "Body is too long (maximum is 65536 characters)" });
        comment.body = body;
        return send(res, 200, comment);
      }
    }
    return send(res, 404, { message: "Not Found" });
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(JSON.stringify(body));
}
