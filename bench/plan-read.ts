/**
 * Benchmark `plan-read`: `edgeplan plan` over 5,000 weighted backends and 1,000 routes on 50 edges with both
 * modules, 2 % of them changed, against a server that delays every answer by 20 ms. The fewest requests are the
 * list pages plus the first page of the edge list, which holds the 50 edges (`planEdgeReads`). The bound is the time
 * they need at the run's concurrency: the list pages form a chain (each names the next) that holds one slot, and the
 * edge reads share the others; each request takes what
 * one list page takes alone on this machine (`request_ms`, measured just before; `latency_bound_ms` is the same
 * bound with the injected latency only). edgeplan runs several times (cold processes), the median reported. The
 * reference strategy reads the same live side one request at a time, module by module.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { CLIENT_DEFAULTS } from "../src/api/options.js";
import { listPages, overlappedBoundMs, planEdgeReads } from "./bounds.js";
import { makeWorkDir, seedFleet, type FleetSpec } from "./fleet.js";
import { builtCli, progress, requestTargets, round1, type Measurement, type Scenario } from "./measure.js";
import { checkSummary, medianRun, ratio, runEdgeplanPlan, runReferencePlan, type RunFigures } from "./runs.js";
import { startBenchServer, warmUp, type BenchServer } from "./traffic.js";

/** How far the whole `plan` command may be from the bound of its reads. */
export const COMMAND_SLACK = 1.5;

export interface PlanReadSize {
  fleet: FleetSpec;
  latencyMs: number;
  /** Runs of edgeplan (the median is reported). */
  runs: number;
  /** Also run the reference strategy (slow: one request at a time). */
  reference: boolean;
}

export const PLAN_READ_SIZES: { full: PlanReadSize; quick: PlanReadSize } = {
  full: {
    fleet: { same: 4900, changed: 100, created: 0, orphans: 0, edges: 50, routesPerEdge: 20, changedRoutes: 20 },
    latencyMs: 20,
    runs: 5,
    reference: true,
  },
  quick: {
    fleet: { same: 980, changed: 20, created: 0, orphans: 0, edges: 10, routesPerEdge: 10, changedRoutes: 2 },
    latencyMs: 20,
    runs: 3,
    reference: true,
  },
};

/** Runs plan-read at a size and returns its figures. */
export async function measurePlanRead(size: PlanReadSize, log: (line: string) => void = () => undefined): Promise<Measurement> {
  const { fleet: spec, latencyMs } = size;
  const dir = makeWorkDir();
  let server: BenchServer | undefined;
  try {
    const dataFile = join(dir, "live.db");
    const fleet = await seedFleet(dataFile, spec, dir);
    const cli = builtCli();
    server = await startBenchServer(cli, { dataFile, latencyMs });
    const [pageMs = latencyMs] = await warmUp(server, ["/backends/weighted?limit=100", `/edges/https/${fleet.desired.edgeRoutes[0]?.edge ?? ""}`]);
    const concurrency = CLIENT_DEFAULTS.concurrency;

    log(`plan-read: edgeplan plan over ${spec.same + spec.changed} weighted backends, ${spec.edges * spec.routesPerEdge} routes on ${spec.edges} edges, ${size.runs} runs`);
    const runs: RunFigures[] = [];
    for (let i = 0; i < size.runs; i++) {
      const run = await runEdgeplanPlan(cli, server, fleet, { concurrency });
      checkSummary("plan-read", run.summary, fleet.expected);
      runs.push(run);
    }
    const { run, spans, requests } = medianRun(runs);

    // The stack's inventory objects are weighted backends too: the listing holds them (docs/ownership.md).
    const pages = listPages(spec.same + spec.changed + spec.orphans + fleet.inventoryObjects);
    const edgeReads = planEdgeReads(spec.edges);
    const figures = {
      requests: Math.max(...requests),
      minimal_requests: pages + edgeReads,
      wall_ms: round1(run.traffic.spanMs),
      bound_ms: round1(overlappedBoundMs(pages, edgeReads, concurrency, pageMs)),
      status_429: runs.reduce((n, r) => n + r.traffic.status429, 0),
    };
    const latencyBound = overlappedBoundMs(pages, edgeReads, concurrency, latencyMs);
    // The whole command (node's start, loading the manifests, the reads, the plan) against the same bound.
    const commandVsBound = ratio(run.commandMs, figures.bound_ms);
    const reads = requestTargets(figures);
    const result: Measurement = {
      ...figures,
      ...reads,
      ok: reads.ok && commandVsBound <= COMMAND_SLACK,
      target: `${reads.target}, command_ms <= ${COMMAND_SLACK}x bound`,
      command_vs_bound: commandVsBound,
      wall_ms_runs: JSON.stringify(spans),
      request_ms: round1(pageMs),
      latency_bound_ms: latencyBound,
      wall_vs_latency_bound: ratio(figures.wall_ms, latencyBound),
      command_ms: round1(run.commandMs),
      weighted_backends: spec.same + spec.changed,
      routes: spec.edges * spec.routesPerEdge,
      edges: spec.edges,
      changes: run.summary.total,
      concurrency,
      latency_ms: latencyMs,
      requests_by_kind: JSON.stringify(run.traffic.byKind),
    };

    // Side by side in the same run: a plan targeted at the modules of one edge reads that edge, and lists the
    // weighted backends for the inventory objects alone (docs/ownership.md).
    const edge = fleet.desired.edgeRoutes[0]?.edge ?? "";
    log(`plan-read: edgeplan plan --target 'edge_route.${edge}/*'`);
    const targeted = await runEdgeplanPlan(cli, server, fleet, { concurrency, args: ["--target", `edge_route.${edge}/*`] });
    if (!targeted.plan.targeted || targeted.plan.changes.some((c) => !c.address.startsWith(`edge_route.${edge}/`))) {
      throw new Error("plan-read: the targeted plan holds changes outside its target");
    }
    result.targeted_requests = targeted.traffic.requests;
    result.targeted_wall_ms = round1(targeted.traffic.spanMs);
    result.targeted_requests_ratio = ratio(run.traffic.requests, targeted.traffic.requests);

    if (size.reference) {
      log("plan-read: the reference strategy (one request at a time, one GET per module)");
      const ref = await runReferencePlan(server, fleet.desired);
      checkSummary("plan-read reference", ref.summary, fleet.expected);
      result.reference_requests = ref.traffic.requests;
      result.reference_wall_ms = round1(ref.traffic.spanMs);
      result.reference_requests_ratio = ratio(ref.traffic.requests, run.traffic.requests);
      result.reference_wall_ratio = ratio(ref.traffic.spanMs, run.traffic.spanMs);
    }
    return result;
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const planReadScenario: Scenario = {
  name: "plan-read",
  description: "edgeplan plan: 5,000 weighted backends, 1,000 routes on 50 edges with both modules, 2 % changed, 20 ms latency",
  run: ({ quick }) => measurePlanRead(quick ? PLAN_READ_SIZES.quick : PLAN_READ_SIZES.full, progress),
};
