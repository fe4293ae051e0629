/**
 * The request pipeline of the server, in the order every request goes through it:
 * operation id -> fail-rate fault -> auth -> rate and in-flight limits -> latency fault -> version header -> path
 * and method -> id format -> body (size, content type, JSON) -> client still connected -> handler, in one store
 * transaction committed before anything is answered (run again while it loses races, 503 past the store's budget)
 * -> drop-rate fault -> answer -> one log line. Errors at any step become the API's error body; nothing else
 * reaches the client.
 */
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { isId } from "../model/wire.js";
import type { KeyRing } from "./auth.js";
import { CertificateNeeded, type Handler, type Reply, type RequestContext, type ServerContext } from "./context.js";
import { CONTENTION_RETRY_AFTER_S, StoreContentionError } from "./contention.js";
import type { InflightLimiter } from "./faults.js";
import { HttpError } from "./http-error.js";
import { randomKsuid } from "./ksuid.js";
import type { Logger, LogLevel } from "./log.js";
import type { ServerMetrics } from "./metrics.js";
import { isOpsPath, serveOps, type OpsOptions } from "./ops.js";
import { parseJsonBody, readBody, type BodyResult } from "./request.js";
import { matchRoute, type Method } from "./router.js";
import type { RateGate, Store } from "./store.js";
import type { JsonObject } from "./validate.js";

export interface AppOptions {
  context: ServerContext;
  /** Where every request runs its one transaction. */
  store: Store;
  keys: KeyRing;
  /** Name of the version header (any case). */
  versionHeader: string;
  bodyLimit: number;
  latency?: [number, number] | undefined;
  failRate?: number | undefined;
  dropRate?: number | undefined;
  /** Decides the faults above: a number in [0, 1) per draw. */
  draw: () => number;
  rateGate?: RateGate | undefined;
  inflight?: InflightLimiter | undefined;
  /** The request log: one line per request. */
  logger: Logger;
  /** Counts every API request (not the operations paths); absent: metrics are off. */
  metrics?: ServerMetrics | undefined;
  /** The operations paths served on this port, and whether the server is draining. */
  ops: OpsOptions;
}

interface Outcome {
  status: number;
  /** The JSON body; for errors it is made from `error` once the operation id is known. */
  payload?: string;
  headers?: Record<string, string>;
  /** Destroy the connection instead of answering (drop-rate fault, or the client already left). */
  drop?: boolean;
  /** The client went away before its body arrived: nothing to answer. */
  aborted?: boolean;
  /** Close the connection after the answer (an oversized body that was not read to its end). */
  close?: boolean;
  error?: unknown;
}

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);
const BODYLESS_METHODS = new Set(["GET", "DELETE"]);

/** An operation id: `op_` + a KSUID. */
export function newOperationId(): string {
  return `op_${randomKsuid()}`;
}

function errorPayload(err: HttpError, operationId: string): string {
  const details = { ...err.details, operation_id: operationId };
  return JSON.stringify(
    err.code === undefined ? { status_code: err.status, msg: err.message, details } : { error_code: err.code, status_code: err.status, msg: err.message, details },
  );
}

