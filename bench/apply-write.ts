/**
 * Benchmark `apply-write`: `edgeplan apply --prune` making 1,000 creates (every tenth referring to another new one
 * by name, so the plan has two dependency levels), 1,000 updates and 200 deletes against a server that delays every
 * answer by 20 ms. The fewest requests are the list pages read before, one read of each child id the creates
 * introduce (one that no live object references yet), one request per change, and the reads that
 * tell convergence (a listing after the run when that is fewer requests than reading every touched object). The
 * bound adds the sequential reads to the levels of the dependency graph run `concurrency` at a time, each request
 * taking what one takes alone on this machine (`request_ms`; `latency_bound_ms` counts the injected latency only).
 * edgeplan runs several times from the same starting state, the median reported; the reference strategy does the
 * same job from that state, one request at a time.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { CLIENT_DEFAULTS } from "../src/api/options.js";
import { dependencyLevels } from "../src/core/graph.js";
import { leaseRequests, levelsBoundMs, listPages, overlappedBoundMs } from "./bounds.js";
import { introducedChildren, makeWorkDir, seedFleet, type FleetSpec } from "./fleet.js";
import { builtCli, progress, requestTargets, round1, type Measurement, type Scenario } from "./measure.js";
import { checkSummary, medianRun, ratio, runEdgeplanApply, runReferenceApply, type RunFigures } from "./runs.js";
import { copyDataFile, startBenchServer, warmUp, type BenchServer, type Traffic } from "./traffic.js";

export interface ApplyWriteSize {
  fleet: FleetSpec;
  latencyMs: number;
  /** Runs of edgeplan, each from the same starting state (the median is reported). */
  runs: number;
  reference: boolean;
}

export const APPLY_WRITE_SIZES: { full: ApplyWriteSize; quick: ApplyWriteSize } = {
  full: {
    fleet: { same: 0, changed: 1000, created: 1000, orphans: 200, edges: 0, routesPerEdge: 0, changedRoutes: 0 },
    latencyMs: 20,
    runs: 3,
    reference: true,
  },
  quick: {
    fleet: { same: 0, changed: 100, created: 100, orphans: 20, edges: 0, routesPerEdge: 0, changedRoutes: 0 },
    latencyMs: 20,
    runs: 3,
    reference: true,
  },
};

/** Throws unless the server received exactly one write per planned change. */
export function checkWrites(what: string, traffic: Traffic, spec: FleetSpec, leases: 0 | 1): void {
  const got = {
    creates: traffic.byKind["POST /backends/weighted"] ?? 0,
    updates: traffic.byKind["PATCH /backends/weighted/:id"] ?? 0,
    deletes: traffic.byKind["DELETE /backends/weighted/:id"] ?? 0,
  };
  // edgeplan's lease adds one create and one delete (bench/bounds.ts, leaseRequests); the reference takes none.
  const want = { creates: spec.created + leases, updates: spec.changed, deletes: spec.orphans + leases };
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`${what}: the server received ${JSON.stringify(got)} writes, expected ${JSON.stringify(want)}`);
  }
}

/** Starts a server on a fresh copy of the pristine data file, so that every run starts from the same state. */
async function serverFromCopy(cli: string, pristine: string, copy: string, latencyMs: number): Promise<BenchServer> {
  copyDataFile(pristine, copy);
  return startBenchServer(cli, { dataFile: copy, latencyMs });
}

