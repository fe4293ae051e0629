/**
 * The request estimate of a plan, with plain data: the writes, the convergence reads (by id or by listing, by edge
 * or by module), and the time under a rate limit and a concurrency. The end-to-end comparison with what the server
 * receives is test/apply/estimate.test.ts.
 */
import { describe, expect, it } from "vitest";
import { buildEstimate, estimateSeconds, REQUEST_SECONDS } from "../../src/core/estimate.js";
import { moduleAddress } from "../../src/model/plan.js";
import { absent, CB, desiredRoute, desiredWb, EDGE, hrId, id, liveRouteOf, liveWb, markerMetadata, plan, present, ROUTE } from "../core/builders.js";

const others = (n: number, from = 100) => Array.from({ length: n }, (_, i) => liveWb(from + i, { metadata: markerMetadata("other", `x${i}`) }));

describe("buildEstimate", () => {
  it("counts one write per change, reads the touched objects by id, and the modules of several edges in one page of edges", () => {
    const edge2 = id("edghts", 2);
    const route2 = id("edghtsrt", 2);
    const p = plan(
      {
        wbs: [desiredWb("a", { backends: { [hrId(1)]: 5 } }), desiredWb("b")],
        routes: [desiredRoute(absent(), present(CB)), desiredRoute(absent(), present(CB), { edge: edge2, route: route2 })],
      },
      {
        wbs: [liveWb(1, { metadata: markerMetadata("default", "a") }), ...others(300)],
        routes: [liveRouteOf(null, null), liveRouteOf(null, null, { edge: edge2, route: route2 })],
      },
    );
    expect(p.changes.map((c) => c.address)).toEqual([
      moduleAddress(EDGE, ROUTE, "circuit_breaker"),
      moduleAddress(edge2, route2, "circuit_breaker"),
      "inventory.default#1",
      "weighted_backend.a",
      "weighted_backend.b",
    ]);
    // 2 weighted backends and the new inventory object touched: 3 GETs (listing 303 objects takes 4 pages); the 2
    // edges in the first page of the edge list; the claim lease's create and delete, and its listing (4 pages).
    expect(p.estimate).toEqual({ requests: 15, writes: 7, reads: 8, seconds: 1, rate_limit: "120/60s", concurrency: 4 });
  });

  it("lists the account instead when that takes fewer requests", () => {
    const route2 = id("edghtsrt", 2);
    const desired = {
      wbs: Array.from({ length: 5 }, (_, i) => desiredWb(`n${i}`)),
      routes: [desiredRoute(absent(), present(CB)), desiredRoute(absent(), present(CB), { route: route2 })],
    };
    const live = { wbs: others(150), routes: [liveRouteOf(null, null), liveRouteOf(null, null, { route: route2 })] };
    // 5 creates, 2 modules on one edge and the inventory object that records them; 156 objects after the run take 2
    // list pages, fewer than 6 GETs; the claim lease's create, delete and listing (2 pages).
    expect(plan(desired, live).estimate).toMatchObject({ requests: 15, writes: 10, reads: 5 });
    // With no rate limit, the time follows the concurrency: 15 requests one at a time.
    const p = plan(desired, live, { budget: { rateLimit: null, concurrency: 1 } });
    expect(p.estimate).toEqual({ requests: 15, writes: 10, reads: 5, seconds: 3, rate_limit: null, concurrency: 1 });
  });

  it("is nothing at all for a plan without changes", () => {
    expect(plan({}, {}).estimate).toEqual({ requests: 0, writes: 0, reads: 0, seconds: 0, rate_limit: "120/60s", concurrency: 4 });
  });

  it("reads by id, and the outputs' SAML modules too, for a saved plan's check", () => {
    const p = plan({ wbs: [desiredWb("a")] }, { wbs: others(1000) });
    const saved = buildEstimate(
      {
        changes: p.changes,
        outputs: [
          {
            address: "x",
            edge: EDGE,
            route: ROUTE,
            known_after_apply: false,
            entity_id: null,
            assertion_consumer_service_url: null,
            single_logout_url: null,
            metadata_url: null,
            certificate_sha256: null,
          },
        ],
      },
      { budget: { rateLimit: null, concurrency: 4 }, outputRoutes: true },
    );
    expect(saved).toMatchObject({ requests: 3, writes: 1, reads: 2 });
  });
});

describe("estimateSeconds", () => {
  it("follows the rate limit: the first N at once, each next N one window later", () => {
    const budget = { rateLimit: { count: 120, windowMs: 60_000 }, concurrency: 4 };
    expect(estimateSeconds(120, budget)).toBe(Math.ceil((120 / 4) * REQUEST_SECONDS));
    expect(estimateSeconds(121, budget)).toBe(61);
    expect(estimateSeconds(2000, budget)).toBe(16 * 60 + 1);
  });

  it("follows the concurrency when no rate limit holds the run back", () => {
    expect(estimateSeconds(2000, { rateLimit: null, concurrency: 4 })).toBe(100);
    expect(estimateSeconds(2000, { rateLimit: null, concurrency: 16 })).toBe(25);
    expect(estimateSeconds(0, { rateLimit: null, concurrency: 4 })).toBe(0);
  });
});
