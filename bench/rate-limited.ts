/**
 * Benchmark `rate-limited`: `edgeplan plan`, then `edgeplan apply`, against a server started with
 * `--rate-limit 20/1s` (N requests in any rolling window), the client told the same budget with `--rate-limit`.
 * Target: no 429, and each run within 1.2 times the earliest its requests can finish under the budget (the first N
 * at once, every next N one window later). The two runs are a window apart, as a plan on a pull request and the
 * apply on merge are: two processes cannot know each other's requests, so one started less than a window after
 * another shares a budget it cannot see (docs/performance.md says so).
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { parseRateLimit } from "../src/model/syntax.js";
import { applyEdgeReads, leaseRequests, listPages, planEdgeReads, planRequests, rateBoundMs } from "./bounds.js";
import { introducedChildren, makeWorkDir, seedFleet, type FleetSpec } from "./fleet.js";
import { builtCli, progress, requestTargets, round1, type Measurement, type Scenario } from "./measure.js";
import { checkSummary, runEdgeplanApply, runEdgeplanPlan } from "./runs.js";
import { startBenchServer, type BenchServer } from "./traffic.js";

export interface RateLimitedSize {
  fleet: FleetSpec;
  /** The server's and the client's `--rate-limit`. */
  rateLimit: string;
}

export const RATE_LIMITED_SIZES: { full: RateLimitedSize; quick: RateLimitedSize } = {
  full: {
    fleet: { same: 0, changed: 60, created: 100, orphans: 20, edges: 2, routesPerEdge: 5, changedRoutes: 5 },
    rateLimit: "20/1s",
  },
  quick: {
    fleet: { same: 0, changed: 20, created: 30, orphans: 5, edges: 1, routesPerEdge: 5, changedRoutes: 2 },
    rateLimit: "20/1s",
  },
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The fewest requests of a plan and of an apply of the fleet, and the edges whose modules change. */
export function fleetRequests(spec: FleetSpec): { plan: number; apply: number } {
  const before = spec.same + spec.changed + spec.orphans;
  const after = spec.same + spec.changed + spec.created;
  const edgesTouched = spec.routesPerEdge === 0 ? 0 : Math.ceil(spec.changedRoutes / spec.routesPerEdge);
  const touchedWbs = spec.created + spec.changed + spec.orphans;
  const reads = listPages(before) + introducedChildren(spec);
  const changes = touchedWbs + 2 * spec.changedRoutes;
  const convergence = (touchedWbs === 0 ? 0 : Math.min(listPages(after), touchedWbs)) + applyEdgeReads(edgesTouched);
  const lease = leaseRequests(before);
  // `plan` reads the first page of the edge list while its manifests load; `apply` reads the edges it plans.
  return { plan: reads + planEdgeReads(spec.edges), apply: lease.writes + lease.pages + reads + applyEdgeReads(spec.edges) + changes + convergence };
}

/** Runs rate-limited at a size and returns its figures. */
export async function measureRateLimited(size: RateLimitedSize, log: (line: string) => void = () => undefined): Promise<Measurement> {
  const { fleet: spec } = size;
  const limit = parseRateLimit(size.rateLimit);
  if (!limit) throw new Error("rate-limited needs a rate limit");
  const dir = makeWorkDir();
  let server: BenchServer | undefined;
  try {
    const dataFile = join(dir, "live.db");
    const fleet = await seedFleet(dataFile, spec, dir);
    const cli = builtCli();
    server = await startBenchServer(cli, { dataFile, rateLimit: size.rateLimit });
    const settings = { rateLimit: size.rateLimit };

    log(`rate-limited: edgeplan plan against --rate-limit ${size.rateLimit}`);
    const plan = await runEdgeplanPlan(cli, server, fleet, settings);
    checkSummary("rate-limited plan", plan.summary, fleet.expected);
    await sleep(limit.windowMs + 100);
    log(`rate-limited: edgeplan apply against --rate-limit ${size.rateLimit}`);
    const apply = await runEdgeplanApply(cli, server, fleet, settings);
    checkSummary("rate-limited apply", apply.summary, fleet.expected);

    const minimal = fleetRequests(spec);
    const figures = {
      requests: plan.traffic.requests + planRequests(apply.traffic),
      minimal_requests: minimal.plan + minimal.apply,
      wall_ms: round1(plan.traffic.spanMs + apply.traffic.spanMs),
      bound_ms: rateBoundMs(plan.traffic.requests, limit.count, limit.windowMs) + rateBoundMs(apply.traffic.requests, limit.count, limit.windowMs),
      status_429: plan.traffic.status429 + apply.traffic.status429,
    };
    return {
      ...figures,
      ...requestTargets(figures),
      rate_limit: size.rateLimit,
      plan_requests: plan.traffic.requests,
      apply_requests: apply.traffic.requests,
      lease_checks: apply.traffic.leaseChecks,
      plan_wall_ms: round1(plan.traffic.spanMs),
      apply_wall_ms: round1(apply.traffic.spanMs),
      requests_per_s: round1((figures.requests / figures.wall_ms) * 1000),
      requests_by_kind: JSON.stringify(apply.traffic.byKind),
    };
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const rateLimitedScenario: Scenario = {
  name: "rate-limited",
  description: "edgeplan plan, then apply, against the server's --rate-limit 20/1s",
  run: ({ quick }) => measureRateLimited(quick ? RATE_LIMITED_SIZES.quick : RATE_LIMITED_SIZES.full, progress),
};
