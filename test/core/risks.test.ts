import { describe, expect, it } from "vitest";
import { defaultMaxDeletes } from "../../src/core/risks.js";
import {
  absent,
  CB,
  desiredRoute,
  desiredWb,
  EDGE,
  hrId,
  inventoryMetadata,
  liveRouteOf,
  liveWb,
  markerMetadata,
  plan,
  present,
  ROUTE,
  samlModule,
  samlSettings,
  unmanaged,
} from "./builders.js";

const owned = (n: number, name: string, backends: Record<string, number> = { [hrId(1)]: 100 }) => liveWb(n, { metadata: markerMetadata("default", name), backends });

describe("traffic-shift", () => {
  const live = { wbs: [owned(1, "a", { [hrId(1)]: 9000, [hrId(2)]: 1000 })] };

  it("flags a child whose share moves by more than maxShift points", () => {
    const p = plan({ wbs: [desiredWb("a", { backends: { [hrId(1)]: 5000, [hrId(2)]: 5000 } })] }, live, { maxShift: 30 });
    expect(p.risks).toEqual([
      {
        rule: "traffic-shift",
        addresses: ["weighted_backend.a"],
        message: `weighted_backend.a: traffic moves by more than 30 percentage points: ${hrId(1)} from 90% to 50%; ${hrId(2)} from 10% to 50%. Check the weights (a gradual rollout moves traffic in smaller steps), then apply with --ack traffic-shift.`,
      },
    ]);
  });

  it("does not flag a move of exactly maxShift points or less", () => {
    expect(plan({ wbs: [desiredWb("a", { backends: { [hrId(1)]: 5000, [hrId(2)]: 5000 } })] }, live, { maxShift: 40 }).risks).toEqual([]);
    expect(plan({ wbs: [desiredWb("a", { backends: { [hrId(1)]: 8000, [hrId(2)]: 2000 } })] }, live).risks).toEqual([]);
  });

  it("counts shares, not weights: scaling every weight moves no traffic", () => {
    expect(plan({ wbs: [desiredWb("a", { backends: { [hrId(1)]: 900, [hrId(2)]: 100 } })] }, live, { maxShift: 1 }).risks).toEqual([]);
  });

  it("leaves stopping or starting all traffic to no-traffic, not traffic-shift", () => {
    const stop = plan({ wbs: [desiredWb("a", { backends: { [hrId(1)]: 0, [hrId(2)]: 0 } })] }, live);
    expect(stop.risks.map((r) => r.rule)).toEqual(["no-traffic"]);
    const start = plan({ wbs: [desiredWb("a", { backends: { [hrId(1)]: 1 } })] }, { wbs: [owned(1, "a", { [hrId(1)]: 0 })] });
    expect(start.changes).toHaveLength(1);
    expect(start.risks).toEqual([]);
  });

  it("counts a new child taking most of the traffic", () => {
    const p = plan({ wbs: [desiredWb("a", { backends: { [hrId(1)]: 10, [hrId(2)]: 10, [hrId(3)]: 80 } })] }, live);
    expect(p.risks.map((r) => r.rule)).toEqual(["traffic-shift"]);
    expect(p.risks[0]?.message).toContain(`${hrId(1)} from 90% to 10%; ${hrId(3)} from 0% to 80%`);
  });
});

describe("no-traffic", () => {
  it("flags a create with every weight 0 and an update to no children", () => {
    const p = plan({ wbs: [desiredWb("zero", { backends: { [hrId(1)]: 0 } }), desiredWb("empty", { backends: {} })] }, { wbs: [owned(1, "empty")] });
    expect(p.risks.filter((r) => r.rule === "no-traffic")).toEqual([
      {
        rule: "no-traffic",
        addresses: ["weighted_backend.empty"],
        message:
          "weighted_backend.empty: after this update the weighted backend has no children, so it sends no traffic anywhere. Give a child a weight above 0, or apply with --ack no-traffic if that is intended.",
      },
      {
        rule: "no-traffic",
        addresses: ["weighted_backend.zero"],
        message:
          "weighted_backend.zero: after this create the weighted backend has every weight at 0, so it sends no traffic anywhere. Give a child a weight above 0, or apply with --ack no-traffic if that is intended.",
      },
    ]);
  });

  it("does not flag a write that leaves an object without traffic as it was", () => {
    const p = plan({ wbs: [desiredWb("z", { description: "new", backends: { [hrId(1)]: 0 } })] }, { wbs: [owned(1, "z", { [hrId(1)]: 0 })] });
    expect(p.changes).toHaveLength(1);
    expect(p.risks).toEqual([]);
  });
});

