/**
 * Fail closed: a command exits 0 only when it did its whole job (docs/reliability.md, "Fail closed"). The matrix:
 * every command that talks to the API, run in this process through its `commands/` function against a TLS front
 * (./fault-proxy.ts) that breaks one of its requests, each request in turn, with each fault: a certificate for
 * another host, nothing listening, the connection cut in the middle of the answer, no answer within the timeout, a
 * 500, an answer that is not JSON. Each run exits non-zero, its message names the request that failed (method and
 * path), and it reports nothing done that was not (no plan printed, no file written, no "Apply complete", no
 * "removed", no "promoted"). Then the built CLI, where the process boundary is what is tested: `plan` (also with
 * --detailed-exitcode) and `export --out` against a certificate for another host at the default concurrency, and
 * the outcome guard turning an emptied event loop into exit 1.
 */
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createClient } from "../../src/api/client.js";
import { buildLeaseBody, leasesOf } from "../../src/apply/lease-record.js";
import { currentHolder } from "../../src/apply/lease.js";
import { runApply } from "../../src/commands/apply.js";
import { runExport } from "../../src/commands/export.js";
import { captureIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import { runRolloutAbort, runRolloutPromote, runRolloutRetry, runRolloutStatus } from "../../src/commands/rollout.js";
import { runStateList, runStateRelease } from "../../src/commands/state.js";
import { runUnlock } from "../../src/commands/unlock.js";
import { errorOutcome } from "../../src/model/errors.js";
import { startServer, type RunningServer } from "../../src/server/index.js";
import { runEdgeplan, tempDir } from "./cli.js";
import { FAULTS, selfSigned, startFaultProxy, type Fault, type FrontCerts } from "./fault-proxy.js";

// The in-process client trusts the front's two certificates (the CLI's processes are given NODE_EXTRA_CA_CERTS):
// undici itself, its TLS code included, is the real one.
vi.mock("undici", async (importOriginal) => {
  const undici = await importOriginal<typeof import("undici")>();
  const { trusted } = await import("./fail-closed-trust.js");
  class TrustingPool extends undici.Pool {
    constructor(origin: string, options: import("undici").Pool.Options = {}) {
      super(origin, { ...options, connect: { ...(options.connect as object), ca: trusted() } });
    }
  }
  return { ...undici, Pool: TrustingPool };
});
const { trust } = await import("./fail-closed-trust.js");

const KEY = "fail-closed-key";
const EDGES = ["edghts_000000000000000000000000f01", "edghts_000000000000000000000000f02"] as const;
const ROUTES = ["edghtsrt_000000000000000000000000f01", "edghtsrt_000000000000000000000000f02"] as const;
const [HR1, HR2] = ["bkdhr_000000000000000000000000f01", "bkdhr_000000000000000000000000f02"] as const;
const FIXTURES = {
  edges: EDGES.map((id, i) => ({ id, routes: [{ id: ROUTES[i] as string, match: "/", match_type: "path_prefix" as const }] })),
  backends: [HR1, HR2].map((id) => ({ id, type: "http_response" as const })),
};

const dir = tempDir("fail-closed");
let certs: FrontCerts;
/** The server's data file once seeded: each run starts a server on a copy of it. */
const seeded = join(dir.path, "seeded.db");
let runs = 0;

const wb = (name: string, backends: Record<string, number>, rollout = ""): string =>
  `kind: WeightedBackend\nname: ${name}\nbackends:\n${Object.entries(backends)
    .map(([k, v]) => `  ${k}: ${v}`)
    .join("\n")}\n${rollout}`;
const ROLLOUT = "rollout:\n  steps: [10, 50, 100]\n  interval: 1h\n";
const breaker = (route: number, tripped: number): string =>
  `kind: EdgeRoute\nedge: ${EDGES[route]}\nroute: ${ROUTES[route]}\ncircuit_breaker:\n  tripped_duration: ${tripped}\n  rolling_window: 60\n  num_buckets: 10\n  error_threshold_percentage: 0.5\n`;

/** Writes the documents into `dir/<folder>/all.yaml`. */
function manifests(folder: string, docs: string[]): void {
  mkdirSync(join(dir.path, folder), { recursive: true });
  writeFileSync(join(dir.path, folder, "all.yaml"), docs.join("---\n"));
}

/** A server on a copy of the seeded data file (or on `file`, with the fixtures, to seed it). */
function serveCopy(file?: string): Promise<RunningServer> {
  const data = file ?? join(dir.path, `run-${runs++}.db`);
  if (!file) copyFileSync(seeded, data);
  return startServer({ host: "127.0.0.1", port: 0, dataFile: data, apiKeys: [KEY], ...(file ? { fixtures: FIXTURES } : {}) });
}

/** The flags of a run through the front: the API's URL and options. */
type Flags = { apiUrl: string; config: false; concurrency?: string; retries?: string; timeout?: string; rateLimit?: string };

/**
 * The flags of a run: one request at a time (so that the Nth is the same each run), no retry; a short timeout when
 * the fault is one (a run waits that long for it), a long one otherwise (the runs share this process).
 */
const flagsFor = (apiUrl: string, fault: Fault | null): Flags => ({
  apiUrl,
  config: false,
  concurrency: "1",
  retries: "0",
  timeout: fault === "timeout" ? "400" : "5000",
  rateLimit: "off",
});

interface Outcome {
  code: number;
  out: string;
  err: string;
}

/** Runs a command as the CLI does: its exit code, or the message and exit code of the error it throws. */
async function run(command: (flags: Flags, io: ReturnType<typeof captureIO>, written: string) => Promise<number>, flags: Flags, written = ""): Promise<Outcome> {
  const io = captureIO({ EDGEPLAN_API_KEY: KEY }, dir.path);
  let code: number;
  try {
    code = await command(flags, io, written);
  } catch (err) {
    const outcome = errorOutcome(err);
    io.stderr(`edgeplan: ${outcome.message}\n`);
    code = outcome.exitCode;
  }
  return { code, out: io.out, err: io.err };
}

beforeAll(async () => {
  certs = { good: selfSigned(dir.path, "good", "IP:127.0.0.1"), wrong: selfSigned(dir.path, "wrong", "DNS:other.example") };
  trust([certs.good.cert, certs.wrong.cert]);
  // Before: a, b, and two rollouts at their first step (web2 aborted, so halted); a circuit breaker on route 2; a
  // lease of stack "stale" left behind.
  const server = await serveCopy(seeded);
  const direct: Flags = { apiUrl: server.url, config: false };
  const apply = (folder: string) => run((flags, io) => runApply({ ...flags, paths: [folder], autoApprove: true }, io).then((r) => r.exitCode), direct);
  manifests("seed0", [
    wb("a", { [HR1]: 100 }),
    wb("b", { [HR2]: 100 }),
    wb("web", { [HR1]: 100, [HR2]: 0 }, ROLLOUT),
    wb("web2", { [HR1]: 100, [HR2]: 0 }, ROLLOUT),
    breaker(1, 60),
  ]);
  manifests("seed1", [
    wb("a", { [HR1]: 100 }),
    wb("b", { [HR2]: 100 }),
    wb("web", { [HR1]: 0, [HR2]: 100 }, ROLLOUT),
    wb("web2", { [HR1]: 0, [HR2]: 100 }, ROLLOUT),
    breaker(1, 60),
  ]);
  for (const folder of ["seed0", "seed1"]) {
    const r = await apply(folder);
    expect(r.code, r.err).toBe(0);
  }
  expect(await run((flags, io) => runRolloutAbort("web2", flags, io), direct)).toMatchObject({ code: 0 });
  const client = createClient({
    baseUrl: server.url,
    apiKey: KEY,
    concurrency: 1,
    rateLimit: null,
    retries: 0,
    timeoutMs: 5000,
    versionHeader: "Ngrok-Version",
    insecureHttp: false,
  });
  await client.send({ method: "POST", path: "/backends/weighted", body: buildLeaseBody("stale", currentHolder({}), 3_600_000, 0) });
  await client.close();
  await server.close();
  // What the matrix plans and applies: a changed, c created, a circuit breaker on route 1, route 2's retuned (a
  // SAML module's PUT takes longer than the short timeout of the runs).
  manifests("m", [
    wb("a", { [HR1]: 100, [HR2]: 5 }),
    wb("b", { [HR2]: 100 }),
    wb("c", { a: 100 }),
    wb("web", { [HR1]: 0, [HR2]: 100 }, ROLLOUT),
    wb("web2", { [HR1]: 0, [HR2]: 100 }, ROLLOUT),
    breaker(0, 30),
    breaker(1, 90),
  ]);
  // What the matrix applies: an update, a create, a module set and the inventory that records it (no rollout: one
  // held back is not an apply's whole job done; route 2 as it is: one module write of each kind is enough).
  manifests("ma", [wb("a", { [HR1]: 100, [HR2]: 5 }), wb("b", { [HR2]: 100 }), wb("c", { a: 100 }), breaker(0, 30), breaker(1, 60)]);
}, 30_000);

afterAll(() => dir.remove());

interface Row {
  name: string;
  /** `written`: where the run writes its file or folder (`writes`), one place per run. */
  run: (flags: Flags, io: ReturnType<typeof captureIO>, written: string) => Promise<number>;
  /** What a run that did its job reports; a failed run must not. */
  done: RegExp;
  /** A file or folder the command writes only when it did its job. */
  writes?: string;
  /**
   * A command that writes: whether the server holds what it was to do. A run that got past its fault (a lease
   * whose lost answer is found again) may exit 0 only when it holds. A command without one only reads: it may
   * exit as the run without a fault did only with the same output (a failed read of the edge page is read by edge).
   */
  effect?: (listing: Listed[]) => boolean;
}

interface Listed {
  id: string;
  metadata: string;
  marker?: { stack?: string; name?: string; rollout?: { promoted?: number; halted?: string } };
}

/** The weighted backends the server holds, read past the front. */
async function listing(server: RunningServer): Promise<Listed[]> {
  const res = await fetch(`${server.url}/backends/weighted?limit=100`, { headers: { authorization: `Bearer ${KEY}`, "ngrok-version": "2" } });
  const body = (await res.json()) as { backends: Array<{ id: string; metadata: string }> };
  return body.backends.map((b) => ({ ...b, marker: (JSON.parse(b.metadata || "{}") as { edgeplan?: Listed["marker"] }).edgeplan }));
}

const owned = (all: Listed[], name: string): Listed | undefined => all.find((b) => b.marker?.stack === "default" && b.marker.name === name);

/** After an apply: planning again (past the front) finds nothing to do. */
async function converged(server: RunningServer): Promise<boolean> {
  const io = captureIO({ EDGEPLAN_API_KEY: KEY }, dir.path);
  return (await runPlan({ paths: ["ma"], apiUrl: server.url, config: false, detailedExitcode: true }, io)).exitCode === 0;
}

const ROWS: Row[] = [
  {
    name: "plan",
    run: (flags, io) => runPlan({ ...flags, paths: ["m"], listWhileLoading: true }, io).then((r) => r.exitCode),
    done: /weighted_backend\.a/,
  },
  {
    name: "plan --detailed-exitcode --out",
    run: (flags, io, written) => runPlan({ ...flags, paths: ["m"], listWhileLoading: true, detailedExitcode: true, out: written }, io).then((r) => r.exitCode),
    done: /weighted_backend\.a/,
    writes: "saved.json",
  },
  {
    name: "apply",
    run: (flags, io) => runApply({ ...flags, paths: ["ma"], autoApprove: true }, io).then((r) => r.exitCode),
    done: /Apply complete/,
    effect: () => true, // and converged: see runThrough
  },
  {
    name: "export",
    run: (flags, io, written) => runExport({ ...flags, paths: [], out: written }, io).then((r) => r.exitCode),
    done: /wrote /,
    writes: "exported",
  },
  { name: "state list", run: (flags, io) => runStateList(flags, io), done: /weighted_backend\.a/ },
  {
    name: "state release",
    run: (flags, io) => runStateRelease("weighted_backend.b", flags, io),
    done: /weighted_backend\.b/,
    effect: (all) => owned(all, "b") === undefined,
  },
  {
    name: "unlock",
    run: (flags, io) => runUnlock("stale", { ...flags, force: true }, io),
    done: /removed/,
    effect: (all) => leasesOf(all, "stale").length === 0,
  },
  { name: "rollout status", run: (flags, io) => runRolloutStatus(undefined, { ...flags, manifests: ["m"] }, io), done: /weighted_backend\.web/ },
  {
    name: "rollout promote",
    run: (flags, io) => runRolloutPromote("web", flags, io),
    done: /promoted/,
    effect: (all) => owned(all, "web")?.marker?.rollout?.promoted === 1,
  },
  {
    name: "rollout abort",
    run: (flags, io) => runRolloutAbort("web", flags, io),
    done: /aborted/,
    effect: (all) => owned(all, "web")?.marker?.rollout?.halted !== undefined,
  },
  {
    name: "rollout retry",
    run: (flags, io) => runRolloutRetry("web2", flags, io),
    done: /cleared/,
    effect: (all) => owned(all, "web2")?.marker?.rollout?.halted === undefined,
  },
];

/** The run's outcome, or a failed one when it does not end within 10 s (a request that never settles). */
async function bounded(outcome: Promise<Outcome>): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve({ code: 0, out: "", err: "the run did not end within 10 s" }), 10_000);
  });
  try {
    return await Promise.race([outcome, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** One run of `row` on a fresh copy of the world, through a front giving request `at` the `fault`. */
async function runThrough(row: Row, fault: Fault | null, at: number): Promise<Outcome & { seen: string[]; injected: boolean; held: boolean; wrote: boolean }> {
  const written = join(dir.path, `${row.writes ?? "nothing"}-${fault ?? "clean"}-${at}`);
  const server = await serveCopy();
  const proxy = await startFaultProxy(server.url, certs, fault, at);
  try {
    const outcome = await bounded(run(row.run, flagsFor(proxy.url, fault), written));
    let held = false;
    if (row.effect && outcome.code === 0) {
      const all = await listing(server);
      // The stack's lease given back, or said to be left behind.
      const leaseSaid = leasesOf(all, "default").length === 0 || outcome.err.includes('the lease of stack "default" is left behind');
      held = row.effect(all) && leaseSaid && (row.name !== "apply" || (await converged(server)));
    }
    return { ...outcome, seen: proxy.seen, injected: proxy.injected(), held, wrote: existsSync(written) };
  } finally {
    await proxy.close();
    await server.close();
  }
}

/** The message of a fault that lasts, naming the request it failed (`GET /edges/https/ID: ...`). */
const PERSISTENT: Partial<Record<Fault, RegExp>> = {
  "tls-name": /^edgeplan: (GET|POST|PATCH|PUT|DELETE) \/\S+: .*\(ERR_TLS_CERT_ALTNAME_INVALID\)/m,
  refused: /^edgeplan: (GET|POST|PATCH|PUT|DELETE) \/\S+: .*\(ECONNREFUSED\)/m,
};

/** Runs `each` over `items`, a few at a time (each run waits on its server and its timeouts far more than it computes). */
async function inParallel<T>(items: readonly T[], each: (item: T) => Promise<void>, width = 6): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await each(items[next++] as T);
  };
  await Promise.all(Array.from({ length: width }, worker));
}

describe("every command, each of its requests in turn, each fault", () => {
  for (const row of ROWS) {
    it(`${row.name}: exits non-zero naming the failed request, and reports nothing done`, async () => {
      const clean = await runThrough(row, null, 0);
      expect(clean.code, clean.err).toBeLessThanOrEqual(2);
      expect(clean.out, clean.err).toMatch(row.done);
      if (row.effect) expect(clean.held).toBe(true);
      expect(clean.wrote).toBe(row.writes !== undefined);
      const requests = clean.seen;
      expect(requests.length).toBeGreaterThan(0);
      const failures: string[] = [];
      const cases = FAULTS.flatMap((fault) => requests.map((request, i) => ({ fault, at: i + 1, request })));
      await inParallel(cases, async ({ fault, at, request }) => {
        let r = await runThrough(row, fault, at);
        // A request before the held one may itself outlast the short timeout on a loaded machine: once more.
        if (fault === "timeout" && !r.err.includes(request) && /\(TIMEOUT\)/.test(r.err)) r = await runThrough(row, fault, at);
        if (!r.injected) return;
        if (r.code === clean.code && (row.effect ? r.held : r.out === clean.out)) return; // got past it, whole job done
        // A wrong certificate or a stopped server fails the later requests too: one of them may be the one named.
        const named = r.err.includes(request) || (PERSISTENT[fault]?.test(r.err) ?? false);
        if (r.code === 0 || r.code === 2 || !named || row.done.test(r.out) || r.wrote) {
          failures.push(
            `${fault} at request ${at} (${request}): exit ${r.code}${named ? "" : ", request not named"}${r.wrote ? `, wrote ${row.writes}` : ""}\n${r.out}${r.err}`,
          );
        }
      });
      expect(failures, failures.join("\n---\n")).toEqual([]);
    }, 60_000);
  }
});

describe("the built CLI against an API whose certificate names another host", () => {
  /** Runs the CLI in the world's folder through a front whose every connection shows the wrong certificate. */
  async function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
    const server = await serveCopy();
    const proxy = await startFaultProxy(server.url, certs, "tls-name", 1);
    try {
      const env = { EDGEPLAN_API_URL: proxy.url, EDGEPLAN_API_KEY: KEY, NODE_EXTRA_CA_CERTS: certs.wrong.certFile };
      return await runEdgeplan(args, { cwd: dir.path, env });
    } finally {
      await proxy.close();
      await server.close();
    }
  }
  const refused =
    /^edgeplan: GET \/\S+: 0: no answer from https:\/\/127\.0\.0\.1:\d+: Hostname\/IP does not match certificate's altnames: .*\(ERR_TLS_CERT_ALTNAME_INVALID\); check --api-url$/m;

  it("plan of EdgeRoutes on two edges, with and without --detailed-exitcode: exit 1, saying why", async () => {
    for (const flags of [[], ["--detailed-exitcode"]]) {
      const r = await cli(["plan", "m", ...flags]);
      expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: "" });
      expect(r.stderr).toMatch(refused);
    }
  });

  it("export --out DIR: exit 1, saying why, and DIR is not written", async () => {
    const r = await cli(["export", "--out", "exported-by-cli"]);
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: "" });
    expect(r.stderr).toMatch(refused);
    expect(existsSync(join(dir.path, "exported-by-cli"))).toBe(false);
  });
});

describe("the outcome guard of a process (src/commands/outcome.ts)", () => {
  it("turns an event loop that empties before the command settled into exit 1 naming the command and what it waited for", () => {
    const outcome = new URL("../../dist/src/commands/outcome.js", import.meta.url).pathname;
    const script = [
      `import { guardOutcome, waitingFor } from ${JSON.stringify(outcome)};`,
      "const guard = guardOutcome(process, (m) => process.stderr.write(`edgeplan: ${m}\\n`));",
      'guard.running("edgeplan plan");',
      'waitingFor("GET /edges/https/edghts_1");',
      "void guard.settle(new Promise(() => {}));",
    ].join("\n");
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 10_000 });
    expect({ status: r.status, stderr: r.stderr }).toEqual({
      status: 1,
      stderr:
        "edgeplan: edgeplan plan ended before it finished, waiting for GET /edges/https/edghts_1: nothing was left to run and it reported no outcome " +
        "(an internal error of edgeplan); its work is not complete: run it again (--verbose shows each request)\n",
    });
  });
});
