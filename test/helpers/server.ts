/**
 * Test helpers to run the API server and speak raw HTTP to it, on loopback only.
 * - `spawnServer` runs the BUILT CLI (`node dist/cli/edgeplan.js serve --port 0 ...`) as a child process.
 * - `startTestServer` runs `startServer` in this process, on the store of the test project: SQLite in memory, or
 *   (project `postgres`, EDGEPLAN_TEST_STORE=postgres) a fresh database of the run's PostgreSQL cluster.
 * - `http` sends one request with full control over headers and body; `apiClient` adds the key and version.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import { inject } from "vitest";
import { createDatabase } from "../../bench/postgres-cluster.js";
import { startServer, type RunningServer, type ServerOptions, type StoreTx } from "../../src/server/index.js";

import { CLI, REPO_ROOT } from "./cli-path.js";

export { CLI, REPO_ROOT };

/** A random API key for a test. */
export function randomKey(): string {
  return `ep_test_${randomBytes(12).toString("hex")}`;
}

/** A well-formed id with `prefix` whose 27 base62 characters come from `n` (distinct n, distinct ids). */
export function fakeId(prefix: string, n: number): string {
  return `${prefix}_${String(n).padStart(27, "0")}`;
}

/** The store the server suites run on in this project. */
export const TEST_STORE: "sqlite" | "postgres" = process.env.EDGEPLAN_TEST_STORE === "postgres" ? "postgres" : "sqlite";

/** A new, empty database of the run's PostgreSQL cluster (project `postgres` only); its URL. */
export function freshDatabase(): Promise<string> {
  return createDatabase(inject("pgUrl"));
}

/** The flags of a persistent store for `serve`: `--data FILE` on SQLite, `--database URL` (a fresh one) on PostgreSQL. */
export async function persistentStoreArgs(file: string): Promise<string[]> {
  return TEST_STORE === "postgres" ? ["--database", await freshDatabase()] : ["--data", file];
}

export interface SpawnedServer {
  url: string;
  apiKey: string;
  proc: ChildProcess;
  /** Everything the server wrote to stderr so far. */
  stderr(): string;
  /** Everything the server wrote to stdout so far. */
  stdout(): string;
  /** Resolves with the exit code (null when killed by a signal) once the process has ended. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends SIGTERM and waits for the exit; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** Sends SIGKILL and waits for the process to be gone. */
  kill9(): Promise<void>;
}

export interface SpawnOptions {
  /** The key passed with --api-key (default: a random one). */
  apiKey?: string;
  /** Do not pass any --api-key (to test the refusal, or keys from the environment). */
  noKey?: boolean;
  /** Time to wait for the `listening on` line (default 20 s). */
  timeoutMs?: number;
}

/**
 * Runs `node dist/cli/edgeplan.js serve --port 0 --api-key <key> --drain-delay 0 ...args` (without `--drain-delay 0`
 * when `args` give one), waits for `listening on http(s)://HOST:PORT`
 * on stdout, and returns the handle. Rejects with the server's stderr when it exits first or is not ready in
 * time. Needs `npm run build` (npm test runs it first).
 */
export function spawnServer(args: string[] = [], env: Record<string, string> = {}, options: SpawnOptions = {}): Promise<SpawnedServer> {
  const apiKey = options.apiKey ?? randomKey();
  // No drain delay unless a test asks for one: nothing probes these servers, and every stop would wait for it.
  const drain = args.includes("--drain-delay") ? [] : ["--drain-delay", "0"];
  const argv = [CLI, "serve", "--port", "0", ...(options.noKey ? [] : ["--api-key", apiKey]), ...drain, ...args];
  const proc = spawn(process.execPath, argv, {
    cwd: REPO_ROOT,
    env: { ...process.env, EDGEPLAN_SERVE_API_KEYS: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  proc.stdout?.setEncoding("utf8").on("data", (s: string) => (out += s));
  proc.stderr?.setEncoding("utf8").on("data", (s: string) => (err += s));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once("exit", (code, signal) => resolve({ code, signal })));
  const handle = (url: string): SpawnedServer => ({
    url,
    apiKey,
    proc,
    stderr: () => err,
    stdout: () => out,
    exited,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
      return (await exited).code;
    },
    async kill9() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
      await exited;
    },
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`the server did not print "listening on" within ${options.timeoutMs ?? 20_000} ms; stderr:\n${err}`));
    }, options.timeoutMs ?? 20_000);
    const onData = (): void => {
      const m = /^listening on (https?:\/\/\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        proc.stdout?.off("data", onData);
        resolve(handle(m[1] as string));
      }
    };
    proc.stdout?.on("data", onData);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(`the server exited (code ${code}, signal ${signal}) before listening; stderr:\n${err}`), { code, stderr: err }));
    });
  });
}

/**
 * Runs the CLI with `args` to its end (for commands that exit by themselves, e.g. a refused `serve`).
 */
export function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 20_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return spawnCli(args, REPO_ROOT, { ...process.env, EDGEPLAN_SERVE_API_KEYS: "", ...env }, timeoutMs);
}

