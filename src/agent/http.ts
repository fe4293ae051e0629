/**
 * The agent's HTTP listener (docs/agent.md "HTTP API"): probes, `/metrics`, the JSON API over its stacks, the webhook
 * receiver and the status page. Every request goes: method -> route -> access (token, loopback) -> body (1 MiB) ->
 * handler -> one answer and one log line. Errors at any step become `{"error": "..."}`; a failure of the agent itself
 * is answered with a plain sentence, its cause only in the log. Nothing here logs a token, a body or a query.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { createServer, STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { HistoryEntry, StackStatus } from "../model/agent.js";
import { EdgeplanError } from "../model/errors.js";
import { isLoopbackHost, parseListenAddress } from "../model/syntax.js";
import { describeType, HttpError } from "../server/http-error.js";
import { closeServer, listen, urlHost } from "../server/listen.js";
import { createLogger, type Logger, type LogFormat } from "../server/log.js";
import { parseJsonBody, readBody } from "../server/request.js";
import type { AgentMetrics } from "./metrics.js";

/** What the listener asks of the running agent (src/agent/agent.ts implements it). */
export interface AgentControl {
  stacks(): Promise<StackStatus[]>;
  stack(name: string): Promise<StackStatus | null>;
  history(name: string, limit: number): Promise<HistoryEntry[]>;
  /** Starts a reconciliation now (does not wait for it); false when the stack is unknown. */
  reconcile(name: string): boolean;
  suspend(name: string, suspended: boolean): Promise<boolean>;
  /** Records an acknowledgement; returns an error text when refused (unknown stack, no such waiting rule/digest). */
  ack(name: string, rule: string, digest: string, by: string): Promise<string | null>;
  /** The webhook secret of a source (read from its SecretRef), null when the source has none; undefined when unknown. */
  webhookSecret(source: string): Promise<string | null | undefined>;
  /** A valid webhook call: fetch the source now. */
  fetchNow(source: string): void;
  /** `/readyz`: true once the first fetch of every source was tried and the store is open; false while draining. */
  ready(): boolean;
}

export interface AgentListenerOptions {
  /** `HOST:PORT` (`[::1]:PORT` for IPv6); port 0 picks a free one. */
  listen: string;
  /** The bearer token of changes (and of reads when they are not open); null: every change is refused. */
  token: string | null;
  control: AgentControl;
  metrics: AgentMetrics;
  /** Receives one line per request. */
  log: (line: string) => void;
  logFormat?: LogFormat;
  renderIndex: (stacks: StackStatus[]) => string;
  renderStack: (status: StackStatus, history: HistoryEntry[]) => string;
  /** Whether reads (pages, `/api/*`, `/metrics`) need no token; default: whether the host is a loopback address. */
  publicReads?: boolean;
  /** Body limit in bytes; default 1 MiB. */
  bodyLimit?: number;
  /** Time allowed to receive the request headers; default 10 s. */
  headersTimeoutMs?: number;
  /** Time allowed to receive the whole request; default 30 s. */
  requestTimeoutMs?: number;
}

export interface AgentListener {
  /** `http://HOST:PORT` the listener is bound to. */
  url: string;
  /** Stops listening; requests in flight get 2 s to be answered. The same promise for every call. */
  close(): Promise<void>;
}

/** Entries of a stack's history a page or `/history` shows without `?limit=`, and the most one may ask for. */
export const HISTORY_DEFAULT = 20;
export const HISTORY_MAX = 100;
const BODY_LIMIT = 1024 * 1024;
const CLOSE_TIMEOUT_MS = 2_000;
const CHALLENGE = { "WWW-Authenticate": "Bearer" };
const PAGE_HEADERS = {
  "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:",
  "Referrer-Policy": "no-referrer",
};

/** Who may call a route: anyone, a reader (open on loopback), a holder of the token, a webhook sender (HMAC). */
type Access = "open" | "read" | "change" | "hook";

interface Call {
  req: IncomingMessage;
  /** The route's `:name` segments, percent-decoded. */
  params: string[];
  query: URLSearchParams;
  /** The raw body of a POST (empty for GET). */
  body: Buffer;
}

