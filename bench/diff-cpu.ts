/**
 * Benchmark `diff-cpu`: the pure diff, `buildPlan`, of 10,000 weighted backends and 4,000 modules (2,000 routes with
 * both), 2 % of them changed, with creates and deletes, no I/O. The inputs are made here (manifests through the
 * product's loader; the live side as the server renders it, turned into a LiveState as the client does) and
 * written to a file; a fresh process reads them and times buildPlan alone, so that the memory reported is that of
 * the inputs and the plan. Targets: under 100 ms (the median of the runs after the first, which is reported too)
 * and under 200 MB resident at the process's peak.
 */
import { spawn } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildLiveState } from "../src/api/live-state.js";
import { buildPlan } from "../src/core/plan.js";
import type { PlanSummary } from "../src/model/plan.js";
import type { DesiredState, LiveState } from "../src/model/state.js";
import type { CircuitBreakerModule, SamlModule } from "../src/model/wire.js";
import { renderRoute, renderWeightedBackend } from "../src/server/render.js";
import { openSqliteStore } from "../src/server/sqlite-store.js";
import { BENCH_STACK, makeWorkDir, provisionFleet, seedLive, writeFleet, type FleetSpec } from "./fleet.js";
import { median, repoRoot, round1, type Measurement, type Scenario } from "./measure.js";
import { checkSummary } from "./runs.js";
import { BENCH_ACCOUNT } from "./traffic.js";

export interface DiffCpuSize {
  fleet: FleetSpec;
  /** Timed runs of buildPlan (the first is reported apart: it includes the compilation of the code). */
  runs: number;
}

export const DIFF_CPU_SIZES: { full: DiffCpuSize; quick: DiffCpuSize } = {
  full: { fleet: { same: 9700, changed: 200, created: 100, orphans: 100, edges: 100, routesPerEdge: 20, changedRoutes: 40 }, runs: 21 },
  quick: { fleet: { same: 970, changed: 20, created: 10, orphans: 10, edges: 10, routesPerEdge: 20, changedRoutes: 4 }, runs: 7 },
};

const TARGET_MS = 100;
const TARGET_MB = 200;

const mb = (bytes: number): number => round1(bytes / (1024 * 1024));

