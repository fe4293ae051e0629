/**
 * Every benchmark scenario at a very small size: it runs end to end against the built CLI and server on loopback
 * and returns a well-formed result. Request counts are asserted exactly (they do not depend on the machine); times
 * are not (speed targets belong to `npm run bench`).
 */
import { describe, expect, it } from "vitest";
import { measureActionStart } from "../../bench/action-start.js";
import { measureAgent } from "../../bench/agent.js";
import { measureApplyWrite } from "../../bench/apply-write.js";
import { measureColdStart } from "../../bench/cold-start.js";
import { measureDiffCpu } from "../../bench/diff-cpu.js";
import { measurePolicyCpu } from "../../bench/policy-cpu.js";
import { SCENARIOS } from "../../bench/run.js";
import { measurePlanRead } from "../../bench/plan-read.js";
import { measureRateLimited } from "../../bench/rate-limited.js";
import { postgresTestsRun } from "../../bench/postgres-cluster.js";
import { measureServerLoad } from "../../bench/server-load.js";
import { measureServerPg } from "../../bench/server-pg.js";

const none = { same: 0, changed: 0, created: 0, orphans: 0, edges: 0, routesPerEdge: 0, changedRoutes: 0 };

/** A time was measured: above 0 (a timer never started reads 0) and under the test's own timeout. */
function expectTimes(result: Record<string, unknown>, fields: string[]): void {
  for (const f of fields) {
    expect(typeof result[f], f).toBe("number");
    expect(result[f] as number, f).toBeGreaterThan(0);
    expect(result[f] as number, f).toBeLessThan(60_000);
  }
}

