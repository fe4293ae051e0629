import { describe, expect, it } from "vitest";
import { dependencyEdges, dependencyLevels } from "../../src/core/graph.js";
import { InternalError } from "../../src/model/errors.js";
import type { Change } from "../../src/model/plan.js";
import { CB, desiredRoute, desiredWb, EDGE, hrId, liveRouteOf, liveWb, markerMetadata, plan, present, ROUTE, unmanaged, wbChange, wbId } from "./builders.js";

describe("dependency order", () => {
  it("creates an object before any object that references it (top-down)", () => {
    const p = plan(
      {
        wbs: [
          desiredWb("top", { backends: { mid: 1 } }),
          desiredWb("mid", { backends: { leaf: 1, [hrId(1)]: 1 } }),
          desiredWb("leaf", { backends: { [hrId(1)]: 1 } }),
          desiredWb("alone"),
        ],
        routes: [desiredRoute(unmanaged, present(CB))],
      },
      { routes: [liveRouteOf(null, null)] },
    );
    expect(wbChange(p, "weighted_backend.top").depends_on).toEqual(["weighted_backend.mid"]);
    expect(wbChange(p, "weighted_backend.mid").depends_on).toEqual(["weighted_backend.leaf"]);
    // The circuit breaker is declared for the first time: the stack's inventory records it once it is set.
    expect(dependencyLevels(p)).toEqual([
      [`edge_route.${EDGE}/${ROUTE}.circuit_breaker`, "weighted_backend.alone", "weighted_backend.leaf"],
      ["inventory.default#1", "weighted_backend.mid"],
      ["weighted_backend.top"],
    ]);
    expect(dependencyEdges(p)).toEqual([
      ["inventory.default#1", `edge_route.${EDGE}/${ROUTE}.circuit_breaker`],
      ["weighted_backend.mid", "weighted_backend.leaf"],
      ["weighted_backend.top", "weighted_backend.mid"],
    ]);
  });

  it("deletes bottom-up: a child after the parent that referenced it", () => {
    const p = plan(
      {},
      {
        wbs: [
          liveWb(1, { metadata: markerMetadata("default", "leaf") }),
          liveWb(2, { metadata: markerMetadata("default", "mid"), backends: { [wbId(1)]: 1 } }),
          liveWb(3, { metadata: markerMetadata("default", "top"), backends: { [wbId(2)]: 1, [wbId(1)]: 1 } }),
        ],
      },
      { prune: true },
    );
    expect(wbChange(p, "weighted_backend.leaf").depends_on).toEqual(["weighted_backend.mid", "weighted_backend.top"]);
    expect(dependencyLevels(p)).toEqual([["weighted_backend.top"], ["weighted_backend.mid"], ["weighted_backend.leaf"]]);
  });

  it("deletes an object only after the update that stops referencing it", () => {
    const p = plan(
      { wbs: [desiredWb("main", { backends: { [hrId(1)]: 1 } })] },
      {
        wbs: [
          liveWb(1, { metadata: markerMetadata("default", "old-canary") }),
          liveWb(2, { metadata: markerMetadata("default", "main"), backends: { [hrId(1)]: 1, [wbId(1)]: 1 } }),
        ],
      },
      { prune: true },
    );
    expect(wbChange(p, "weighted_backend.old-canary").depends_on).toEqual(["weighted_backend.main"]);
    expect(dependencyLevels(p)).toEqual([["weighted_backend.main"], ["weighted_backend.old-canary"]]);
  });

  it("writes a child before the parent that will reference it, so that swapping parent and child never forms a cycle", () => {
    // Live: a -> b. Wanted: b -> a. Writing b first would make a -> b -> a, which the API refuses.
    const p = plan(
      { wbs: [desiredWb("a", { backends: { [hrId(1)]: 1 } }), desiredWb("b", { backends: { a: 1 } })] },
      {
        wbs: [
          liveWb(1, { metadata: markerMetadata("default", "a"), backends: { [wbId(2)]: 1 } }),
          liveWb(2, { metadata: markerMetadata("default", "b"), backends: { [hrId(1)]: 1 } }),
        ],
      },
    );
    expect(wbChange(p, "weighted_backend.b").depends_on).toEqual(["weighted_backend.a"]);
    expect(dependencyLevels(p)).toEqual([["weighted_backend.a"], ["weighted_backend.b"]]);
  });

  it("refuses a cycle and a dependency outside the plan", () => {
    const base = { depends_on: [] as string[] };
    const a = { ...base, address: "a", depends_on: ["b"] } as unknown as Change;
    const b = { ...base, address: "b", depends_on: ["a"] } as unknown as Change;
    expect(() => dependencyLevels({ changes: [a, b] })).toThrow(new InternalError("plan: dependency cycle among a, b"));
    const c = { ...base, address: "c", depends_on: ["zz"] } as unknown as Change;
    expect(() => dependencyLevels({ changes: [c] })).toThrow("plan: c depends on zz, which is not a change of the plan");
  });

  it("gives an empty plan no levels", () => {
    expect(dependencyLevels({ changes: [] })).toEqual([]);
  });
});