/** The inputs of buildPlan for the fleet: desired as loaded from manifests, live as the client would read it. */
export async function buildDiffInputs(spec: FleetSpec): Promise<{ desired: DesiredState; live: LiveState; expected: PlanSummary }> {
  const dir = makeWorkDir();
  const store = openSqliteStore();
  try {
    const ids = provisionFleet(store, BENCH_ACCOUNT, spec);
    const fleet = await writeFleet(repoRoot(), spec, ids, dir);
    await seedLive(store, BENCH_ACCOUNT, spec, fleet, ids);
    const base = "http://127.0.0.1:4780";
    const wbs = store.listWeightedBackends(BENCH_ACCOUNT, { limit: 1_000_000 }).map((r) => renderWeightedBackend(base, r));
    const routes = fleet.desired.edgeRoutes.map((r) => {
      const route = store.getRoute(BENCH_ACCOUNT, r.edge, r.route);
      if (!route) throw new Error(`diff-cpu: route ${r.route} was not seeded`);
      const wire = renderRoute(base, "https://idp.edgeplan.localhost", route);
      return { edge: r.edge, route: r.route, saml: wire.saml as SamlModule | null, circuit_breaker: wire.circuit_breaker as CircuitBreakerModule | null };
    });
    return { desired: fleet.desired, live: buildLiveState(wbs, routes), expected: fleet.expected };
  } finally {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function peakRssMb(): number {
  try {
    const kb = /VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    if (kb !== undefined) return round1(Number(kb) / 1024);
  } catch {
    // Not Linux: the current resident size instead.
  }
  return mb(process.memoryUsage().rss);
}

/** The inputs file, parsed (in a function of its own, so that the file's text is garbage once it returns). */
function readInputs(file: string): { desired: DesiredState; live: LiveState; expected: PlanSummary } {
  return JSON.parse(readFileSync(file, "utf8")) as { desired: DesiredState; live: LiveState; expected: PlanSummary };
}

/**
 * Times buildPlan over inputs read from a JSON file, in this process: what a plan costs once its inputs are in
 * memory. `rss_mb` is the process's peak resident size (inputs, plan and node itself).
 */
export function measureDiffFromFile(file: string, runs: number): Measurement {
  const { desired, live, expected } = readInputs(file);
  const options = { stack: BENCH_STACK, prune: true, takeover: false, maxShift: 50 };
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const times: number[] = [];
  const cpu: number[] = [];
  let retained = 0;
  let changes = 0;
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    const plan = buildPlan(desired, live, options);
    times.push(performance.now() - started);
    const used = process.cpuUsage(cpuStarted);
    cpu.push((used.user + used.system) / 1000);
    if (i === 0) checkSummary("diff-cpu", plan.summary, expected);
    // Collected while the plan is still referenced (below): what is left is the plan itself.
    gc?.();
    retained = Math.max(retained, process.memoryUsage().heapUsed - heapBefore);
    changes = plan.changes.length;
  }
  const [first, ...rest] = times;
  const wall = median(rest.length > 0 ? rest : times);
  const rss = peakRssMb();
  return {
    wall_ms: round1(wall),
    first_run_ms: round1(first ?? 0),
    // The process's CPU time (its GC threads included) over the same runs: on a busy machine the wall time also
    // holds the time other processes had the core.
    cpu_ms: round1(median(cpu.slice(1).length > 0 ? cpu.slice(1) : cpu)),
    runs: times.length,
    rss_mb: rss,
    inputs_heap_mb: mb(heapBefore),
    plan_heap_mb: mb(retained),
    weighted_backends: desired.weightedBackends.length,
    live_weighted_backends: live.weightedBackends.length,
    modules: 2 * desired.edgeRoutes.length,
    changes,
    ok: wall < TARGET_MS && rss < TARGET_MB,
    target: `buildPlan under ${TARGET_MS} ms (median), process under ${TARGET_MB} MB resident at its peak`,
  };
}

/**
 * Builds the inputs here, writes them to a file, and times buildPlan in a fresh process (`--expose-gc`) that holds
 * only them, so that its memory is the diff's and not the manifest loader's or the store's.
 */
export async function measureDiffCpu(size: DiffCpuSize): Promise<Measurement> {
  const dir = makeWorkDir();
  try {
    const file = join(dir, "inputs.json");
    writeFileSync(file, JSON.stringify(await buildDiffInputs(size.fleet)));
    return await new Promise<Measurement>((resolve, reject) => {
      // Always the built module (run from TypeScript, as in the tests, this file cannot be started by node).
      const script = join(repoRoot(), "dist", "bench", "diff-cpu.js");
      const proc = spawn(process.execPath, ["--expose-gc", script, file, String(size.runs)], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      proc.stdout.setEncoding("utf8").on("data", (c: string) => (out += c));
      proc.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
      const timer = setTimeout(() => proc.kill("SIGKILL"), 300_000);
      proc.once("close", (code) => {
        clearTimeout(timer);
        if (code !== 0) return reject(new Error(`diff-cpu child exited ${code}: ${err.slice(-1500)}`));
        try {
          resolve(JSON.parse(out) as Measurement);
        } catch {
          reject(new Error(`diff-cpu child printed no result: ${out.slice(0, 500)} ${err.slice(-500)}`));
        }
      });
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const diffCpuScenario: Scenario = {
  name: "diff-cpu",
  description: "buildPlan of 10,000 weighted backends and 4,000 modules, no I/O: time and memory",
  run: ({ quick }) => measureDiffCpu(quick ? DIFF_CPU_SIZES.quick : DIFF_CPU_SIZES.full),
};

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [file, runs] = process.argv.slice(2);
  if (file === undefined) {
    process.stderr.write("usage: node --expose-gc dist/bench/diff-cpu.js INPUTS_JSON [RUNS]\n");
    process.exitCode = 2;
  } else {
    try {
      process.stdout.write(`${JSON.stringify(measureDiffFromFile(file, Number(runs ?? 7)))}\n`);
    } catch (err) {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    }
  }
}
