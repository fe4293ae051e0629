/**
 * `edgeplan serve`: runs the API server until SIGTERM or SIGINT, then drains it (docs/server.md, "Running in
 * production"). Prints `listening on http://HOST:PORT` on stdout when ready; notices and one line per request go
 * to stderr, as JSON or text, each with its level (never an API key, never a body). SIGHUP reloads the TLS files.
 */
import { EdgeplanError, EXIT } from "../model/errors.js";
import { parseLatency, parseListenAddress, parseProbability, parseRateLimit, parseTimeout, parseWholeNumber } from "../model/syntax.js";
import {
  DEFAULT_HOST,
  DEFAULT_PORT,
  LOG_FORMATS,
  LOG_LEVELS,
  loadFixturesFile,
  startServer,
  type DrainOptions,
  type RunningServer,
  type ServerOptions,
} from "../server/index.js";

/** Default `--drain-delay`: long enough for a load balancer probing every second or two to take the replica out. */
export const DEFAULT_DRAIN_DELAY_MS = 5_000;
/** Time the process may take to end by itself once drained, before it exits anyway. */
const DRAINED_EXIT_GRACE_MS = 500;
/** Default `--drain-timeout`: the request timeout, so a request accepted in time can finish. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;

/** The flags of `edgeplan serve`, as commander hands them over. */
export interface ServeFlags {
  host?: string;
  port?: string;
  data?: string;
  database?: string;
  poolSize?: string;
  fixtures?: string;
  apiKey?: string[];
  publicUrl?: string;
  spBase?: string;
  versionHeader?: string;
  rateLimit?: string;
  maxInflight?: string;
  latency?: string;
  failRate?: string;
  dropRate?: string;
  faultSeed?: string;
  headersTimeout?: string;
  requestTimeout?: string;
  quiet?: boolean;
  adminListen?: string;
  metrics?: boolean;
  logFormat?: string;
  logLevel?: string;
  tlsCert?: string;
  tlsKey?: string;
  drainDelay?: string;
  drainTimeout?: string;
}

export interface ServeIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /**
   * Resolves when the server should drain and stop. Default: the first SIGTERM or SIGINT; then a second one exits
   * at once (exit code 1), and SIGHUP reloads the TLS files.
   */
  stopSignal?: Promise<unknown>;
}

/** Writes lines in batches, one write per turn of the event loop, so a busy server is not slowed by its log. */
function batchedLines(write: (text: string) => void): { line: (s: string) => void; flush: () => void } {
  let pending: string[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (pending.length === 0) return;
    const text = pending.join("\n") + "\n";
    pending = [];
    write(text);
  };
  return {
    line(s) {
      pending.push(s);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    flush,
  };
}

/** The API keys of the flags and of EDGEPLAN_SERVE_API_KEYS (comma separated), flags first, without repeats. */
export function serveApiKeys(flagKeys: string[] | undefined, env: NodeJS.ProcessEnv): string[] {
  const fromEnv = (env.EDGEPLAN_SERVE_API_KEYS ?? "")
    .split(",")
    .map((k) => k.trim())
    .filter((k) => k !== "");
  return [...new Set([...(flagKeys ?? []).map((k) => k.trim()).filter((k) => k !== ""), ...fromEnv])];
}

/** Turns the flags into server options; throws an EdgeplanError naming the bad flag. */
export function serveOptions(flags: ServeFlags, env: NodeJS.ProcessEnv): ServerOptions {
  const options: ServerOptions = {
    host: flags.host ?? DEFAULT_HOST,
    port: flags.port === undefined ? DEFAULT_PORT : parseWholeNumber("--port", flags.port, 0, 65535),
    apiKeys: serveApiKeys(flags.apiKey, env),
  };
  if (flags.data !== undefined) options.dataFile = flags.data;
  const databaseUrl = flags.database ?? (env.EDGEPLAN_SERVE_DATABASE_URL || undefined);
  if (databaseUrl !== undefined) options.databaseUrl = checkDatabaseUrl(databaseUrl, flags.database !== undefined);
  if (flags.poolSize !== undefined) options.poolSize = parseWholeNumber("--pool-size", flags.poolSize, 1, 1000);
  if (flags.fixtures !== undefined) options.fixtures = loadFixturesFile(flags.fixtures);
  if (flags.publicUrl !== undefined) options.publicUrl = flags.publicUrl;
  if (flags.spBase !== undefined) options.spBase = flags.spBase;
  if (flags.versionHeader !== undefined) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(flags.versionHeader)) {
      throw new EdgeplanError(`--version-header "${flags.versionHeader}" is not a valid HTTP header name`);
    }
    options.versionHeader = flags.versionHeader;
  }
  const rateLimit = flags.rateLimit === undefined ? null : parseRateLimit(flags.rateLimit);
  if (rateLimit !== null) options.rateLimit = rateLimit;
  if (flags.maxInflight !== undefined) options.maxInflight = parseWholeNumber("--max-inflight", flags.maxInflight, 1);
  if (flags.latency !== undefined) options.latency = parseLatency("--latency", flags.latency);
  if (flags.failRate !== undefined) options.failRate = parseProbability("--fail-rate", flags.failRate);
  if (flags.dropRate !== undefined) options.dropRate = parseProbability("--drop-rate", flags.dropRate);
  if (flags.faultSeed !== undefined) options.faultSeed = parseWholeNumber("--fault-seed", flags.faultSeed, 0, 0xffffffff);
  if (flags.headersTimeout !== undefined) options.headersTimeoutMs = parseTimeout("--headers-timeout", flags.headersTimeout);
  if (flags.requestTimeout !== undefined) options.requestTimeoutMs = parseTimeout("--request-timeout", flags.requestTimeout);
  return Object.assign(options, operationsOptions(flags));
}