interface Answer {
  status: number;
  body: string;
  type: string;
  headers?: Record<string, string>;
}

type Handler = (o: AgentListenerOptions, call: Call) => Promise<Answer>;

interface Route {
  /** Segments; `:x` matches any one non-empty segment. */
  pattern: string[];
  method: "GET" | "POST";
  access: Access;
  handle: Handler;
}

const json = (status: number, value: unknown): Answer => ({ status, body: JSON.stringify(value), type: "application/json" });
const text = (status: number, body: string): Answer => ({ status, body, type: "text/plain; charset=utf-8" });
const html = (body: string): Answer => ({ status: 200, body, type: "text/html; charset=utf-8", headers: PAGE_HEADERS });

/** A name from a path, as a message shows it: quoted, at most 100 characters. */
const shown = (name: string): string => JSON.stringify(name.slice(0, 100));

function unknownStack(name: string): HttpError {
  return new HttpError(404, undefined, `no stack ${shown(name)} in this agent's configuration; GET /api/stacks lists them`);
}

/** The stack's status, or 404. */
async function stackOf(o: AgentListenerOptions, name: string): Promise<StackStatus> {
  const status = await o.control.stack(name);
  if (status === null) throw unknownStack(name);
  return status;
}

/** `?limit=` of a history: a whole number from 1 to 100, default 20. */
function historyLimit(query: URLSearchParams): number {
  const raw = query.get("limit");
  if (raw === null) return HISTORY_DEFAULT;
  const n = /^\d{1,3}$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(n >= 1 && n <= HISTORY_MAX)) throw new HttpError(400, undefined, `limit must be a whole number from 1 to ${HISTORY_MAX}, got ${shown(raw)}`);
  return n;
}

const ROUTES: Route[] = [
  { pattern: ["healthz"], method: "GET", access: "open", handle: async () => text(200, "ok") },
  { pattern: ["readyz"], method: "GET", access: "open", handle: async (o) => (o.control.ready() ? text(200, "ready") : text(503, "not ready")) },
  {
    pattern: ["metrics"],
    method: "GET",
    access: "read",
    handle: async (o) => ({ status: 200, body: await o.metrics.registry.metrics(), type: o.metrics.registry.contentType }),
  },
  { pattern: [""], method: "GET", access: "read", handle: async (o) => html(o.renderIndex(await o.control.stacks())) },
  {
    pattern: ["stacks", ":stack"],
    method: "GET",
    access: "read",
    handle: async (o, { params: [name = ""] }) => html(o.renderStack(await stackOf(o, name), await o.control.history(name, HISTORY_DEFAULT))),
  },
  { pattern: ["api", "stacks"], method: "GET", access: "read", handle: async (o) => json(200, { stacks: await o.control.stacks() }) },
  { pattern: ["api", "stacks", ":stack"], method: "GET", access: "read", handle: async (o, c) => json(200, await stackOf(o, c.params[0] ?? "")) },
  {
    pattern: ["api", "stacks", ":stack", "history"],
    method: "GET",
    access: "read",
    handle: async (o, { params: [name = ""], query }) => {
      const limit = historyLimit(query);
      await stackOf(o, name);
      return json(200, { history: await o.control.history(name, limit) });
    },
  },
  {
    pattern: ["api", "stacks", ":stack", "reconcile"],
    method: "POST",
    access: "change",
    handle: async (o, { params: [name = ""] }) => {
      if (!o.control.reconcile(name)) throw unknownStack(name);
      return json(202, { accepted: true });
    },
  },
  { pattern: ["api", "stacks", ":stack", "suspend"], method: "POST", access: "change", handle: (o, c) => suspend(o, c.params[0] ?? "", true) },
  { pattern: ["api", "stacks", ":stack", "resume"], method: "POST", access: "change", handle: (o, c) => suspend(o, c.params[0] ?? "", false) },
  { pattern: ["api", "stacks", ":stack", "ack"], method: "POST", access: "change", handle: ack },
  { pattern: ["hooks", ":source"], method: "POST", access: "hook", handle: hook },
];

