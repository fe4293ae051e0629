/**
 * The inventory of route modules, with plain data: entries packed into objects under the API's metadata limit,
 * ownership refused or taken over, orphan modules kept, pruned or forgotten, and the saved-plan checks of the
 * inventory writes.
 */
import { describe, expect, it } from "vitest";
import { checkPlanAgainstLive } from "../../src/apply/live-check.js";
import { rebaseInventoryChanges } from "../../src/core/inventory.js";
import { checkPlan } from "../../src/core/plan-check.js";
import { buildPlan, DEFAULT_MAX_SHIFT, type PlanOptions } from "../../src/core/plan.js";
import { ManifestError } from "../../src/model/errors.js";
import { buildInventoryBody, packInventory, parseInventory, type Inventory, type InventoryEntries } from "../../src/model/inventory.js";
import type { InventoryChange, Plan } from "../../src/model/plan.js";
import type { LiveState } from "../../src/model/state.js";
import { utf8Bytes } from "../../src/model/wire.js";
import { CB, desiredRoute, EDGE, id, inventoryMetadata, liveRouteOf, liveWb, pos, present, ROUTE, unmanaged, wbId } from "./builders.js";

const cbAddr = (n: number): string => `edge_route.${id("edghts", n)}/${id("edghtsrt", n)}.circuit_breaker`;
const CB_ADDR = `edge_route.${EDGE}/${ROUTE}.circuit_breaker`;
const entries = (from: number, to: number): InventoryEntries => Object.fromEntries(Array.from({ length: to - from }, (_, i) => [cbAddr(from + i), {}]));
const inventory = (n: number, stack: string, e: InventoryEntries): Inventory => ({ id: wbId(n), stack, entries: e, fingerprint: `fp${n}` });

function planOf(
  live: Partial<LiveState> & { weightedBackends: LiveState["weightedBackends"] },
  routes = [desiredRoute(unmanaged, present(CB))],
  options: Partial<PlanOptions> = {},
): Plan {
  const state: LiveState = { routes: [liveRouteOf(null, CB)], ...live };
  return buildPlan({ weightedBackends: [], edgeRoutes: routes }, state, { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT, ...options });
}
const inventoryChanges = (p: Plan): InventoryChange[] => p.changes.filter((c): c is InventoryChange => c.kind === "inventory");

describe("packInventory", () => {
  it("splits many entries across objects within the metadata limit, the same way every time", () => {
    const writes = packInventory("default", [], entries(0, 100));
    expect(writes.length).toBeGreaterThan(1);
    for (const w of writes) {
      expect(w.id).toBeNull();
      expect(utf8Bytes(buildInventoryBody("default", w.after ?? {}).metadata)).toBeLessThanOrEqual(4096);
    }
    expect(writes.flatMap((w) => Object.keys(w.after ?? {}))).toEqual(Object.keys(entries(0, 100)).sort());
    expect(packInventory("default", [], entries(0, 100))).toEqual(writes);
  });

  it("writes only the object that changes: a new entry goes where there is room, an emptied object is deleted", () => {
    const current = [inventory(1, "default", entries(0, 3)), inventory(2, "default", entries(3, 4))];
    expect(packInventory("default", current, { ...entries(0, 4), [cbAddr(9)]: {} })).toEqual([
      { id: wbId(1), fingerprint: "fp1", before: entries(0, 3), after: { ...entries(0, 3), [cbAddr(9)]: {} } },
    ]);
    expect(packInventory("default", current, entries(0, 3))).toEqual([{ id: wbId(2), fingerprint: "fp2", before: entries(3, 4), after: null }]);
    expect(packInventory("default", current, { ...entries(0, 4), [cbAddr(1)]: { protect: true } })).toEqual([
      { id: wbId(1), fingerprint: "fp1", before: entries(0, 3), after: { ...entries(0, 3), [cbAddr(1)]: { protect: true } } },
    ]);
    expect(packInventory("default", current, entries(0, 4))).toEqual([]);
  });

  it("reads back what it writes, and leaves out entries that are not module addresses", () => {
    const body = buildInventoryBody("default", { [CB_ADDR]: { protect: true } });
    expect(parseInventory({ id: wbId(1), metadata: body.metadata })).toEqual({ id: wbId(1), stack: "default", entries: { [CB_ADDR]: { protect: true } }, fingerprint: "" });
    const odd = JSON.stringify({ edgeplan: { stack: "default", inventory: { modules: { "weighted_backend.x": {}, [CB_ADDR]: 1 } } } });
    expect(parseInventory({ id: wbId(1), metadata: odd })?.entries).toEqual({});
    expect(parseInventory({ id: wbId(1), metadata: '{"edgeplan":{"stack":"default","name":"x"}}' })).toBeNull();
  });
});

