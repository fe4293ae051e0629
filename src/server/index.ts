/**
 * The API server of docs/api.md, as a library: `startServer` is what `edgeplan serve`, the `--local` mode and the
 * tests run. It listens on node's HTTP stack, keeps its state in SQLite (a file, or memory) or in PostgreSQL (shared
 * by several replicas), and answers every request through the pipeline of app.ts.
 */
import { createServer, type Server } from "node:http";
import { createServer as createTlsServer, type Server as TlsServer } from "node:https";
import { EdgeplanError } from "../model/errors.js";
import { LIMITS } from "../model/wire.js";
import { createClientErrorListener, createRequestListener } from "./app.js";
import { accountForKey, KeyRing } from "./auth.js";
import type { ServerContext } from "./context.js";
import { faultDraws, InflightLimiter } from "./faults.js";
import { applyFixtures, validateFixtures, type Fixtures, type FixturesInput, type FixturesSummary } from "./fixtures.js";
import { closeServer, listen, urlHost } from "./listen.js";
import { createLogger, type Logger, type LogFormat, type LogLevel } from "./log.js";
import { ServerMetrics } from "./metrics.js";
import { createAdminListener, Readiness, type OpsOptions } from "./ops.js";
import { makeSigningCertificate } from "./saml-certificate.js";
import { openSqliteStore } from "./sqlite-store.js";
import type { Store } from "./store.js";
import { readTlsFiles, tlsError } from "./tls-files.js";

export { accountForKey } from "./auth.js";
export {
  loadFixturesFile,
  applyFixtures,
  provisionServer,
  validateFixtures,
  type Fixtures,
  type FixturesInput,
  type FixturesSummary,
  type ProvisionNeeds,
} from "./fixtures.js";
export { faultDraws } from "./faults.js";
export { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from "./log.js";
export type { Store, StoreTx, WeightedBackendRecord, EdgeRecord, RouteRecord, FixtureBackendRecord, StoredSaml } from "./store.js";

export const DEFAULT_PORT = 4780;
export const DEFAULT_HOST = "127.0.0.1";
export const DEFAULT_SP_BASE = "https://idp.edgeplan.localhost";
export const DEFAULT_VERSION_HEADER = "Ngrok-Version";
export const DEFAULT_POOL_SIZE = 10;

export interface ServerOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 4780; 0 picks a free port. */
  port?: number;
  /** SQLite file that persists the state; absent (and no `databaseUrl`): in memory. */
  dataFile?: string;
  /** PostgreSQL URL (`postgres://` or `postgresql://`) of a database shared by every replica; not with `dataFile`. */
  databaseUrl?: string;
  /** Connections of the PostgreSQL pool; default 10. */
  poolSize?: number;
  /** At least one; each key is its own account. */
  apiKeys: string[];
  /** Loaded into the first key's account at start. */
  fixtures?: Fixtures | FixturesInput;
  /** Base of every `uri` the server writes; default `http://HOST:PORT` of the listening socket. */
  publicUrl?: string;
  /** Base of the generated SAML URLs; default https://idp.edgeplan.localhost. */
  spBase?: string;
  /** Name of the version header; default Ngrok-Version. */
  versionHeader?: string;
  /** Delay every request by a uniform random time in [min, max] ms. */
  latency?: [number, number];
  /** Probability that a request is answered 503 before anything is done. */
  failRate?: number;
  /** Probability that a successful write is committed and its connection destroyed before the answer. */
  dropRate?: number;
  /** Seed of the fault draws, so a run's faults can be met again; default: Math.random. */
  faultSeed?: number;
  /** Requests per rolling window, per key (429 ERR_NGROK_226); over PostgreSQL, shared by every replica. */
  rateLimit?: { count: number; windowMs: number };
  /** Requests in flight at once, per key and per replica (429 ERR_NGROK_225). */
  maxInflight?: number;
  /** Request body limit in bytes; default 1 MiB. */
  bodyLimit?: number;
  /** Time allowed to receive the request headers; default 10 s. */
  headersTimeoutMs?: number;
  /** Time allowed to receive the whole request; default 30 s. */
  requestTimeoutMs?: number;
  /** Receives one line per request (probes only at level debug); absent: no request log. */
  log?: (line: string) => void;
  /** Receives the notices: faults that are on, fixtures loaded, the steps of a drain, TLS reloads. */
  notice?: (line: string) => void;
  /** Format of every log and notice line; default json. */
  logFormat?: LogFormat;
  /** Least level of the lines written; default info. */
  logLevel?: LogLevel;
  /** Serve `/metrics` on the API port too (it is always served on `adminListen`). */
  metrics?: boolean;
  /** A second, plain-HTTP address serving only `/healthz`, `/readyz` and `/metrics`; listening while the store opens. */
  adminListen?: { host: string; port: number };
  /** PEM files of the certificate (chain) and key: the API is served over HTTPS; `reloadTls` reads them again. */
  tls?: { certFile: string; keyFile: string };
}