function internalErrorPayload(operationId: string): string {
  return JSON.stringify({
    error_code: "ERR_NGROK_500",
    status_code: 500,
    msg: `the server failed to answer this request; report operation ${operationId}, which identifies it in the server's log`,
    details: { operation_id: operationId },
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function logPath(path: string): string {
  return path.length > 512 ? `${path.slice(0, 512)}...` : path;
}

/** The `request` listener of the HTTP server. */
export function createRequestListener(o: AppOptions): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const started = performance.now();
    const operationId = newOperationId();
    const method = req.method ?? "GET";
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? "" : url.slice(q + 1);
    if (isOpsPath(o.ops, path)) {
      const refused = path === "/metrics" ? keyRefusal(o.keys, req) : undefined;
      if (refused) {
        answer(req, res, refused, operationId, o.ops.closing());
        logRequest(o.logger, refused, method, path, operationId, started);
        return;
      }
      serveOps(o.ops, req, res, path).catch(() => req.socket.destroy());
      return;
    }
    const counted = o.metrics?.started(method);
    void run(o, req, method, path, query)
      .then((outcome) => {
        answer(req, res, outcome, operationId, o.ops.closing());
        if (o.metrics && counted) countOutcome(o.metrics, counted, path, outcome);
        logRequest(o.logger, outcome, method, path, operationId, started);
      })
      .catch((err: unknown) => {
        // Answering itself failed (the socket broke mid-write): nothing more can be sent on this connection.
        req.socket.destroy();
        counted?.(matchRoute(path)?.template ?? "unmatched", "failed");
        o.logger.write("error", "answer failed", { method, path: logPath(path), operation_id: operationId, error: String(err) });
      });
  };
}

/** Counts a request that ended: by route template (never the path: ids stay out of labels) and status. */
function countOutcome(metrics: ServerMetrics, counted: (route: string, status: string) => void, path: string, outcome: Outcome): void {
  const status = outcome.aborted ? "aborted" : outcome.drop ? "dropped" : String(outcome.status);
  counted(matchRoute(path)?.template ?? "unmatched", status);
  const code = outcome.error instanceof HttpError ? outcome.error.code : undefined;
  if (code === "ERR_NGROK_226") metrics.refused("rate_limit");
  else if (code === "ERR_NGROK_225") metrics.refused("inflight_limit");
}

/** Every step of one request up to its outcome; errors at any step become the outcome. */
async function run(o: AppOptions, req: IncomingMessage, method: string, path: string, query: string): Promise<Outcome> {
  let account: string | undefined;
  let holdsSlot = false;
  try {
    if (o.failRate && o.draw() < o.failRate) {
      throw new HttpError(503, "ERR_NGROK_503", "the server is unavailable (a fault injected by --fail-rate); retry later");
    }
    account = authenticate(o.keys, req);
    await o.rateGate?.take(account);
    if (o.inflight) {
      o.inflight.acquire(account);
      holdsSlot = true;
    }
    // Injected latency is spent holding the in-flight slot, as a slow server would.
    if (o.latency) await sleep(o.latency[0] + o.draw() * (o.latency[1] - o.latency[0]));
    checkVersion(req, o.versionHeader);
    const { handler, params } = resolveHandler(method, path);
    const read = await readRequestBody(req, method, o.bodyLimit);
    if ("outcome" in read) return read.outcome;
    // A request whose client has gone is not carried out: nobody would learn its outcome, and the client may
    // already be looking for what it did (a lost create is listed for before it is sent again).
    if (req.socket.destroyed) return { status: 0, drop: true, aborted: true };
    const reply = await runHandler(o, handler, { account, params, query, body: read.body });
    if (o.dropRate && WRITE_METHODS.has(method) && reply.status < 300 && o.draw() < o.dropRate) {
      return { status: reply.status, drop: true };
    }
    return reply.body === undefined ? { status: reply.status } : { status: reply.status, payload: JSON.stringify(reply.body) };
  } catch (err) {
    if (err instanceof HttpError) return { status: err.status, headers: err.headers, error: err };
    if (err instanceof StoreContentionError) return contended(err);
    return { status: 500, error: err };
  } finally {
    if (holdsSlot && account !== undefined) o.inflight?.release(account);
  }
}

/**
 * The 503 of a request whose transaction kept losing races past the store's budget: it was rolled back whole, so
 * the client may send it again after `Retry-After` (src/api/retry.ts does for PATCH, PUT and DELETE).
 */
function contended(err: StoreContentionError): Outcome {
  const msg = `the server is busy with concurrent changes to the same objects and did not carry out this request (nothing was changed); send it again after ${CONTENTION_RETRY_AFTER_S} s`;
  const error = new HttpError(503, "ERR_NGROK_503", msg, {}, { "Retry-After": String(CONTENTION_RETRY_AFTER_S) });
  error.cause = err;
  return { status: 503, headers: error.headers, error };
}

/**
 * Runs the handler in one store transaction, committed before this resolves. A handler that needs a certificate
 * made (CertificateNeeded) gets it made between two transactions, so that no transaction, and on SQLite no other
 * request, waits for a key pair.
 */
async function runHandler(o: AppOptions, handler: Handler, request: RequestContext): Promise<Reply> {
  try {
    return await o.store.transaction((tx) => handler(o.context, tx, request));
  } catch (err) {
    if (!(err instanceof CertificateNeeded)) throw err;
    const signingCertificate = await o.context.makeSigningCertificate(err.entityId);
    return o.store.transaction((tx) => handler(o.context, tx, { ...request, signingCertificate }));
  }
}

/**
 * The 401 of a request to `/metrics` on the API port without a valid key; undefined when its key is valid. The
 * metrics name the server's routes, load and store; the API port may face more than the operators, so they take a
 * key there (on `--admin-listen`, a private address, they take none).
 */
function keyRefusal(keys: KeyRing, req: IncomingMessage): Outcome | undefined {
  try {
    authenticate(keys, req);
    return undefined;
  } catch (err) {
    if (err instanceof HttpError) return { status: err.status, headers: err.headers, error: err };
    throw err;
  }
}

/** The account of the request's key; 401 for none, a wrong one, or several Authorization headers. */
function authenticate(keys: KeyRing, req: IncomingMessage): string {
  // Node keeps the first of several Authorization headers; a proxy in front may keep another one. A request
  // whose credential depends on who reads it is refused rather than served as either account.
  if ((req.headersDistinct.authorization?.length ?? 0) > 1) {
    throw new HttpError(
      401,
      "ERR_NGROK_201",
      "the request has several Authorization headers; send exactly one: Authorization: Bearer <API key>",
      {},
      { "WWW-Authenticate": "Bearer" },
    );
  }
  return keys.authenticate(req.headers.authorization);
}

/** The version header (named `name`, any case) must be `2`. */
function checkVersion(req: IncomingMessage, name: string): void {
  const version = req.headers[name.toLowerCase()];
  if (version === undefined) throw new HttpError(400, "ERR_NGROK_218", `the request has no ${name} header; send ${name}: 2`);
  if (version !== "2") {
    throw new HttpError(400, "ERR_NGROK_217", `${name} ${JSON.stringify(String(version).slice(0, 40))} is not supported; send ${name}: 2`);
  }
}

/** The handler of the path and method, with the path's ids checked: 404, 405 or 404 ERR_NGROK_222. */
function resolveHandler(method: string, path: string): { handler: Handler; params: string[] } {
  const match = matchRoute(path);
  if (!match) throw new HttpError(404, undefined, "Not Found", { path: logPath(path) });
  const handler = match.methods[method as Method];
  if (!handler) throw new HttpError(405, undefined, "Method Not Allowed", { path: logPath(path), method }, { Allow: match.allow });
  match.params.forEach((id, i) => {
    const prefix = match.prefixes[i] as string;
    if (!isId(id, [prefix])) {
      const shown = id.slice(0, 80);
      throw new HttpError(404, "ERR_NGROK_222", `"${shown}" is not a valid id here: expected ${prefix}_ followed by 27 base62 characters`, { id: shown });
    }
  });
  return { handler, params: match.params };
}

type BodyRead = { body: JsonObject | undefined } | { outcome: Outcome };

/** The JSON body (none for GET and DELETE), or the outcome that ends the request: client gone, body too large. */
async function readRequestBody(req: IncomingMessage, method: string, limit: number): Promise<BodyRead> {
  let read: BodyResult | Promise<BodyResult> = readBody(req, limit);
  if (read instanceof Promise) read = await read;
  if (read.kind === "aborted") return { outcome: { status: 0, drop: true, aborted: true } };
  if (read.kind === "too-large") {
    const err = new HttpError(413, "ERR_NGROK_413", `the body is larger than the limit of ${limit} bytes`);
    return { outcome: { status: 413, close: !read.drained, error: err } };
  }
  if (!BODYLESS_METHODS.has(method)) return { body: parseJsonBody(req.headersDistinct["content-type"], read.bytes) };
  if (read.bytes.length > 0) throw new HttpError(400, "ERR_NGROK_211", `a ${method} request takes no body; send it without one`);
  return { body: undefined };
}

/** Sends the outcome (or destroys the connection when it says to drop). */
function answer(req: IncomingMessage, res: ServerResponse, outcome: Outcome, operationId: string, draining: boolean): void {
  if (outcome.drop) {
    req.socket.destroy();
    return;
  }
  let payload = outcome.payload;
  if (outcome.error instanceof HttpError) payload = errorPayload(outcome.error, operationId);
  else if (outcome.status === 500) payload = internalErrorPayload(operationId);
  const headers: Record<string, string | number> = { "Ngrok-Operation-Id": operationId, ...outcome.headers };
  if (payload !== undefined) {
    headers["Content-Type"] = "application/json";
    headers["Content-Length"] = Buffer.byteLength(payload);
  }
  // While draining, a keep-alive connection is closed after its answer, so that its client reconnects elsewhere.
  if (outcome.close || draining) headers.Connection = "close";
  res.writeHead(outcome.status, headers);
  res.end(payload);
}

/**
 * The request's log line: method, path, status, ms, operation id, and why it failed (never the key, never a body).
 * A 500 is an error, another 5xx or a connection cut before the answer a warning, the rest info.
 */
function logRequest(logger: Logger, outcome: Outcome, method: string, path: string, operationId: string, started: number): void {
  const level: LogLevel = outcome.status === 500 ? "error" : outcome.status >= 500 || outcome.drop ? "warn" : "info";
  if (!logger.enabled(level)) return;
  const line: Record<string, unknown> = {
    method,
    path: logPath(path),
    status: outcome.status,
    ms: Math.round((performance.now() - started) * 100) / 100,
    operation_id: operationId,
  };
  if (outcome.aborted) line.aborted = true;
  else if (outcome.drop) line.dropped = true;
  if (outcome.error instanceof HttpError && outcome.error.code) line.error_code = outcome.error.code;
  if (outcome.status === 500) {
    const e = outcome.error;
    line.error = e instanceof Error ? (e.stack ?? e.message) : String(e);
  } else if (outcome.error instanceof HttpError && outcome.error.cause instanceof StoreContentionError) {
    line.error = outcome.error.cause.message;
  }
  logger.write(level, "request", line);
}

/**
 * The `clientError` listener: a request node could not parse, or whose headers or body came too slowly, gets an
 * error body with an operation id (and a log line) instead of a bare status line.
 */
export function createClientErrorListener(logger: Logger): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    if (err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    const operationId = newOperationId();
    const status = err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : err.code === "HPE_HEADER_OVERFLOW" ? 431 : 400;
    const msg =
      status === 408 ? "the request did not arrive in time; send it again" : status === 431 ? "the request headers are too large" : "the request is not valid HTTP/1.1";
    const payload = JSON.stringify({
      error_code: `ERR_NGROK_${status}`,
      status_code: status,
      msg,
      details: { operation_id: operationId },
    });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(payload)}\r\nNgrok-Operation-Id: ${operationId}\r\n\r\n${payload}`,
    );
    logger.write("info", "request", { status, operation_id: operationId, error: err.code ?? err.message });
  };
}
