/**
 * The API server of docs/api.md, as a library: `startServer` is what `edgeplan serve`, the `--local` mode and the
 * tests run. It listens on node's HTTP stack, keeps its state in SQLite (a file, or memory) or in PostgreSQL (shared
 * by several replicas), and answers every request through the pipeline of app.ts.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { EdgeplanError } from "../model/errors.js";
import { LIMITS } from "../model/wire.js";
import { createClientErrorListener, createRequestListener } from "./app.js";
import { accountForKey, KeyRing } from "./auth.js";
import type { ServerContext } from "./context.js";
import { faultDraws, InflightLimiter } from "./faults.js";
import { applyFixtures, validateFixtures, type Fixtures, type FixturesInput, type FixturesSummary } from "./fixtures.js";
import { makeSigningCertificate } from "./saml-certificate.js";
import { openSqliteStore } from "./sqlite-store.js";
import type { Store } from "./store.js";

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
  /** Receives one JSON line per request; absent: no request log. */
  log?: (line: string) => void;
  /** Receives the start-up notices: faults that are on, fixtures loaded. */
  notice?: (line: string) => void;
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
  /** Stops accepting connections, lets requests in flight finish (at most 5 s), then closes the store. */
  close(): Promise<void>;
}

function urlHost(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

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

function createHttpServer(options: ServerOptions, settings: Settings, store: Store, context: ServerContext): Server {
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
    log: options.log,
  });
  const server = createServer(
    {
      headersTimeout: settings.headersTimeout,
      requestTimeout: settings.requestTimeout,
      // Node checks the two timeouts on this interval (30 s by default): check often enough to honour them.
      connectionsCheckingInterval: Math.min(1_000, settings.headersTimeout),
      keepAliveTimeout: 5_000,
    },
    listener,
  );
  server.on("clientError", createClientErrorListener(options.log));
  return server;
}

/** Listens; resolves with the bound port, or throws an EdgeplanError saying why not. */
async function listen(server: Server, host: string, port: number): Promise<number> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
  } catch (err) {
    const code = (err as { code?: string }).code;
    const why = code === "EADDRINUSE" ? "the address is in use; pick another --port (0 picks a free one)" : (err as Error).message;
    throw new EdgeplanError(`cannot listen on ${urlHost(host)}:${port}: ${why}`, { cause: err });
  }
  return (server.address() as AddressInfo).port;
}

function announce(options: ServerOptions, store: Store, fixtures: FixturesSummary | undefined): void {
  if (!options.notice) return;
  if (store.kind === "postgres")
    options.notice(
      `store: PostgreSQL (${options.poolSize ?? DEFAULT_POOL_SIZE} connections); --rate-limit is shared by every replica of the database, --max-inflight counts per replica`,
    );
  for (const n of faultNotices(options)) options.notice(n);
  if (fixtures) {
    const s = fixtures;
    options.notice(
      `fixtures: ${s.edges} edges, ${s.routes} routes, ${s.backends} backends in the first key's account (${s.created} created now, ${s.edges + s.routes + s.backends - s.created} already there)`,
    );
  }
}

/** Stops accepting connections, lets requests in flight finish (at most 5 s), then closes the store. */
function closer(server: Server, store: Store): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= new Promise<void>((resolve) => {
      const force = setTimeout(() => server.closeAllConnections(), 5_000);
      server.close(() => {
        clearTimeout(force);
        resolve(store.close());
      });
      server.closeIdleConnections();
    });
    return closing;
  };
}

/**
 * Opens the store (migrating it), loads the fixtures, and listens. Resolves once the server accepts connections.
 * Throws an EdgeplanError (with the store closed again) when there is no API key, the options conflict, the
 * store cannot be opened, the fixtures are invalid, or the address cannot be bound.
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const settings = checkOptions(options);
  const store = await openStore(options);
  try {
    const fixtures = settings.fixtures ? await applyFixtures(store, settings.account, settings.fixtures) : undefined;
    const context: ServerContext = { baseUrl: "", spBase: settings.spBase, makeSigningCertificate: (entityId) => makeSigningCertificate(entityId) };
    const server = createHttpServer(options, settings, store, context);
    const port = await listen(server, settings.host, settings.port);
    const url = `http://${urlHost(settings.host)}:${port}`;
    context.baseUrl = settings.publicUrl ?? url;
    announce(options, store, fixtures);
    const running: RunningServer = { url, port, host: settings.host, baseUrl: context.baseUrl, store, account: settings.account, close: closer(server, store) };
    if (fixtures) running.fixtures = fixtures;
    return running;
  } catch (err) {
    await store.close();
    throw err;
  }
}