/** How a drain goes: see `RunningServer.drain`. */
export interface DrainOptions {
  /** Time between `/readyz` turning 503 and the listening socket closing; 0 closes it at once. */
  delayMs: number;
  /** Time the requests in flight get once the socket is closed; then their connections are cut. */
  timeoutMs: number;
}

export interface RunningServer {
  /** `http://HOST:PORT` the server listens on. */
  url: string;
  port: number;
  host: string;
  /** Base of the `uri` fields it writes (`publicUrl`, else `url`). */
  baseUrl: string;
  store: Store;
  /** The account of the first API key (where fixtures go). */
  account: string;
  /** What loading the fixtures did, when fixtures were given. */
  fixtures?: FixturesSummary;
  /** `http://HOST:PORT` of the admin address, when `adminListen` was given. */
  adminUrl?: string;
  /** The metrics, when they are on (`metrics` or `adminListen`). */
  metrics?: ServerMetrics;
  /** The notices' logger (for what the command around the server has to say). */
  logger: Logger;
  /**
   * Drains: `/readyz` answers 503 at once and every answer closes its connection; after `delayMs` the listening
   * socket closes and idle connections with it; requests in flight get `timeoutMs` to be answered, then their
   * connections are cut; then the store closes. Resolves when all that is done (the same promise for every call).
   */
  drain(options: DrainOptions): Promise<void>;
  /** A drain without delay and with 5 s for the requests in flight. */
  close(): Promise<void>;
  /**
   * Reads the TLS certificate and key files again, without blocking, for new connections; rejects with an
   * EdgeplanError (a file that cannot be read, is not a regular file, is too large, or is not PEM), the old ones kept.
   */
  reloadTls(): Promise<void>;
}

type ApiServer = Server | TlsServer;

function trimSlash(url: string): string {
  return url.replace(/\/+$/, "");
}

function checkUrl(flag: string, url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new EdgeplanError(`${flag} "${url}" is not a URL; give one like https://api.example.com`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new EdgeplanError(`${flag} "${url}" must start with http:// or https://`);
  }
  if (parsed.search || parsed.hash) throw new EdgeplanError(`${flag} "${url}" must not have a query or fragment`);
  return trimSlash(url);
}

function faultNotices(o: ServerOptions): string[] {
  const notices: string[] = [];
  if (o.latency) {
    const [lo, hi] = o.latency;
    notices.push(`fault on: every request is delayed ${lo === hi ? `${lo}` : `${lo}-${hi}`} ms (--latency)`);
  }
  if (o.failRate) notices.push(`fault on: ${o.failRate * 100}% of requests are answered 503 before anything is done (--fail-rate)`);
  if (o.dropRate) {
    notices.push(`fault on: ${o.dropRate * 100}% of successful writes are committed, then their connection is cut before the answer (--drop-rate)`);
  }
  if (o.faultSeed !== undefined && (o.latency || o.failRate || o.dropRate)) {
    notices.push(`faults are drawn from seed ${o.faultSeed}: the same requests in the same order meet the same faults (--fault-seed)`);
  }
  if (o.rateLimit) notices.push(`limit on: ${o.rateLimit.count} requests per ${o.rateLimit.windowMs} ms per API key, else 429 (--rate-limit)`);
  if (o.maxInflight) notices.push(`limit on: ${o.maxInflight} requests in flight per API key, else 429 (--max-inflight)`);
  return notices;
}

/** The options, checked, with their defaults. */
interface Settings {
  keys: string[];
  host: string;
  port: number;
  spBase: string;
  publicUrl: string | undefined;
  fixtures: Fixtures | undefined;
  account: string;
  headersTimeout: number;
  requestTimeout: number;
}

