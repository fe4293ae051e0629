/**
 * The operations endpoints, never rate-limited, never faulted: `GET /healthz` (the process answers), `GET /readyz`
 * (this replica should get traffic: started, not draining, its store answering within a short time), both without a
 * key, and `GET /metrics` (Prometheus text), which takes the API key on the API port (app.ts) and none on
 * `--admin-listen`. A load balancer or an orchestrator probes them; they are served on the API port and on
 * `--admin-listen`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "./log.js";
import type { ServerMetrics } from "./metrics.js";
import type { Store } from "./store.js";

/** How long `/readyz` waits for the store before it answers 503. */
export const READY_TIMEOUT_MS = 1000;

export const OPS_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

/** Whether this replica should get traffic, and why not. */
export class Readiness {
  private phase: "starting" | "ready" | "draining" = "starting";
  private store: Store | undefined;
  private pending: Promise<string | undefined> | undefined;

  constructor(private readonly timeoutMs = READY_TIMEOUT_MS) {}

  /** The store is open and migrated, the fixtures loaded: from now on readiness is the store's answer. */
  started(store: Store): void {
    this.store = store;
    if (this.phase === "starting") this.phase = "ready";
  }

  /** The process is shutting down: not ready from now on, whatever the store says. */
  drain(): void {
    this.phase = "draining";
  }

  get draining(): boolean {
    return this.phase === "draining";
  }

  /** Ready as far as this process knows, without asking the store (the `edgeplan_ready` gauge). */
  get ready(): boolean {
    return this.phase === "ready";
  }

  /**
   * Undefined when ready, else the reason. Probes that arrive while the store is being asked share that one
   * question, so a flood of probes costs one query.
   */
  check(): Promise<string | undefined> {
    if (this.phase === "starting") return Promise.resolve("starting: the store is being opened and migrated");
    if (this.phase === "draining") return Promise.resolve("draining: this replica is shutting down; send requests to another one");
    const store = this.store as Store;
    this.pending ??= store
      .ping(this.timeoutMs)
      .then(
        () => undefined,
        (err: unknown) => `the store does not answer: ${err instanceof Error ? err.message : String(err)}`,
      )
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }
}

export interface OpsOptions {
  readiness: Readiness;
  /** Served at `/metrics` when set; absent: `/metrics` is not an operations path here. */
  metrics?: ServerMetrics | undefined;
  logger: Logger;
  /** Whether answers close their connection (the server is draining). */
  closing: () => boolean;
}

/** Whether `path` is answered by `serveOps` with these options. */
export function isOpsPath(o: OpsOptions, path: string): boolean {
  return OPS_PATHS.has(path) && (path !== "/metrics" || o.metrics !== undefined);
}

/** Answers an operations path (see `isOpsPath`); GET and HEAD only, else 405. Logged at debug level. */
export async function serveOps(o: OpsOptions, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  const started = performance.now();
  const method = req.method ?? "GET";
  let status: number;
  let body: string;
  let contentType = "application/json";
  if (method !== "GET" && method !== "HEAD") {
    status = 405;
    body = JSON.stringify({ status_code: 405, msg: `${path} answers GET and HEAD only` });
  } else if (path === "/healthz") {
    [status, body] = [200, JSON.stringify({ status: "ok" })];
  } else if (path === "/readyz") {
    const reason = await o.readiness.check();
    [status, body] = reason === undefined ? [200, JSON.stringify({ status: "ready" })] : [503, JSON.stringify({ status: "unavailable", reason })];
  } else {
    const rendered = await (o.metrics as ServerMetrics).render();
    [status, body, contentType] = [200, rendered.text, rendered.contentType];
  }
  const headers: Record<string, string | number> = { "Content-Type": contentType, "Content-Length": Buffer.byteLength(body), "Cache-Control": "no-store" };
  if (status === 405) headers.Allow = "GET, HEAD";
  if (o.closing()) headers.Connection = "close";
  res.writeHead(status, headers);
  res.end(method === "HEAD" ? undefined : body);
  if (o.logger.enabled("debug")) {
    o.logger.write("debug", "request", { method, path, status, ms: Math.round((performance.now() - started) * 100) / 100 });
  }
}

/** The listener of the `--admin-listen` server: the operations paths, 404 for anything else. */
export function createAdminListener(o: OpsOptions): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    if (isOpsPath(o, path)) {
      serveOps(o, req, res, path).catch(() => req.socket.destroy());
      return;
    }
    const body = JSON.stringify({ status_code: 404, msg: "Not Found: the admin address serves /healthz, /readyz and /metrics" });
    res.writeHead(404, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(body) });
    res.end(body);
  };
}
