/** The arithmetic of the benchmarks: bounds, minimal request counts, the server log counter, JSON splitting. */
import { describe, expect, it } from "vitest";
import { levelsBoundMs, listPages, overlappedBoundMs, planRequests, rateBoundMs } from "../../bench/bounds.js";
import { expectedSummary } from "../../bench/fleet.js";
import { requestTargets } from "../../bench/measure.js";
import { fleetRequests } from "../../bench/rate-limited.js";
import { medianRun, type RunFigures } from "../../bench/runs.js";
import { pathShape, TrafficCounter } from "../../bench/traffic.js";

describe("bounds", () => {
  it("overlaps a chain of pages with independent reads on the other slots", () => {
    // 50 pages hold one slot for 50 latencies; 50 edge reads fit on the 3 others meanwhile.
    expect(overlappedBoundMs(50, 50, 4, 20)).toBe(1000);
    // 5 pages, 40 reads: 45 requests on 4 slots need 12 rounds, more than the chain's 5.
    expect(overlappedBoundMs(5, 40, 4, 20)).toBe(240);
    expect(overlappedBoundMs(3, 3, 1, 10)).toBe(60);
    expect(overlappedBoundMs(0, 0, 4, 20)).toBe(0);
  });

  it("runs dependency levels one after the other, concurrency at a time", () => {
    expect(levelsBoundMs([2100, 100], 4, 20)).toBe((525 + 25) * 20);
    expect(levelsBoundMs([1, 1, 1], 4, 20)).toBe(60);
    expect(levelsBoundMs([], 4, 20)).toBe(0);
  });

  it("lets the first N of a rolling window go at once and each next N one window later", () => {
    expect(rateBoundMs(20, 20, 1000)).toBe(0);
    expect(rateBoundMs(21, 20, 1000)).toBe(1000);
    expect(rateBoundMs(199, 20, 1000)).toBe(9000);
    expect(rateBoundMs(0, 20, 1000)).toBe(0);
  });

  it("counts list pages of 100, an empty list taking one", () => {
    expect(listPages(0)).toBe(1);
    expect(listPages(100)).toBe(1);
    expect(listPages(101)).toBe(2);
    expect(listPages(5000)).toBe(50);
  });
});

describe("requestTargets", () => {
  const met = { requests: 10, minimal_requests: 10, wall_ms: 120, bound_ms: 100, status_429: 0 };

  it("passes the fewest requests, no 429 and a wall within 1.2 times the bound", () => {
    expect(requestTargets(met)).toEqual({ wall_vs_bound: 1.2, ok: true, target: "requests = minimal, no 429, wall <= 1.2x bound" });
  });

  it("fails a slow run, an extra request, a 429, and a bound of 0 that would judge nothing", () => {
    expect(requestTargets({ ...met, wall_ms: 121 }).ok).toBe(false);
    expect(requestTargets({ ...met, requests: 11 }).ok).toBe(false);
    expect(requestTargets({ ...met, status_429: 1 }).ok).toBe(false);
    expect(requestTargets({ ...met, bound_ms: 0 })).toMatchObject({ wall_vs_bound: 0, ok: false });
  });
});

describe("fleet arithmetic", () => {
  const spec = { same: 0, changed: 60, created: 100, orphans: 20, edges: 2, routesPerEdge: 5, changedRoutes: 5 };

  it("expects one change per changed, created and orphaned object and two per changed route", () => {
    expect(expectedSummary(spec)).toEqual({
      create: 100,
      update: 60,
      delete: 20,
      adopt: 0,
      takeover: 0,
      rename: 0,
      rollout: 0,
      module_replace: 10,
      module_delete: 0,
      orphans_kept: 0,
      total: 190,
    });
  });

  it("counts the fewest requests of a plan and an apply", () => {
    // plan: 1 page (80 objects) + the first page of the edge list, which holds both edges; apply: its lease (a
    // create, 1 page, a delete), 1 page and the first page of the edge list, 190 changes, then 2 pages (160
    // objects) and the one edge whose routes changed, by id.
    expect(fleetRequests(spec)).toEqual({ plan: 2, apply: 3 + 2 + 190 + 3 });
    expect(fleetRequests({ ...spec, edges: 1 })).toEqual({ plan: 2, apply: 3 + 2 + 190 + 3 });
    expect(fleetRequests({ ...spec, edges: 150, changedRoutes: 10 })).toEqual({ plan: 52, apply: 3 + 52 + 200 + 3 });
  });
});

