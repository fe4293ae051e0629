/**
 * Running edgeplan and the reference strategy against a bench server, each measured the same way: the requests the
 * server received, and the span from the first request's arrival to the last answer. edgeplan runs as the real
 * CLI in its own process (`node dist/cli/edgeplan.js plan|apply ...`), cold, as a person or a CI job runs it; its start
 * and manifest loading come before any request and are reported apart, as `command_ms` (the whole process).
 */
import { spawn } from "node:child_process";
import { CLIENT_DEFAULTS } from "../src/api/options.js";
import { buildPlan } from "../src/core/plan.js";
import type { Plan, PlanSummary } from "../src/model/plan.js";
import type { DesiredState } from "../src/model/state.js";
import { planRequests } from "./bounds.js";
import { BENCH_STACK, type Fleet } from "./fleet.js";
import { referenceApply, referenceFetchLive, ReferenceClient } from "./reference.js";
import { BENCH_KEY, type BenchServer, type Traffic } from "./traffic.js";

export interface RunFigures {
  traffic: Traffic;
  /** The whole run: for the CLI, the process from spawn to exit (start and manifest loading included), in ms. */
  commandMs: number;
  /** The plan the run made, and its summary. */
  plan: Plan;
  summary: PlanSummary;
}

export interface CommandSettings {
  /** `--concurrency` (default: the client's default). */
  concurrency?: number;
  /** `--rate-limit` (default `off`: the bench server has no limit unless the scenario sets one). */
  rateLimit?: string;
  /** More arguments, e.g. `--target ADDRESS`. */
  args?: string[];
}

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

const RUN_TIMEOUT_MS = 15 * 60_000;

/** Runs the built CLI with the bench key in its environment; resolves when it exits (killed after 15 minutes). */
export function runCli(cli: string, args: string[], cwd: string): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const proc = spawn(process.execPath, [cli, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? "", EDGEPLAN_API_KEY: BENCH_KEY, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    proc.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    proc.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const timer = setTimeout(() => proc.kill("SIGKILL"), RUN_TIMEOUT_MS);
    proc.once("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    proc.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}

function commonArgs(server: BenchServer, settings: CommandSettings): string[] {
  return [
    "--api-url",
    server.url,
    "--stack",
    BENCH_STACK,
    "--concurrency",
    String(settings.concurrency ?? CLIENT_DEFAULTS.concurrency),
    "--rate-limit",
    settings.rateLimit ?? "off",
    "--prune",
    "--format",
    "json",
    ...(settings.args ?? []),
  ];
}

/** Throws unless the summary is the one the fleet was made to give. */
export function checkSummary(what: string, summary: PlanSummary, expected: PlanSummary): void {
  const got = JSON.stringify(summary);
  const want = JSON.stringify(expected);
  if (got !== want) throw new Error(`${what}: the plan is not the one the fleet should give: got ${got}, expected ${want}`);
}

function failure(what: string, exit: Exit): Error {
  const lines = exit.stderr.split("\n").filter((l) => !/: (created|updated|deleted|set|replaced) /.test(l));
  return new Error(`${what} exited ${exit.code}: ${lines.join("\n").slice(0, 1500)}`);
}

/** `edgeplan plan --prune --format json` on the fleet's manifests. */
export async function runEdgeplanPlan(cli: string, server: BenchServer, fleet: Fleet, settings: CommandSettings = {}): Promise<RunFigures> {
  server.traffic.reset();
  const exit = await runCli(cli, ["plan", fleet.manifests, ...commonArgs(server, settings)], fleet.dir);
  await server.settle();
  if (exit.code !== 0) throw failure("edgeplan plan", exit);
  const plan = JSON.parse(exit.stdout) as Plan;
  return { traffic: server.traffic.read(), commandMs: exit.ms, plan, summary: plan.summary };
}

/** `edgeplan apply --prune --auto-approve --format json` on the fleet's manifests; throws unless it converged (exit 0). */
export async function runEdgeplanApply(cli: string, server: BenchServer, fleet: Fleet, settings: CommandSettings = {}): Promise<RunFigures> {
  server.traffic.reset();
  // A lease TTL longer than any run: the fewest requests then hold no renewal (bench/bounds.ts, leaseRequests).
  const exit = await runCli(cli, ["apply", fleet.manifests, "--auto-approve", "--lock-ttl", "1h", ...commonArgs(server, settings)], fleet.dir);
  await server.settle();
  if (exit.code !== 0) throw failure("edgeplan apply", exit);
  // One document: the plan that was shown and the report of the run (src/model/apply-schema.ts).
  const { plan, report } = JSON.parse(exit.stdout) as { plan?: Plan; report?: { status?: string } | null };
  if (!plan || report?.status !== "converged") throw new Error(`edgeplan apply did not report convergence: ${exit.stdout.slice(-800)}`);
  return { traffic: server.traffic.read(), commandMs: exit.ms, plan, summary: plan.summary };
}

async function withReference<T>(server: BenchServer, run: (client: ReferenceClient) => Promise<T>): Promise<{ value: T; ms: number }> {
  const client = new ReferenceClient(server.url, BENCH_KEY);
  try {
    server.traffic.reset();
    const started = performance.now();
    const value = await run(client);
    const ms = performance.now() - started;
    await server.settle();
    return { value, ms };
  } finally {
    await client.close();
  }
}

const referencePlanOptions = { stack: BENCH_STACK, prune: true, takeover: false, maxShift: 50 };

/** The reference strategy's plan: list pages and one GET per managed module, one at a time. */
export async function runReferencePlan(server: BenchServer, desired: DesiredState): Promise<RunFigures> {
  const { value: plan, ms } = await withReference(server, async (client) => buildPlan(desired, await referenceFetchLive(client, desired), referencePlanOptions));
  return { traffic: server.traffic.read(), commandMs: ms, plan, summary: plan.summary };
}

/** The reference strategy's apply: its plan, every change one at a time, every touched object read back. */
export async function runReferenceApply(server: BenchServer, desired: DesiredState): Promise<RunFigures> {
  const { value: plan, ms } = await withReference(server, async (client) => {
    const made = buildPlan(desired, await referenceFetchLive(client, desired), referencePlanOptions);
    await referenceApply(client, made);
    return made;
  });
  return { traffic: server.traffic.read(), commandMs: ms, plan, summary: plan.summary };
}

/** `a / b` to two decimals (0 when b is 0). */
export function ratio(a: number, b: number): number {
  return b === 0 ? 0 : Math.round((a / b) * 100) / 100;
}

/** The run with the median span of several (their spans and request counts are reported beside it). */
export function medianRun(runs: readonly RunFigures[]): { run: RunFigures; spans: number[]; requests: number[] } {
  if (runs.length === 0) throw new Error("medianRun: no runs");
  const sorted = [...runs].sort((a, b) => a.traffic.spanMs - b.traffic.spanMs);
  return {
    run: sorted[Math.floor((sorted.length - 1) / 2)] as RunFigures,
    spans: runs.map((r) => Math.round(r.traffic.spanMs * 10) / 10),
    requests: runs.map((r) => planRequests(r.traffic)),
  };
}