describe("bench scenarios at a tiny size", () => {
  it("registers every scenario of the benchmark once", () => {
    expect(SCENARIOS.map((s) => s.name)).toEqual([
      "plan-read",
      "apply-write",
      "rate-limited",
      "diff-cpu",
      "policy-cpu",
      "validate",
      "validate-large",
      "cold-start",
      "action-start",
      "server",
      "server-pg",
      "agent",
    ]);
  });

  it("agent: a cycle of three stacks with nothing to change sends one listing of the account, not one per stack", async () => {
    // 3 stacks of 150 objects: 450 objects, 5 pages in one listing (a listing per stack would be 15).
    const r = await measureAgent({ stacks: 3, objects: 150, cycles: 3, baselineCycle: 2, latencyMs: 1 });
    expect(r.minimal_requests).toBe(5);
    expect(r.requests).toBe(5);
    expectTimes(r, ["wall_ms", "bound_ms", "cycle_ms", "rss_mb"]);
  }, 60_000);

  it("plan-read: the list pages plus one page of edges; the reference reads every module", async () => {
    const r = await measurePlanRead({
      fleet: { ...none, same: 140, changed: 10, edges: 2, routesPerEdge: 3, changedRoutes: 1 },
      latencyMs: 2,
      runs: 1,
      reference: true,
    });
    expect(r.requests).toBe(2 + 1);
    expect(r.minimal_requests).toBe(3);
    expect(r.status_429).toBe(0);
    expect(r.changes).toBe(10 + 2);
    expect(JSON.parse(r.requests_by_kind as string)).toEqual({ "GET /backends/weighted": 2, "GET /edges/https": 1 });
    // A plan targeted at one edge's modules reads that edge, and lists the weighted backends for the inventory
    // objects alone (which stack owns each module): the 2 pages and the edge, as many as the whole plan.
    expect(r.targeted_requests).toBe(2 + 1);
    expect(r.targeted_requests_ratio).toBe(1);
    // The reference: the same 2 pages, then one GET per module of the 6 routes.
    expect(r.reference_requests).toBe(2 + 12);
    expectTimes(r, ["wall_ms", "bound_ms", "latency_bound_ms", "command_ms", "reference_wall_ms", "targeted_wall_ms"]);
  }, 60_000);

  it("apply-write: the lease object counts in the listings it is live for, at a page's boundary", async () => {
    // 100 objects before the run: with the lease, the plan's listing holds 101, two pages.
    const r = await measureApplyWrite({ fleet: { ...none, same: 99, changed: 1 }, latencyMs: 2, runs: 1, reference: false });
    // The lease (create, two pages, delete), the plan's two pages, one update, its read back by id.
    expect(r.minimal_requests).toBe(2 + 2 + 2 + 1 + 1);
    expect(r.requests).toBe(r.minimal_requests);
  }, 60_000);

  it("apply-write: the lease, one request per change, the reads before, and one list page to tell convergence", async () => {
    const r = await measureApplyWrite({
      fleet: { ...none, changed: 5, created: 12, orphans: 3 },
      latencyMs: 2,
      runs: 1,
      reference: true,
    });
    // The lease: its create, one page to find other leases, its delete. The creates name 10 child backends that
    // no live object references yet (children 6 to 15 of the fleet's 16): each is read once before the plan.
    expect(r.requests).toBe(3 + 1 + 10 + 20 + 1);
    expect(r.minimal_requests).toBe(35);
    expect(r.status_429).toBe(0);
    expect(JSON.parse(r.requests_by_kind as string)).toEqual({
      "GET /backends/http_response/:id": 5,
      "GET /backends/tunnel_group/:id": 5,
      "GET /backends/weighted": 3,
      "POST /backends/weighted": 13,
      "PATCH /backends/weighted/:id": 5,
      "DELETE /backends/weighted/:id": 4,
    });
    // new-00009 refers to new-00008 by name: two levels.
    expect(JSON.parse(r.dependency_levels as string)).toEqual([19, 1]);
    // The reference: one page, the 20 writes, then the 20 objects read back one by one.
    expect(r.reference_requests).toBe(1 + 20 + 20);
    expectTimes(r, ["wall_ms", "bound_ms", "command_ms", "reference_wall_ms"]);
  }, 60_000);

  it("rate-limited: no 429 under the server's limit, and the fewest requests", async () => {
    const r = await measureRateLimited({
      fleet: { ...none, changed: 3, created: 5, orphans: 1, edges: 1, routesPerEdge: 2, changedRoutes: 1 },
      rateLimit: "10/1s",
    });
    expect(r.status_429).toBe(0);
    // Each reads the 5 child ids the creates introduce (children 4 to 8), one GET each.
    expect(r.plan_requests).toBe(1 + 1 + 5);
    expect(r.apply_requests).toBe(3 + 2 + 5 + 11 + 2);
    expect(r.requests).toBe(r.minimal_requests);
    expect(r.bound_ms).toBe(2000);
    expectTimes(r, ["wall_ms", "plan_wall_ms", "apply_wall_ms"]);
    // The bound is the earliest the requests can finish under the limit: no run is faster.
    expect(r.wall_ms as number).toBeGreaterThanOrEqual(r.bound_ms as number);
  }, 60_000);

  it("diff-cpu: times buildPlan in a process of its own", async () => {
    const r = await measureDiffCpu({ fleet: { ...none, same: 40, changed: 2, created: 2, orphans: 2, edges: 2, routesPerEdge: 2, changedRoutes: 1 }, runs: 2 });
    expect(r.weighted_backends).toBe(44);
    // The 44, and the inventory object that records the modules of the fleet's routes.
    expect(r.live_weighted_backends).toBe(45);
    expect(r.modules).toBe(8);
    expect(r.changes).toBe(2 + 2 + 2 + 2);
    expect(r.runs).toBe(2);
    expect(r.rss_mb as number).toBeGreaterThan(0);
    expectTimes(r, ["wall_ms", "first_run_ms"]);
  }, 60_000);

  it("policy-cpu: judges 10 policies over a plan, beside buildPlan of the same inputs", async () => {
    const r = await measurePolicyCpu({ fleet: { ...none, same: 40, changed: 2, created: 0, orphans: 0, edges: 2, routesPerEdge: 2, changedRoutes: 1 }, runs: 2 });
    expect(r.rules).toBe(10);
    expect(r.weighted_backends).toBe(42);
    // 2 weighted backends updated, the SAML module and the circuit breaker of the changed route written.
    expect(r.changes).toBe(2 + 2);
    // 2 updates x 4 weighted-backend rules, 2 module writes x 1 rule of their kind, and the 2 plan-wide rules.
    expect(r.evaluated).toBe(8 + 2 + 2);
    expect(r.vs_diff as number).toBeGreaterThan(0);
    expectTimes(r, ["wall_ms", "diff_ms", "first_run_ms"]);
  }, 60_000);

  it("cold-start: --version and validate examples exit 0", async () => {
    const r = await measureColdStart({ runs: 1 });
    expect(r.runs).toBe(1);
    expectTimes(r, ["wall_ms", "validate_examples_ms", "node_ms"]);
  }, 60_000);

  it("action-start: the bundled action posts its comment (the install and build baseline is left to npm run bench)", async () => {
    const r = await measureActionStart({ runs: 1, baseline: false });
    expect(r.runs).toBe(1);
    expect(r.composite_install_build_ms).toBeUndefined();
    expect(r.target).toBe("comment posted within 2000 ms of the start");
    expect(typeof r.ok).toBe("boolean");
    expectTimes(r, ["wall_ms"]);
  }, 60_000);

  it("server: answers every GET and PATCH under load, without and with metrics", async () => {
    const r = await measureServerLoad({ objects: 20, connections: 4, phaseMs: 200 });
    expect(r.errors).toBe(0);
    expect(r.get_per_s as number).toBeGreaterThan(0);
    expect(r.patch_per_s as number).toBeGreaterThan(0);
    expectTimes(r, ["get_p50_ms", "get_p99_ms", "patch_p50_ms", "patch_p99_ms"]);
    expect(r.get_p99_ms as number).toBeGreaterThanOrEqual(r.get_p50_ms as number);
    expect(r.rss_mb as number).toBeGreaterThan(0);
    expect(r.metrics_get_per_s as number).toBeGreaterThan(0);
    expect(r.metrics_patch_per_s as number).toBeGreaterThan(0);
    expect(r.metrics_vs_none_gets).toBe(Math.round(((r.metrics_get_per_s as number) / (r.get_per_s as number)) * 100) / 100);
    expect(r.metrics_vs_none_patches).toBe(Math.round(((r.metrics_patch_per_s as number) / (r.patch_per_s as number)) * 100) / 100);
  }, 60_000);

  // Needs PostgreSQL, like the `postgres` test project (skipped with its notice when it is not installed).
  it.runIf(postgresTestsRun())(
    "server-pg: answers every GET and PATCH on SQLite, one PostgreSQL replica and two",
    async () => {
      const r = await measureServerPg({ objects: 20, connections: 4, phaseMs: 200 });
      expect(r.errors).toBe(0);
      for (const f of ["sqlite_get_per_s", "sqlite_patch_per_s", "pg1_get_per_s", "pg1_patch_per_s", "pg2_get_per_s", "pg2_patch_per_s"]) {
        expect(r[f] as number, f).toBeGreaterThan(0);
      }
      expect(r.pg2_vs_pg1_gets).toBe(Math.round(((r.pg2_get_per_s as number) / (r.pg1_get_per_s as number)) * 100) / 100);
    },
    60_000,
  );
});