/** Runs the built CLI in `cwd` with only PATH and NO_COLOR in its environment (nothing of the runner's EDGEPLAN_*), stdin not a terminal. */
export function runCliIn(cwd: string, args: string[], timeoutMs = 20_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return spawnCli(args, cwd, { PATH: process.env.PATH ?? "", NO_COLOR: "1" }, timeoutMs);
}

function spawnCli(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    proc.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    proc.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`edgeplan ${args.join(" ")} did not end within ${timeoutMs} ms`));
    }, timeoutMs);
    proc.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

export interface TestServer extends RunningServer {
  apiKey: string;
  /** Runs `fn` in one transaction of the server's store (to look at what it holds, or to seed it). */
  read<T>(fn: (tx: StoreTx) => T | Promise<T>): Promise<T>;
  /** Request log lines (parsed), in order. */
  logLines: Record<string, unknown>[];
  notices: string[];
}

/**
 * `startServer` in this process on 127.0.0.1, port 0, with a random key (first in `apiKeys`), on the project's
 * store (SQLite in memory, or a fresh PostgreSQL database with a pool of 4) unless `opts` names one.
 */
export async function startTestServer(opts: Partial<ServerOptions> = {}): Promise<TestServer> {
  const apiKey = randomKey();
  const logLines: Record<string, unknown>[] = [];
  const notices: string[] = [];
  const store: Partial<ServerOptions> =
    TEST_STORE === "postgres" && opts.dataFile === undefined && opts.databaseUrl === undefined ? { databaseUrl: await freshDatabase(), poolSize: 4 } : {};
  const server = await startServer({
    host: "127.0.0.1",
    port: 0,
    log: (line) => logLines.push(JSON.parse(line) as Record<string, unknown>),
    notice: (line) => notices.push(line),
    ...store,
    ...opts,
    apiKeys: [apiKey, ...(opts.apiKeys ?? [])],
  });
  const read = <T>(fn: (tx: StoreTx) => T | Promise<T>): Promise<T> => server.store.transaction(async (tx) => fn(tx));
  return Object.assign(server, { apiKey, logLines, notices, read });
}

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The parsed body; undefined when it is empty or not JSON. */
  // biome-ignore lint/suspicious/noExplicitAny: the tests read the fields of every kind of answer and error
  json: any;
}

export interface HttpOptions {
  headers?: Record<string, string>;
  /** Sent as JSON with Content-Type: application/json (unless headers set a content type). */
  body?: unknown;
  /** Sent as they are, with no content type added. */
  rawBody?: string | Buffer;
  /** Send the body with chunked transfer encoding instead of a Content-Length. */
  chunked?: boolean;
}

const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/**
 * One raw request to `url` + `path`. Rejects on a network error (e.g. a connection the server destroyed).
 */
export function http(url: string, method: string, path: string, options: HttpOptions = {}): Promise<HttpResponse> {
  const headers: Record<string, string> = { ...options.headers };
  let payload: Buffer | undefined;
  if (options.rawBody !== undefined) payload = Buffer.from(options.rawBody);
  else if (options.body !== undefined) {
    payload = Buffer.from(JSON.stringify(options.body));
    if (!Object.keys(headers).some((h) => h.toLowerCase() === "content-type")) headers["Content-Type"] = "application/json";
  }
  if (payload && !options.chunked) headers["Content-Length"] = String(payload.length);
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("error", reject);
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let json: unknown;
        try {
          json = text === "" ? undefined : JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
      });
    });
    req.on("error", reject);
    if (payload) req.write(payload);
    req.end();
  });
}

export interface ApiClient {
  url: string;
  apiKey: string;
  get(path: string, headers?: Record<string, string>): Promise<HttpResponse>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<HttpResponse>;
  put(path: string, body: unknown, headers?: Record<string, string>): Promise<HttpResponse>;
  patch(path: string, body: unknown, headers?: Record<string, string>): Promise<HttpResponse>;
  del(path: string, headers?: Record<string, string>): Promise<HttpResponse>;
  /** Any request, with the key and version headers added (override them in `options.headers`). */
  send(method: string, path: string, options?: HttpOptions): Promise<HttpResponse>;
}

/** `http` with `Authorization: Bearer <apiKey>` and `<versionHeader>: 2` on every request. */
export function apiClient(url: string, apiKey: string, versionHeader = "Ngrok-Version"): ApiClient {
  const base = { Authorization: `Bearer ${apiKey}`, [versionHeader]: "2" };
  const send = (method: string, path: string, options: HttpOptions = {}): Promise<HttpResponse> =>
    http(url, method, path, { ...options, headers: { ...base, ...options.headers } });
  return {
    url,
    apiKey,
    send,
    get: (path, headers) => send("GET", path, headers ? { headers } : {}),
    post: (path, body, headers) => send("POST", path, headers ? { body, headers } : { body }),
    put: (path, body, headers) => send("PUT", path, headers ? { body, headers } : { body }),
    patch: (path, body, headers) => send("PATCH", path, headers ? { body, headers } : { body }),
    del: (path, headers) => send("DELETE", path, headers ? { headers } : {}),
  };
}