describe("ownership of modules in a plan", () => {
  it("refuses a module another stack records, at the module's line, unless --takeover moves the entry", () => {
    const other = [liveWb(1, { metadata: inventoryMetadata("other", [CB_ADDR]) })];
    const routes = [desiredRoute(unmanaged, { state: "present", settings: { ...CB, volume_threshold: 1 }, source: pos(7, "m/r.yaml", 3) })];
    expect(() => planOf({ weightedBackends: other }, routes)).toThrow(ManifestError);
    expect(() => planOf({ weightedBackends: other }, routes)).toThrow(
      `m/r.yaml:7:3: ${CB_ADDR} is managed by stack "other" (its inventory ${wbId(1)} records it); stack "default" does not change it: remove the circuit_breaker block, or take it over with --takeover`,
    );
    const p = planOf({ weightedBackends: other }, routes, { takeover: true });
    expect(p.changes.find((c) => c.address === CB_ADDR)?.notes).toEqual([`taken over from stack "other" (--takeover): its entry moves to the inventory of stack "default"`]);
    expect(inventoryChanges(p).map((c) => [c.address, c.action, c.depends_on])).toEqual([
      ["inventory.default#1", "create", [CB_ADDR]],
      ["inventory.other#1", "delete", [CB_ADDR]],
    ]);
    expect(checkPlan(p)).toEqual([]);
  });

  it("lists a recorded module no manifest declares as an orphan: kept, pruned, protected, or forgotten when gone", () => {
    const recorded = (protect = false) => [liveWb(1, { metadata: inventoryMetadata("default", [CB_ADDR], protect) })];
    const live = { weightedBackends: recorded(), routes: [], recorded: [liveRouteOf(null, CB)] };
    const kept = planOf(live, []);
    expect(kept.changes).toEqual([]);
    expect(kept.orphans).toEqual([
      { address: CB_ADDR, id: wbId(1), name: CB_ADDR, protected: false, action: "keep", reason: "no manifest declares it; run with --prune to delete it" },
    ]);
    const pruned = planOf(live, [], { prune: true });
    expect(pruned.changes.map((c) => [c.address, c.action, c.request.method])).toEqual([
      [CB_ADDR, "delete", "DELETE"],
      ["inventory.default#1", "delete", "DELETE"],
    ]);
    expect(checkPlan(pruned)).toEqual([]);
    const guarded = planOf({ ...live, weightedBackends: recorded(true) }, [], { prune: true });
    expect(guarded.changes).toEqual([]);
    expect(guarded.orphans.map((o) => [o.action, o.protected])).toEqual([["keep", true]]);
    const gone = planOf({ weightedBackends: recorded(), routes: [], recorded: [liveRouteOf(null, null)] }, []);
    expect(gone.orphans).toEqual([]);
    expect(inventoryChanges(gone).map((c) => [c.action, c.diffs.map((d) => d.op)])).toEqual([["delete", ["remove"]]]);
  });

  it("leaves a recorded module out of scope alone: neither an orphan nor forgotten", () => {
    const live = { weightedBackends: [liveWb(1, { metadata: inventoryMetadata("default", [CB_ADDR]) })], routes: [], recorded: [liveRouteOf(null, CB)] };
    const p = planOf(live, [], { prune: true, targets: ["weighted_backend.*"] });
    expect(p.changes).toEqual([]);
    expect(p.orphans).toEqual([]);
  });

  it("refuses a saved plan whose inventory write was edited, and one that writes another stack's inventory without --takeover", () => {
    const p = planOf({ weightedBackends: [] });
    const [write] = inventoryChanges(p);
    expect(write?.action).toBe("create");
    const tampered = structuredClone(p);
    const body = (tampered.changes.find((c) => c.kind === "inventory") as InventoryChange).request.body;
    if (body) body.metadata = buildInventoryBody("default", { [CB_ADDR]: {}, [cbAddr(5)]: {} }).metadata;
    expect(checkPlan(tampered).map((d) => d.address)).toEqual(["inventory.default#1"]);
    const foreign = structuredClone(p);
    const change = foreign.changes.find((c) => c.kind === "inventory") as InventoryChange;
    change.stack = "other";
    change.address = "inventory.other#1";
    change.request = { ...change.request, body: buildInventoryBody("other", change.after ?? {}) };
    foreign.changes[foreign.changes.indexOf(change)] = change;
    expect(checkPlan(foreign).map((d) => d.what)).toContain(`writes the inventory of stack "other", which a plan of stack "default" does only with --takeover`);
  });

  it("refuses a saved inventory write whose object records something else now, or is not an inventory", () => {
    const live = [liveWb(1, { metadata: inventoryMetadata("default", [cbAddr(5)]) })];
    const p = planOf({ weightedBackends: live });
    expect(inventoryChanges(p).map((c) => c.action)).toEqual(["update"]);
    const now: LiveState = { weightedBackends: [liveWb(1, { metadata: inventoryMetadata("default", [cbAddr(6)]) })], routes: [liveRouteOf(null, CB)] };
    expect(checkPlanAgainstLive(p, now).map((d) => d.what)).toEqual([`before is {"${cbAddr(5)}":{}}, but ${wbId(1)} records {"${cbAddr(6)}":{}}`]);
    const plain: LiveState = { weightedBackends: [liveWb(1, { metadata: "" })], routes: [liveRouteOf(null, CB)] };
    expect(checkPlanAgainstLive(p, plain).map((d) => d.what)).toEqual([`${wbId(1)} is not an inventory object of stack "default"`]);
  });
});