async function suspend(o: AgentListenerOptions, name: string, suspended: boolean): Promise<Answer> {
  if (!(await o.control.suspend(name, suspended))) throw unknownStack(name);
  return json(200, { stack: name, suspended });
}

const ACK_FIELDS = ["rule", "digest", "by"];

/** A string field of an ack body: present (unless optional), non-empty, one line, at most 200 characters. */
function ackField(body: Record<string, unknown>, field: string, optional = false): string | undefined {
  const value = body[field];
  if (value === undefined && optional) return undefined;
  if (typeof value !== "string") throw new HttpError(400, undefined, `${field}: expected a string, got ${value === undefined ? "nothing" : describeType(value)}`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (value === "" || value.length > 200 || /[\u0000-\u001f\u007f]/.test(value)) {
    throw new HttpError(400, undefined, `${field}: expected one line of 1 to 200 characters`);
  }
  return value;
}

/** `POST /api/stacks/NAME/ack` with `{"rule", "digest", "by"?}`: 200, or 409 with the agent's refusal. */
async function ack(o: AgentListenerOptions, { req, params: [name = ""], body }: Call): Promise<Answer> {
  const fields = parseJsonBody(req.headersDistinct["content-type"], body);
  const extra = Object.keys(fields).filter((k) => !ACK_FIELDS.includes(k));
  if (extra.length > 0) throw new HttpError(400, undefined, `unknown field ${shown(extra[0] as string)}: an acknowledgement takes rule, digest and by`);
  const rule = ackField(fields, "rule") as string;
  const digest = ackField(fields, "digest") as string;
  const by = ackField(fields, "by", true) ?? "api";
  await stackOf(o, name);
  const refused = await o.control.ack(name, rule, digest, by);
  if (refused !== null) throw new HttpError(409, undefined, refused);
  return json(200, { stack: name, rule, digest, by, acknowledged: true });
}

/** The signature headers a webhook may carry: GitHub's, and the same HMAC from any other sender. */
const SIGNATURE_HEADERS = ["x-hub-signature-256", "x-edgeplan-signature-256"];
const SIGNATURE = /^sha256=([0-9a-fA-F]{64})$/;

/**
 * Whether every signature header the request carries (at least one) is `sha256=HEX` of the HMAC-SHA256 of the raw
 * body under `secret`; compared in constant time, so the time of a refusal says nothing of how much was right.
 */
function signed(req: IncomingMessage, body: Buffer, secret: string): "missing" | "bad" | "good" {
  const values = SIGNATURE_HEADERS.flatMap((h) => req.headersDistinct[h] ?? []);
  if (values.length === 0) return "missing";
  const expected = createHmac("sha256", secret).update(body).digest();
  const good = values.map((v) => {
    const hex = SIGNATURE.exec(v.trim())?.[1];
    return hex !== undefined && timingSafeEqual(Buffer.from(hex, "hex"), expected);
  });
  return good.every(Boolean) ? "good" : "bad";
}

/** `POST /hooks/SOURCE`: a call signed with the source's webhook secret fetches the source at once. */
async function hook(o: AgentListenerOptions, { req, params: [source = ""], body }: Call): Promise<Answer> {
  const secret = await o.control.webhookSecret(source);
  // An unknown source and one without a secret get the same answer: a caller learns no source names from it.
  if (secret === undefined || secret === null) {
    throw new HttpError(404, undefined, `no webhook at /hooks/${encodeURIComponent(source.slice(0, 100))}: no source of that name has a webhook_secret`);
  }
  const verdict = signed(req, body, secret);
  if (verdict === "missing") {
    throw new HttpError(
      401,
      undefined,
      "the request has no X-Hub-Signature-256 or X-Edgeplan-Signature-256 header; sign the body with the source's webhook secret",
      {},
      CHALLENGE,
    );
  }
  if (verdict === "bad") {
    throw new HttpError(401, undefined, "the signature does not match the body: check that the sender's secret is the source's webhook_secret", {}, CHALLENGE);
  }
  if (req.headers["x-github-event"] === "ping") return json(200, { ok: true });
  o.control.fetchNow(source);
  return json(202, { accepted: true });
}

/**
 * Whether the request names a loopback host (`Host: 127.0.0.1:9400`, `localhost`, `[::1]`). Reads without a token are
 * served only then: a web page whose own name a DNS rebinding points at 127.0.0.1 sends its name, and is refused.
 */
function forLoopbackName(req: IncomingMessage): boolean {
  const host = req.headers.host;
  if (host === undefined) return false;
  try {
    return isLoopbackHost(new URL(`http://${host}`).hostname);
  } catch {
    return false;
  }
}

/** Why a request without a token is refused when none is configured. */
function tokenlessRefusal(o: AgentListenerOptions, access: Access): string {
  if (access === "change") return "changes through the agent's API are refused";
  if (o.publicReads) return "reads without a token are answered only for a loopback Host (127.0.0.1, [::1], localhost)";
  return "reads on a non-loopback address need a token";
}

/** Throws 401/403 unless the request may use a route of `access`. */
function authorize(o: AgentListenerOptions, digest: Buffer | null, access: Access, req: IncomingMessage): void {
  if (access === "open" || access === "hook" || (access === "read" && o.publicReads && forLoopbackName(req))) return;
  if (digest === null) throw new HttpError(403, undefined, `${tokenlessRefusal(o, access)}: no token is configured; start the agent with --token-file`);
  const headers = req.headersDistinct.authorization ?? [];
  if (headers.length !== 1) {
    const why = headers.length === 0 ? "the request has no Authorization header" : "the request has several Authorization headers";
    throw new HttpError(401, undefined, `${why}; send Authorization: Bearer TOKEN (the agent's --token-file)`, {}, CHALLENGE);
  }
  const m = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(headers[0] as string);
  const presented = createHash("sha256")
    .update(m?.[1] ?? "", "utf8")
    .digest();
  // Digests of equal length, compared in constant time: the time of a refusal says nothing of the token.
  if (!m || !timingSafeEqual(presented, digest)) {
    throw new HttpError(401, undefined, "the token is not valid for this agent; send Authorization: Bearer TOKEN with the agent's --token-file", {}, CHALLENGE);
  }
}

/** The route of `method` and `path`, with its decoded parameters; 404 or 405 (with `Allow`) when there is none. */
function findRoute(method: string, path: string): { route: Route; params: string[] } {
  const segments = path.slice(1).split("/");
  const matches = ROUTES.flatMap((route) => {
    if (route.pattern.length !== segments.length) return [];
    const params: string[] = [];
    const fits = route.pattern.every((p, i) => {
      const s = segments[i] as string;
      if (!p.startsWith(":")) return p === s;
      params.push(s);
      return s !== "";
    });
    return fits ? [{ route, params }] : [];
  });
  if (matches.length === 0) throw new HttpError(404, undefined, "not found: the agent serves /, /stacks/NAME, /api/stacks, /hooks/SOURCE, /healthz, /readyz and /metrics");
  const match = matches.find((m) => m.route.method === method);
  if (!match) throw new HttpError(405, undefined, `${method} is not allowed here`, {}, { Allow: matches.map((m) => m.route.method).join(", ") });
  try {
    return { route: match.route, params: match.params.map((p) => decodeURIComponent(p)) };
  } catch {
    throw new HttpError(400, undefined, "the path is not valid percent-encoding");
  }
}

/** The POST body within the limit; 413 beyond it. */
async function bodyOf(req: IncomingMessage, limit: number): Promise<Buffer | "aborted"> {
  if (req.method !== "POST") return Buffer.alloc(0);
  const read = await readBody(req, limit);
  if (read.kind === "aborted") return "aborted";
  if (read.kind === "too-large") throw new HttpError(413, undefined, `the body is larger than the limit of ${limit} bytes`, {}, read.drained ? {} : { Connection: "close" });
  return read.bytes;
}

/** Every step of one request up to its answer; `null` when the client left before its body arrived. */
async function run(o: AgentListenerOptions, digest: Buffer | null, req: IncomingMessage, path: string, query: string): Promise<Answer | null> {
  const method = req.method ?? "GET";
  if (method !== "GET" && method !== "POST") throw new HttpError(405, undefined, `${method} is not allowed: the agent answers GET and POST`, {}, { Allow: "GET, POST" });
  const { route, params } = findRoute(method, path);
  authorize(o, digest, route.access, req);
  const body = await bodyOf(req, o.bodyLimit ?? BODY_LIMIT);
  if (body === "aborted") return null;
  return route.handle(o, { req, params, query: new URLSearchParams(query), body });
}

/** The answer of a failed step: its `{"error"}`, or for anything but an HttpError a sentence without its cause. */
function failure(err: unknown): Answer {
  if (err instanceof HttpError) return { ...json(err.status, { error: err.message }), headers: err.headers };
  return json(500, { error: "the agent failed to answer this request; its log says why" });
}

function send(res: ServerResponse, answer: Answer, closing: boolean): void {
  const headers: Record<string, string | number> = {
    "Content-Type": answer.type,
    "Content-Length": Buffer.byteLength(answer.body),
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    ...answer.headers,
  };
  if (closing) headers.Connection = "close";
  res.writeHead(answer.status, headers);
  res.end(answer.body);
}

/** The request listener: one answer and one log line per request (method, path, status, ms; never a query or body). */
function requestListener(o: AgentListenerOptions, logger: Logger, closing: () => boolean): (req: IncomingMessage, res: ServerResponse) => void {
  const digest = o.token === null ? null : createHash("sha256").update(o.token, "utf8").digest();
  return (req, res) => {
    const started = performance.now();
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    let error: unknown;
    void run(o, digest, req, path, q < 0 ? "" : url.slice(q + 1))
      .catch((err: unknown) => {
        error = err;
        return failure(err);
      })
      .then((answer) => {
        if (answer === null) req.socket.destroy();
        else send(res, answer, closing());
        const status = answer?.status ?? 0;
        const line: Record<string, unknown> = { method: req.method, path: path.length > 512 ? `${path.slice(0, 512)}...` : path, status };
        line.ms = Math.round((performance.now() - started) * 100) / 100;
        if (status === 500) line.error = error instanceof Error ? error.message : String(error);
        logger.write(status === 500 ? "error" : "info", "request", line);
      })
      .catch(() => req.socket.destroy());
  };
}

/** A request node could not parse, or whose headers or body came too slowly: a JSON error instead of a bare status. */
function clientErrorListener(logger: Logger): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const status = err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : err.code === "HPE_HEADER_OVERFLOW" ? 431 : 400;
    const error =
      status === 408 ? "the request did not arrive in time; send it again" : status === 431 ? "the request headers are too large" : "the request is not valid HTTP/1.1";
    const payload = JSON.stringify({ error });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
    );
    logger.write("info", "request", { status, error: err.code ?? "invalid request" });
  };
}