function checkOptions(options: ServerOptions): Settings {
  const keys = options.apiKeys.filter((k) => k !== "");
  if (keys.length === 0) {
    throw new EdgeplanError("serve needs at least one API key: pass --api-key KEY or set EDGEPLAN_SERVE_API_KEYS=KEY1,KEY2");
  }
  if (options.dataFile !== undefined && options.databaseUrl !== undefined) {
    throw new EdgeplanError("--data and --database (or EDGEPLAN_SERVE_DATABASE_URL) both name a store; give one: --data FILE for SQLite, --database URL for PostgreSQL");
  }
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  if (headersTimeout > requestTimeout) {
    throw new EdgeplanError(
      `--headers-timeout ${headersTimeout} is longer than --request-timeout ${requestTimeout}; the headers are part of the request, so give a shorter headers timeout`,
    );
  }
  return {
    keys,
    host: options.host ?? DEFAULT_HOST,
    port: options.port ?? DEFAULT_PORT,
    spBase: checkUrl("--sp-base", options.spBase ?? DEFAULT_SP_BASE),
    publicUrl: options.publicUrl === undefined ? undefined : checkUrl("--public-url", options.publicUrl),
    fixtures: options.fixtures === undefined ? undefined : validateFixtures(options.fixtures),
    account: accountForKey(keys[0] as string),
    headersTimeout,
    requestTimeout,
  };
}

/** The store the options name: PostgreSQL for `databaseUrl`, else SQLite (the file, or memory). */
export async function openStore(options: Pick<ServerOptions, "dataFile" | "databaseUrl" | "poolSize">): Promise<Store> {
  if (options.databaseUrl === undefined) return openSqliteStore(options.dataFile);
  // Loaded only here: the embedded store starts without the PostgreSQL driver.
  const { openPgStore } = await import("./pg-store.js");
  return openPgStore(options.databaseUrl, options.poolSize ?? DEFAULT_POOL_SIZE);
}

function createApiServer(
  options: ServerOptions,
  settings: Settings,
  store: Store,
  context: ServerContext,
  parts: ServerParts,
  tlsFiles?: { cert: Buffer; key: Buffer },
): ApiServer {
  const listener = createRequestListener({
    context,
    store,
    keys: new KeyRing(settings.keys),
    versionHeader: options.versionHeader ?? DEFAULT_VERSION_HEADER,
    bodyLimit: options.bodyLimit ?? LIMITS.bodyBytes,
    latency: options.latency,
    failRate: options.failRate,
    dropRate: options.dropRate,
    draw: faultDraws(options.faultSeed),
    rateGate: options.rateLimit ? store.rateGate(options.rateLimit.count, options.rateLimit.windowMs) : undefined,
    inflight: options.maxInflight ? new InflightLimiter(options.maxInflight) : undefined,
    logger: parts.requests,
    metrics: parts.metrics,
    ops: { ...parts.ops, metrics: options.metrics ? parts.metrics : undefined },
  });
  const httpOptions = {
    headersTimeout: settings.headersTimeout,
    requestTimeout: settings.requestTimeout,
    // Node checks the two timeouts on this interval (30 s by default): check often enough to honour them.
    connectionsCheckingInterval: Math.min(1_000, settings.headersTimeout),
    keepAliveTimeout: 5_000,
  };
  let server: ApiServer;
  if (options.tls && tlsFiles) {
    try {
      server = createTlsServer({ ...httpOptions, ...tlsFiles }, listener);
    } catch (err) {
      throw tlsError(options.tls, err);
    }
  } else {
    server = createServer(httpOptions, listener);
  }
  server.on("clientError", createClientErrorListener(parts.requests));
  return server;
}