/** The options of running in production: admin address, metrics, logs, TLS. */
function operationsOptions(flags: ServeFlags): Partial<ServerOptions> {
  const options: Partial<ServerOptions> = {};
  if (flags.adminListen !== undefined) options.adminListen = parseListenAddress("--admin-listen", flags.adminListen);
  if (flags.metrics) options.metrics = true;
  if (flags.logFormat !== undefined) options.logFormat = oneOf("--log-format", flags.logFormat, LOG_FORMATS);
  if (flags.logLevel !== undefined) options.logLevel = oneOf("--log-level", flags.logLevel, LOG_LEVELS);
  if ((flags.tlsCert === undefined) !== (flags.tlsKey === undefined)) {
    throw new EdgeplanError(
      `${flags.tlsCert === undefined ? "--tls-key" : "--tls-cert"} needs ${flags.tlsCert === undefined ? "--tls-cert" : "--tls-key"}: give both PEM files, the certificate and its key`,
    );
  }
  if (flags.tlsCert !== undefined && flags.tlsKey !== undefined) options.tls = { certFile: flags.tlsCert, keyFile: flags.tlsKey };
  return options;
}

function oneOf<T extends string>(flag: string, value: string, choices: readonly T[]): T {
  if (!(choices as readonly string[]).includes(value)) throw new EdgeplanError(`${flag} "${value}" is not one of ${choices.join(", ")}`);
  return value as T;
}

/** The drain of `--drain-delay` and `--drain-timeout`; throws an EdgeplanError naming the bad flag. */
export function drainOptions(flags: ServeFlags): DrainOptions {
  return {
    delayMs: flags.drainDelay === undefined ? DEFAULT_DRAIN_DELAY_MS : parseTimeout("--drain-delay", flags.drainDelay, 600_000, 0),
    timeoutMs: flags.drainTimeout === undefined ? DEFAULT_DRAIN_TIMEOUT_MS : parseTimeout("--drain-timeout", flags.drainTimeout, 600_000, 0),
  };
}

/** A PostgreSQL URL; the error names where it came from and never repeats a password. */
function checkDatabaseUrl(url: string, fromFlag: boolean): string {
  const from = fromFlag ? "--database" : "EDGEPLAN_SERVE_DATABASE_URL";
  let protocol: string;
  try {
    protocol = new URL(url).protocol;
  } catch {
    throw new EdgeplanError(`${from} is not a URL; give one like postgres://user:password@host:5432/database`);
  }
  if (protocol !== "postgres:" && protocol !== "postgresql:") {
    throw new EdgeplanError(`${from} must start with postgres:// or postgresql:// (got ${protocol}//); for a SQLite file use --data FILE`);
  }
  return url;
}