describe("auth-removal", () => {
  it("flags SAML deleted and SAML disabled, not a circuit breaker deleted", () => {
    const route2 = ROUTE.replace(/1$/, "2");
    const p = plan(
      {
        routes: [desiredRoute(absent(), absent()), desiredRoute(present(samlSettings({ enabled: false })), unmanaged, { route: route2 })],
      },
      { routes: [liveRouteOf(samlModule(ROUTE), CB), liveRouteOf(samlModule(route2), null, { route: route2 })] },
    );
    expect(p.risks).toEqual([
      {
        rule: "auth-removal",
        addresses: [`edge_route.${EDGE}/${ROUTE}.saml`],
        message: `edge_route.${EDGE}/${ROUTE}.saml: the SAML module is deleted, so the route no longer asks for a login. Apply with --ack auth-removal if the route should be reachable without one.`,
      },
      {
        rule: "auth-removal",
        addresses: [`edge_route.${EDGE}/${route2}.saml`],
        message: `edge_route.${EDGE}/${route2}.saml: SAML is changed from enabled to disabled, so the route no longer asks for a login. Apply with --ack auth-removal if the route should be reachable without one.`,
      },
    ]);
  });

  it("does not flag enabling SAML or changing other fields", () => {
    const p = plan(
      { routes: [desiredRoute(present(samlSettings({ enabled: true, force_authn: true })), unmanaged)] },
      // The stack's inventory records the module already (it was applied by this version).
      {
        wbs: [liveWb(1, { metadata: inventoryMetadata("default", [`edge_route.${EDGE}/${ROUTE}.saml`]) })],
        routes: [liveRouteOf(samlModule(ROUTE, { enabled: false }), null)],
      },
    );
    expect(p.changes).toHaveLength(1);
    expect(p.risks).toEqual([]);
  });
});

describe("mass-delete", () => {
  const orphans = Array.from({ length: 12 }, (_, i) => owned(i + 1, `o${String(i + 1).padStart(2, "0")}`));

  it("flags more deletes than the default threshold (10, or 30 % of the stack)", () => {
    const p = plan({}, { wbs: orphans }, { prune: true });
    expect(p.options.max_deletes).toBe(10);
    expect(p.summary.delete).toBe(12);
    const risk = p.risks.find((r) => r.rule === "mass-delete");
    expect(risk?.addresses).toHaveLength(12);
    expect(risk?.message).toBe(
      "The plan deletes 12 objects, more than --max-deletes 10. Check that no manifest was moved, renamed or lost and that --stack is right, then apply with --ack mass-delete.",
    );
  });

  it("honours an explicit maxDeletes and counts module deletes", () => {
    const p = plan({ routes: [desiredRoute(unmanaged, absent())] }, { wbs: orphans.slice(0, 2), routes: [liveRouteOf(null, CB)] }, { prune: true, maxDeletes: 2 });
    expect(p.risks.map((r) => [r.rule, r.addresses.length])).toEqual([["mass-delete", 3]]);
    expect(plan({}, { wbs: orphans.slice(0, 2) }, { prune: true, maxDeletes: 2 }).risks).toEqual([]);
  });

  it("raises the default threshold with the size of the stack", () => {
    expect(defaultMaxDeletes(0)).toBe(10);
    expect(defaultMaxDeletes(34)).toBe(10);
    expect(defaultMaxDeletes(40)).toBe(12);
    expect(defaultMaxDeletes(1000)).toBe(300);
    const many = Array.from({ length: 40 }, (_, i) => owned(i + 1, `n${i}`));
    expect(plan({}, { wbs: many }).options.max_deletes).toBe(12);
  });
});