function announce(options: ServerOptions, notices: Logger, store: Store, fixtures: FixturesSummary | undefined): void {
  if (store.kind === "postgres")
    notices.write(
      "info",
      `store: PostgreSQL (${options.poolSize ?? DEFAULT_POOL_SIZE} connections); --rate-limit is shared by every replica of the database, --max-inflight counts per replica`,
    );
  for (const n of faultNotices(options)) notices.write(n.startsWith("fault on:") ? "warn" : "info", n);
  if (fixtures) {
    const s = fixtures;
    notices.write(
      "info",
      `fixtures: ${s.edges} edges, ${s.routes} routes, ${s.backends} backends in the first key's account (${s.created} created now, ${s.edges + s.routes + s.backends - s.created} already there)`,
    );
  }
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The `drain` of a running server (see `RunningServer.drain`): the first call's promise, for every call. */
function drainer(api: ApiServer, admin: ApiServer | undefined, store: Store, parts: ServerParts): (o: DrainOptions) => Promise<void> {
  let draining: Promise<void> | undefined;
  return (o) => {
    draining ??= (async () => {
      parts.ops.readiness.drain();
      if (o.delayMs > 0) {
        parts.notices.write("info", `draining: /readyz answers 503; new connections are accepted for ${o.delayMs} ms more, then refused`);
        await pause(o.delayMs);
      }
      parts.notices.write("info", `draining: no new connections; the requests in flight have ${o.timeoutMs} ms to be answered`);
      const cut = await closeServer(api, o.timeoutMs);
      if (cut > 0) parts.notices.write("warn", `draining: ${cut} connections still busy after ${o.timeoutMs} ms were cut`);
      await store.close();
      if (admin) await closeServer(admin, 0);
      parts.notices.write("info", "drained: the store is closed");
    })();
    return draining;
  };
}

/** What every part of a server shares: its loggers, its readiness, its metrics. */
interface ServerParts {
  requests: Logger;
  notices: Logger;
  metrics: ServerMetrics | undefined;
  ops: OpsOptions;
}

function serverParts(options: ServerOptions, store: () => Store | undefined): ServerParts {
  const requests = createLogger(options.log, options.logFormat, options.logLevel);
  const notices = createLogger(options.notice, options.logFormat, options.logLevel);
  const readiness = new Readiness();
  const on = options.metrics === true || options.adminListen !== undefined;
  const metrics = on
    ? new ServerMetrics(
        () => store()?.poolUse?.(),
        () => readiness.ready,
      )
    : undefined;
  return { requests, notices, metrics, ops: { readiness, metrics, logger: requests, closing: () => readiness.draining } };
}

/** The admin server, listening; undefined without `adminListen`. */
async function startAdmin(options: ServerOptions, parts: ServerParts): Promise<{ server: Server; url: string } | undefined> {
  if (!options.adminListen) return undefined;
  const { host, port } = options.adminListen;
  const server = createServer({ keepAliveTimeout: 5_000 }, createAdminListener(parts.ops));
  const bound = await listen(server, host, port, "--admin-listen port");
  return { server, url: `http://${urlHost(host)}:${bound}` };
}

/**
 * Opens the store (migrating it), loads the fixtures, and listens. Resolves once the server accepts connections.
 * With `adminListen`, the admin address listens first, so `/healthz` answers (and `/readyz` says "starting") while
 * the store opens. Throws an EdgeplanError (with the store closed again) when there is no API key, the options
 * conflict, the store cannot be opened, the fixtures or the TLS files are invalid, or an address cannot be bound.
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const settings = checkOptions(options);
  let store: Store | undefined;
  const parts = serverParts(options, () => store);
  const admin = await startAdmin(options, parts);
  try {
    store = await openStore(options);
    store.observer = parts.metrics;
    const fixtures = settings.fixtures ? await applyFixtures(store, settings.account, settings.fixtures) : undefined;
    const context: ServerContext = { baseUrl: "", spBase: settings.spBase, makeSigningCertificate: (entityId) => makeSigningCertificate(entityId) };
    const tlsFiles = options.tls ? await readTlsFiles(options.tls) : undefined;
    const server = createApiServer(options, settings, store, context, parts, tlsFiles);
    const port = await listen(server, settings.host, settings.port);
    const url = `${options.tls ? "https" : "http"}://${urlHost(settings.host)}:${port}`;
    context.baseUrl = settings.publicUrl ?? url;
    announce(options, parts.notices, store, fixtures);
    parts.ops.readiness.started(store);
    const drain = drainer(server, admin?.server, store, parts);
    const running: RunningServer = {
      url,
      port,
      host: settings.host,
      baseUrl: context.baseUrl,
      store,
      account: settings.account,
      logger: parts.notices,
      drain,
      close: () => drain({ delayMs: 0, timeoutMs: 5_000 }),
      reloadTls: () => reloadTls(server, options),
    };
    if (fixtures) running.fixtures = fixtures;
    if (admin) running.adminUrl = admin.url;
    if (parts.metrics) running.metrics = parts.metrics;
    return running;
  } catch (err) {
    await store?.close();
    if (admin) await closeServer(admin.server, 0);
    throw err;
  }
}

/** New connections get the certificate and key the files hold now; on any error the old ones stay. */
async function reloadTls(server: ApiServer, options: ServerOptions): Promise<void> {
  if (!options.tls || !("setSecureContext" in server)) throw new EdgeplanError("the server does not use TLS: give --tls-cert and --tls-key");
  const files = await readTlsFiles(options.tls);
  try {
    server.setSecureContext(files);
  } catch (err) {
    throw tlsError(options.tls, err);
  }
}