describe("TrafficCounter", () => {
  const line = (method: string, path: string, status: number, time: string, ms: number): string => JSON.stringify({ time, method, path, status, ms, operation_id: "op_x" });

  it("counts request log lines by status and endpoint, and spans first arrival to last answer", () => {
    const t = new TrafficCounter();
    t.line("fault on: every request is delayed 20 ms (--latency)");
    t.line(line("GET", "/backends/weighted", 200, "2026-01-01T00:00:00.100Z", 20));
    t.line(line("GET", "/edges/https/edghts_2rFLmpE8q3WRHfs3a2LFkfhVsOU", 200, "2026-01-01T00:00:00.130Z", 25));
    t.line(line("PATCH", "/backends/weighted/bkdwd_32ELHcDT2RYt50eSIeXINRyuhnf", 429, "2026-01-01T00:00:00.300Z", 1));
    expect(t.read()).toEqual({
      requests: 3,
      byStatus: { "200": 2, "429": 1 },
      byKind: { "GET /backends/weighted": 1, "GET /edges/https/:id": 1, "PATCH /backends/weighted/:id": 1 },
      status429: 1,
      spanMs: 220,
      leaseChecks: 0,
    });
    t.reset();
    expect(t.read()).toEqual({ requests: 0, byStatus: {}, byKind: {}, status429: 0, spanMs: 0, leaseChecks: 0 });
  });

  it("counts the GETs of the object deleted last (an apply's lease), and leaves the checks of a long run out of the plan's requests", () => {
    const lease = "/backends/weighted/bkdwd_32ELHcDT2RYt50eSIeXINRyuhnf";
    const t = new TrafficCounter();
    t.line(line("POST", "/backends/weighted", 201, "2026-01-01T00:00:00.000Z", 1));
    for (const at of ["00.100", "05.200", "10.300"]) t.line(line("GET", lease, 200, `2026-01-01T00:00:${at}Z`, 1));
    t.line(line("GET", "/backends/weighted/bkdwd_32ELHVckeVuUNCrvOOKGhxp33Gw", 200, "2026-01-01T00:00:11.000Z", 1));
    t.line(line("DELETE", lease, 204, "2026-01-01T00:00:12.001Z", 1));
    const traffic = t.read();
    expect(traffic).toMatchObject({ requests: 6, leaseChecks: 3, spanMs: 12_002 });
    // 12 s allow 1 + 2 checks: all three are the run's time, not its plan's.
    expect(planRequests(traffic)).toBe(3);
    // The same three checks in 9 s are one too many: every one of them counts.
    expect(planRequests({ ...traffic, spanMs: 9_000 })).toBe(6);
  });

  it("groups paths by shape", () => {
    expect(pathShape("/edges/https/edghts_2rFLmpE8q3WRHfs3a2LFkfhVsOU/routes/edghtsrt_2rFLrPDVjzfYgym9MMvkYSSNdqk/saml")).toBe("/edges/https/:id/routes/:id/saml");
  });
});

describe("medianRun", () => {
  const run = (spanMs: number): RunFigures => ({
    traffic: { requests: 10, byStatus: {}, byKind: {}, status429: 0, spanMs, leaseChecks: 0 },
    commandMs: 0,
    plan: {} as RunFigures["plan"],
    summary: {} as RunFigures["summary"],
  });

  it("picks the run of the median span and keeps every span in run order", () => {
    const { run: median, spans } = medianRun([run(30), run(10), run(20)]);
    expect(median.traffic.spanMs).toBe(20);
    expect(spans).toEqual([30, 10, 20]);
    expect(medianRun([run(40), run(10)]).run.traffic.spanMs).toBe(10);
  });
});
