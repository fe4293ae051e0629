/**
 * The server the benchmarks talk to, and what it saw. The server is the real `edgeplan serve` in its own process
 * (as a remote API would be: its work does not compete with the client's for this process's event loop), on a
 * loopback port, with its state in a data file seeded beforehand. Every request of a measured run is counted from
 * the server's own request log (one JSON line per answered request), so that the figures do not depend on what the
 * client believes it sent. The span of a run is from the arrival of its first request to its last answer, on the
 * server's clock.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { request } from "undici";
import { copyFileSync, existsSync, readFileSync } from "node:fs";
import { accountForKey } from "../src/server/index.js";
import { openSqliteStore, type SqliteStore } from "../src/server/sqlite-store.js";

export interface Traffic {
  requests: number;
  /** Requests per status (`"200"`, `"429"`, ...). */
  byStatus: Record<string, number>;
  /** Requests per method and path shape (`GET /backends/weighted`, `PATCH /backends/weighted/:id`, ...). */
  byKind: Record<string, number>;
  status429: number;
  /** From the first request's arrival to the last answer, in ms; 0 when there was no request. */
  spanMs: number;
  /**
   * GETs of the object the run deleted last: an apply's lease, whose checks (one before the first change, then at
   * most one every 5 s) depend on how long the run takes, not on the plan (bench/bounds.ts, `planRequests`).
   */
  leaseChecks: number;
}

/** Counts request log lines between `reset()` and `read()`. */
export class TrafficCounter {
  private requests = 0;
  private byStatus: Record<string, number> = {};
  private byKind: Record<string, number> = {};
  private first = Number.POSITIVE_INFINITY;
  private last = Number.NEGATIVE_INFINITY;
  private getsByPath = new Map<string, number>();
  private lastDelete = "";
  /** Lines seen since the process started (to tell when the log has caught up). */
  seen = 0;

  /** Takes one line of the server's stderr; lines that are not request log lines (notices) are ignored. */
  line(text: string): void {
    if (!text.startsWith("{")) return;
    let entry: { time?: string; method?: string; path?: string; status?: number; ms?: number };
    try {
      entry = JSON.parse(text) as typeof entry;
    } catch {
      return;
    }
    if (entry.status === undefined || entry.method === undefined || entry.time === undefined) return;
    this.seen++;
    this.requests++;
    const status = String(entry.status);
    this.byStatus[status] = (this.byStatus[status] ?? 0) + 1;
    const kind = `${entry.method} ${pathShape(entry.path ?? "")}`;
    if (entry.method === "GET") this.getsByPath.set(entry.path ?? "", (this.getsByPath.get(entry.path ?? "") ?? 0) + 1);
    if (entry.method === "DELETE") this.lastDelete = entry.path ?? "";
    this.byKind[kind] = (this.byKind[kind] ?? 0) + 1;
    const end = Date.parse(entry.time);
    this.first = Math.min(this.first, end - (entry.ms ?? 0));
    this.last = Math.max(this.last, end);
  }

  reset(): void {
    this.requests = 0;
    this.byStatus = {};
    this.byKind = {};
    this.first = Number.POSITIVE_INFINITY;
    this.last = Number.NEGATIVE_INFINITY;
    this.getsByPath = new Map();
    this.lastDelete = "";
  }

  read(): Traffic {
    return {
      requests: this.requests,
      byStatus: { ...this.byStatus },
      byKind: { ...this.byKind },
      status429: this.byStatus["429"] ?? 0,
      spanMs: this.requests === 0 ? 0 : this.last - this.first,
      leaseChecks: this.getsByPath.get(this.lastDelete) ?? 0,
    };
  }
}

/** `/backends/weighted/bkdwd_x` -> `/backends/weighted/:id`: ids replaced so that requests group by endpoint. */
export function pathShape(path: string): string {
  return path.replace(/\/[a-z]+_[0-9A-Za-z]{27}/g, "/:id");
}

export const BENCH_KEY = "bench-key";
/** The account of BENCH_KEY, where seeds go. */
export const BENCH_ACCOUNT = accountForKey(BENCH_KEY);

/** Opens the data file's store to seed it, runs `seed`, and closes it (the server opens it afterwards). */
export async function seedDataFile<T>(dataFile: string, seed: (store: SqliteStore, account: string) => T | Promise<T>): Promise<T> {
  const store = openSqliteStore(dataFile);
  try {
    return await seed(store, BENCH_ACCOUNT);
  } finally {
    await store.close();
  }
}

/** Copies a data file that no process has open (so that two runs start from the same state). */
export function copyDataFile(from: string, to: string): void {
  copyFileSync(from, to);
  for (const suffix of ["-wal", "-shm"]) if (existsSync(from + suffix)) copyFileSync(from + suffix, to + suffix);
}

