/**
 * `edgeplan serve`: runs the API server until SIGTERM or SIGINT. Prints `listening on http://HOST:PORT` on
 * stdout when ready; start-up notices and one JSON line per request go to stderr (never an API key).
 */
import { EdgeplanError, EXIT } from "../model/errors.js";
import { parseLatency, parseProbability, parseRateLimit, parseTimeout, parseWholeNumber } from "../model/syntax.js";
import { DEFAULT_HOST, DEFAULT_PORT, loadFixturesFile, startServer, type ServerOptions } from "../server/index.js";

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
}

export interface ServeIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** Resolves when the server should stop (default: the first SIGTERM or SIGINT). */
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
  return options;
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

function waitForSignal(): Promise<string> {
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
 * Runs the server until the stop signal, then closes it (requests in flight finish, the store is closed) and
 * returns exit code 0. Invalid flags, no API key, bad fixtures or a busy port throw an EdgeplanError (exit 1).
 */
export async function serveCommand(flags: ServeFlags, io?: Partial<ServeIo>): Promise<number> {
  const stdout = io?.stdout ?? ((t: string) => void process.stdout.write(t));
  const stderr = io?.stderr ?? ((t: string) => void process.stderr.write(t));
  const env = io?.env ?? process.env;
  const options = serveOptions(flags, env);
  const requestLog = batchedLines(stderr);
  if (!flags.quiet) options.log = requestLog.line;
  options.notice = (line) => stderr(`${line}\n`);
  // Listen for signals before the server is up, so a stop sent right after the "listening" line is not missed.
  const stop = io?.stopSignal ?? waitForSignal();
  const server = await startServer(options);
  stdout(`listening on ${server.url}\n`);
  await stop;
  await server.close();
  requestLog.flush();
  return EXIT.ok;
}