/** Runs apply-write at a size and returns its figures. */
export async function measureApplyWrite(size: ApplyWriteSize, log: (line: string) => void = () => undefined): Promise<Measurement> {
  const { fleet: spec, latencyMs } = size;
  const dir = makeWorkDir();
  const servers: BenchServer[] = [];
  try {
    const pristine = join(dir, "pristine.db");
    const fleet = await seedFleet(pristine, spec, dir);
    const cli = builtCli();
    const concurrency = CLIENT_DEFAULTS.concurrency;

    log(`apply-write: edgeplan apply: ${spec.created} creates, ${spec.changed} updates, ${spec.orphans} deletes, ${size.runs} runs`);
    const runs: RunFigures[] = [];
    let pageMs = latencyMs;
    let objectMs = latencyMs;
    for (let i = 0; i < size.runs; i++) {
      const server = await serverFromCopy(cli, pristine, join(dir, `run-${i}.db`), latencyMs);
      servers.push(server);
      // A list page and a one-object answer, alone, as measured on this machine: what a read of the chain and a
      // write take at best (from the first server; the others are warmed the same way).
      const [page = latencyMs, object = latencyMs] = await warmUp(server, ["/backends/weighted?limit=100", "/backends/weighted?limit=1"]);
      if (i === 0) [pageMs, objectMs] = [page, object];
      const run = await runEdgeplanApply(cli, server, fleet, { concurrency });
      checkSummary("apply-write", run.summary, fleet.expected);
      checkWrites("apply-write", run.traffic, spec, 1);
      runs.push(run);
      await server.stop();
    }
    const { run, spans, requests } = medianRun(runs);

    const before = spec.same + spec.changed + spec.orphans;
    const after = spec.same + spec.changed + spec.created;
    const touched = spec.created + spec.changed + spec.orphans;
    // The lease object is live while the plan lists the account and while the run's convergence is read: one more
    // object in each listing. Convergence reads: a listing of the account after the run, or every touched object by
    // id: the fewer.
    const convergenceReads = Math.min(listPages(after + 1), touched);
    const levels = dependencyLevels(run.plan).map((l) => l.length);
    const lease = leaseRequests(before);
    // The child ids the creates introduce are read once the listing shows which ones no object references yet.
    const children = introducedChildren(spec);
    const boundAt = (readMs: number, writeMs: number): number =>
      lease.writes * writeMs +
      lease.pages * readMs +
      overlappedBoundMs(listPages(before + 1), 0, concurrency, readMs) +
      Math.ceil(children / concurrency) * readMs +
      levelsBoundMs(levels, concurrency, writeMs) +
      (convergenceReads === touched ? Math.ceil(touched / concurrency) * writeMs : convergenceReads * readMs);
    const figures = {
      requests: Math.max(...requests),
      minimal_requests: lease.writes + lease.pages + listPages(before + 1) + children + touched + convergenceReads,
      wall_ms: round1(run.traffic.spanMs),
      bound_ms: round1(boundAt(pageMs, objectMs)),
      status_429: runs.reduce((n, r) => n + r.traffic.status429, 0),
    };
    const latencyBound = boundAt(latencyMs, latencyMs);
    const result: Measurement = {
      ...figures,
      ...requestTargets(figures),
      wall_ms_runs: JSON.stringify(spans),
      lease_checks_runs: JSON.stringify(runs.map((r) => r.traffic.leaseChecks)),
      request_ms: round1(objectMs),
      page_request_ms: round1(pageMs),
      latency_bound_ms: latencyBound,
      wall_vs_latency_bound: ratio(figures.wall_ms, latencyBound),
      command_ms: round1(run.commandMs),
      creates: spec.created,
      updates: spec.changed,
      deletes: spec.orphans,
      dependency_levels: JSON.stringify(levels),
      concurrency,
      latency_ms: latencyMs,
      requests_by_kind: JSON.stringify(run.traffic.byKind),
    };

    if (size.reference) {
      const refServer = await serverFromCopy(cli, pristine, join(dir, "reference.db"), latencyMs);
      servers.push(refServer);
      await warmUp(refServer, ["/backends/weighted?limit=100", "/backends/weighted?limit=1"]);
      log("apply-write: the reference strategy (one request at a time, every touched object read back)");
      const ref = await runReferenceApply(refServer, fleet.desired);
      checkSummary("apply-write reference", ref.summary, fleet.expected);
      checkWrites("apply-write reference", ref.traffic, spec, 0);
      result.reference_requests = ref.traffic.requests;
      result.reference_wall_ms = round1(ref.traffic.spanMs);
      result.reference_requests_ratio = ratio(ref.traffic.requests, run.traffic.requests);
      result.reference_wall_ratio = ratio(ref.traffic.spanMs, run.traffic.spanMs);
    }
    return result;
  } finally {
    for (const s of servers) await s.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const applyWriteScenario: Scenario = {
  name: "apply-write",
  description: "edgeplan apply: 1,000 creates, 1,000 updates, 200 deletes, 20 ms latency",
  run: ({ quick }) => measureApplyWrite(quick ? APPLY_WRITE_SIZES.quick : APPLY_WRITE_SIZES.full, progress),
};