describe("rebaseInventoryChanges: the inventory writes made again from the inventories read under the claim lease", () => {
  const theirs = cbAddr(7);
  const changes = planOf({ weightedBackends: [] }).changes;
  const planned = changes.filter((c): c is InventoryChange => c.kind === "inventory");

  it("refuses a module that another stack recorded since the plan, naming it and where the manifest declares it", () => {
    expect(planned.map((c) => c.diffs.map((d) => `${d.op} ${d.path}`))).toEqual([[`add ${CB_ADDR}`]]);
    const rebased = rebaseInventoryChanges(changes, "default", [inventory(5, "other", { [CB_ADDR]: {} })]);
    expect(rebased.conflicts).toEqual([
      {
        address: CB_ADDR,
        source: changes.find((c) => c.address === CB_ADDR)?.source ?? null,
        message: `${CB_ADDR} is managed by stack "other" (its inventory ${wbId(5)} records it); stack "default" does not change it: remove the circuit_breaker block, or take it over with --takeover`,
      },
    ]);
  });

  it("keeps the entries written since the plan and adds its own to them, in the object that holds them", () => {
    const rebased = rebaseInventoryChanges(changes, "default", [inventory(5, "default", { [theirs]: {} })]);
    expect(rebased.conflicts).toEqual([]);
    const writes = rebased.changes.filter((c): c is InventoryChange => c.kind === "inventory");
    expect(writes.map((c) => [c.action, c.id, c.after])).toEqual([["update", wbId(5), { [CB_ADDR]: {}, [theirs]: {} }]]);
    expect(rebased.changes.filter((c) => c.kind !== "inventory")).toEqual(changes.filter((c) => c.kind !== "inventory"));
  });

  it("a takeover removes only the entry it takes from the owner's inventory as it is now", () => {
    const owned = { weightedBackends: [liveWb(5, { metadata: inventoryMetadata("other", [CB_ADDR]) })] };
    const takeover = planOf(owned, undefined, { takeover: true }).changes;
    const rebased = rebaseInventoryChanges(takeover, "default", [inventory(5, "other", { [CB_ADDR]: {}, [theirs]: {} })]);
    expect(rebased.conflicts).toEqual([]);
    const writes = rebased.changes.filter((c): c is InventoryChange => c.kind === "inventory");
    expect(writes.map((c) => [c.stack, c.action, c.id, c.after])).toEqual([
      ["default", "create", null, { [CB_ADDR]: {} }],
      ["other", "update", wbId(5), { [theirs]: {} }],
    ]);
  });
});