/**
 * Binds the listener and resolves once it accepts connections; prints nothing (the caller prints `url`). Throws an
 * EdgeplanError for a malformed `listen`, an empty token, or an address that cannot be bound.
 */
export async function startAgentListener(options: AgentListenerOptions): Promise<AgentListener> {
  const { host, port } = parseListenAddress("--listen", options.listen);
  if (options.token === "") throw new EdgeplanError("the agent's token is empty: write one into the --token-file (e.g. openssl rand -hex 32)");
  const o = { ...options, publicReads: options.publicReads ?? isLoopbackHost(host) };
  const headersTimeout = o.headersTimeoutMs ?? 10_000;
  const logger = createLogger(o.log, o.logFormat ?? "json");
  let closing = false;
  const server = createServer(
    {
      headersTimeout,
      requestTimeout: Math.max(headersTimeout, o.requestTimeoutMs ?? 30_000),
      // Node checks the two timeouts on this interval (30 s by default): check often enough to honour them.
      connectionsCheckingInterval: Math.min(1_000, headersTimeout),
      keepAliveTimeout: 5_000,
    },
    requestListener(o, logger, () => closing),
  );
  server.on("clientError", clientErrorListener(logger));
  const bound = await listen(server, host, port, "--listen port");
  let closed: Promise<void> | undefined;
  return {
    url: `http://${urlHost(host)}:${bound}`,
    close: () => {
      closing = true;
      closed ??= closeServer(server, CLOSE_TIMEOUT_MS).then(() => undefined);
      return closed;
    },
  };
}