export interface ServeSettings {
  /** `--data`: the SQLite file; or */
  dataFile?: string;
  /** `--database`: the PostgreSQL URL. */
  databaseUrl?: string;
  /** `--latency` in ms. */
  latencyMs?: number;
  /** `--rate-limit`, e.g. `20/1s`. */
  rateLimit?: string;
  /**
   * The request log is written but not read (to /dev/null): for load tests, which count their own requests and
   * should not pay for parsing the log, while the server still pays for writing it, as it does in service.
   */
  discardLog?: boolean;
  /** `--fixtures`: edges, routes and backends to load. */
  fixtures?: string;
  /** `--metrics`: the Prometheus metrics counted (and served on the API port). */
  metrics?: boolean;
}

export interface BenchServer {
  url: string;
  pid: number;
  traffic: TrafficCounter;
  /** Waits until the server's log has caught up with the requests answered so far (at most 2 s). */
  settle(): Promise<void>;
  /** Resident set size of the server process now, in MB (0 when unknown). */
  rssMb(): number;
  /** SIGTERM, and waits for the exit. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 20_000;

/** Starts `node dist/cli/edgeplan.js serve` on a free loopback port and resolves once it is listening. */
export function startBenchServer(cli: string, settings: ServeSettings): Promise<BenchServer> {
  // No drain delay: nothing probes a benchmark's server, and its stop would wait for it.
  const args = [cli, "serve", "--port", "0", "--api-key", BENCH_KEY, "--drain-delay", "0"];
  if (settings.metrics) args.push("--metrics");
  if (settings.dataFile !== undefined) args.push("--data", settings.dataFile);
  if (settings.databaseUrl !== undefined) args.push("--database", settings.databaseUrl);
  if (settings.latencyMs !== undefined) args.push("--latency", String(settings.latencyMs));
  if (settings.rateLimit !== undefined) args.push("--rate-limit", settings.rateLimit);
  if (settings.fixtures !== undefined) args.push("--fixtures", settings.fixtures);
  const proc: ChildProcess = spawn(process.execPath, args, { stdio: ["ignore", "pipe", settings.discardLog ? "ignore" : "pipe"] });
  const traffic = new TrafficCounter();
  let stderrTail = "";
  let partial = "";
  proc.stderr?.setEncoding("utf8");
  proc.stderr?.on("data", (chunk: string) => {
    const text = partial + chunk;
    const lines = text.split("\n");
    partial = lines.pop() ?? "";
    for (const l of lines) {
      if (l.startsWith("{")) traffic.line(l);
      else stderrTail = (stderrTail + l + "\n").slice(-2000);
    }
  });
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));

  return new Promise<BenchServer>((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`the server did not say it was listening within ${READY_TIMEOUT_MS} ms: ${stderrTail}`));
    }, READY_TIMEOUT_MS);
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`the server exited (${code}) before listening: ${stderrTail}`));
    });
    proc.stdout?.setEncoding("utf8");
    proc.stdout?.on("data", (chunk: string) => {
      out += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      proc.stdout?.removeAllListeners("data");
      proc.stdout?.resume();
      const pid = proc.pid as number;
      resolve({
        url: m[1] as string,
        pid,
        traffic,
        async settle() {
          // The server writes its log once per turn of its event loop: wait for two quiet intervals in a row.
          let last = -1;
          for (let i = 0; i < 100; i++) {
            await new Promise((r) => setTimeout(r, 20));
            if (traffic.seen === last) return;
            last = traffic.seen;
          }
        },
        rssMb() {
          try {
            const status = readFileSync(`/proc/${pid}/status`, "utf8");
            const kb = /VmRSS:\s+(\d+)/.exec(status)?.[1];
            return kb === undefined ? 0 : Math.round((Number(kb) / 1024) * 10) / 10;
          } catch {
            return 0;
          }
        },
        async stop() {
          proc.kill("SIGTERM");
          const killer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
          await exited;
          clearTimeout(killer);
        },
      });
    });
  });
}

/**
 * Sends each GET `times` times, one at a time, and forgets them: a real API server has long been running when a
 * reconciler calls it, so the measured runs should not pay for this one's first requests (its code not yet
 * compiled). Returns the median round trip of each path over the second half of its sends (the server warm), in ms:
 * what one request of that kind takes on this machine against this server, the injected latency included.
 */
export async function warmUp(server: BenchServer, paths: readonly string[], times = 20): Promise<number[]> {
  const headers = { authorization: `Bearer ${BENCH_KEY}`, "ngrok-version": "2" };
  const rtts: number[][] = paths.map(() => []);
  for (let i = 0; i < times; i++) {
    for (const [k, path] of paths.entries()) {
      const started = performance.now();
      const res = await request(`${server.url}${path}`, { headers });
      await res.body.text();
      if (i >= times / 2) rtts[k]?.push(performance.now() - started);
    }
  }
  await server.settle();
  server.traffic.reset();
  return rtts.map((list) => {
    const sorted = [...list].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? 0;
  });
}