/** Resolves with the first SIGTERM or SIGINT (the handlers removed then). */
export function waitForSignal(): Promise<string> {
  return new Promise((resolve) => {
    const on = (signal: string): void => {
      process.off("SIGTERM", on);
      process.off("SIGINT", on);
      resolve(signal);
    };
    process.on("SIGTERM", on);
    process.on("SIGINT", on);
  });
}

/**
 * While the server drains: a second SIGTERM or SIGINT exits at once, without waiting for the requests in flight
 * (each write already answered is committed, so none is lost). Returns the function that removes the handlers.
 */
function exitOnSecondSignal(server: RunningServer, flush: () => void): () => void {
  const now = (signal: string): void => {
    server.logger.write("warn", `${signal} while draining: exiting now, without waiting for the requests in flight`);
    flush();
    process.exit(EXIT.error);
  };
  process.once("SIGTERM", now);
  process.once("SIGINT", now);
  return () => {
    process.off("SIGTERM", now);
    process.off("SIGINT", now);
  };
}

/**
 * SIGHUP reloads the TLS certificate and key, read without blocking the server (a bad file is logged and the old
 * ones kept). Returns the remover.
 */
function reloadOnHangup(server: RunningServer): () => void {
  const reload = (): void => {
    server.reloadTls().then(
      () => server.logger.write("info", "SIGHUP: the TLS certificate and key were read again; new connections get them"),
      (err: unknown) => server.logger.write("error", `SIGHUP: ${(err as Error).message}; the previous certificate and key stay in use`),
    );
  };
  process.on("SIGHUP", reload);
  return () => process.off("SIGHUP", reload);
}

/**
 * Runs the server until the stop signal, then drains it (`--drain-delay`, `--drain-timeout`: readiness 503, new
 * connections refused, requests in flight answered, the store closed) and returns exit code 0. Invalid flags, no
 * API key, bad fixtures or TLS files, or a busy port throw an EdgeplanError (exit 1).
 */
export async function serveCommand(flags: ServeFlags, io?: Partial<ServeIo>): Promise<number> {
  const stdout = io?.stdout ?? ((t: string) => void process.stdout.write(t));
  const stderr = io?.stderr ?? ((t: string) => void process.stderr.write(t));
  const env = io?.env ?? process.env;
  const options = serveOptions(flags, env);
  const drain = drainOptions(flags);
  const requestLog = batchedLines(stderr);
  if (!flags.quiet) options.log = requestLog.line;
  options.notice = (line) => {
    requestLog.flush();
    stderr(`${line}\n`);
  };
  // Listen for signals before the server is up, so a stop sent right after the "listening" line is not missed.
  const stop = io?.stopSignal ?? waitForSignal();
  const server = await startServer(options);
  const stopHangup = options.tls && !io?.stopSignal ? reloadOnHangup(server) : () => undefined;
  // The admin line first: whoever waits for "listening on" then has both addresses.
  if (server.adminUrl) stdout(`admin listening on ${server.adminUrl} (/healthz, /readyz, /metrics)\n`);
  stdout(`listening on ${server.url}\n`);
  const signal = await stop;
  const stopSecond = io?.stopSignal ? () => undefined : exitOnSecondSignal(server, requestLog.flush);
  if (typeof signal === "string") server.logger.write("info", `${signal}: draining`);
  await server.drain(drain);
  stopSecond();
  stopHangup();
  requestLog.flush();
  // A handler whose connection the drain timeout cut may still be waiting (on a fault's delay, on the closed
  // store): it has nobody to answer, so it does not hold the process past a short grace.
  if (!io?.stopSignal) setTimeout(() => process.exit(EXIT.ok), DRAINED_EXIT_GRACE_MS).unref();
  return EXIT.ok;
}
