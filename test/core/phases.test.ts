/**
 * The phases of buildPlan, each on its own: matching, renames, children, orphans and routes. buildPlan's own tests
 * (plan.test.ts, the scenarios) cover them together; these pin what each phase hands the next.
 */
import { describe, expect, it } from "vitest";
import { matchedIds, resolveAllChildren } from "../../src/core/children.js";
import { matchWeightedBackends } from "../../src/core/match.js";
import { planOrphans } from "../../src/core/orphans.js";
import { indexPlanInput, PlanProblems } from "../../src/core/plan-index.js";
import { findRenames } from "../../src/core/renames.js";
import { managedModuleCount, pairRoutes } from "../../src/core/routes.js";
import { ManifestError } from "../../src/model/errors.js";
import type { DesiredWeightedBackend, LiveWeightedBackend } from "../../src/model/state.js";
import { CB, desiredRoute, desiredWb, EDGE, hrId, liveRouteOf, liveWb, markerMetadata, pos, present, ROUTE, state, unmanaged, wbId } from "./builders.js";

function phases(wbs: DesiredWeightedBackend[], live: LiveWeightedBackend[], takeover = false) {
  const s = state({ wbs }, { wbs: live });
  const index = indexPlanInput(s.desired, s.live, "default");
  const problems = new PlanProblems();
  const matching = matchWeightedBackends(index, takeover, problems);
  return { index, problems, matching };
}

function errorsOf(problems: PlanProblems): string[] {
  try {
    problems.throwIfErrors();
  } catch (err) {
    if (err instanceof ManifestError) return err.diagnostics.map((d) => `${d.pos.line}: ${d.message}`);
    throw err;
  }
  return [];
}

describe("matching", () => {
  it("matches by id first (adopt, takeover, rename), then by this stack's marker, oldest first", () => {
    const live = [
      liveWb(1),
      liveWb(2, { metadata: markerMetadata("other", "x") }),
      liveWb(3, { metadata: markerMetadata("default", "old") }),
      liveWb(4, { metadata: markerMetadata("default", "web") }),
      liveWb(5, { metadata: markerMetadata("default", "web") }),
    ];
    const wbs = [desiredWb("adopted", { id: wbId(1) }), desiredWb("taken", { id: wbId(2) }), desiredWb("renamed", { id: wbId(3) }), desiredWb("web"), desiredWb("fresh")];
    const { matching, problems } = phases(wbs, live, true);
    const summary = [...matching.matches.values()].map((m) => `${m.desired.name}:${m.action}:${m.live?.id ?? "-"}`);
    expect(summary.sort()).toEqual([`adopted:adopt:${wbId(1)}`, `renamed:rename:${wbId(3)}`, `taken:takeover:${wbId(2)}`, `web:update:${wbId(4)}`]);
    expect(matching.creates.map((d) => d.name)).toEqual(["fresh"]);
    expect(problems.warnings).toEqual([
      `weighted_backend.web: 2 objects carry the marker of "web" in stack "default"; the oldest, ${wbId(4)}, is the match, and ${wbId(5)} is an orphan`,
    ]);
    expect(errorsOf(problems)).toEqual([]);
  });

  it("reports an unknown id and another stack's object without takeover", () => {
    const live = [liveWb(1), liveWb(2, { metadata: markerMetadata("other", "x") })];
    const wbs = [desiredWb("a", { id: wbId(9), source: pos(1) }), desiredWb("b", { id: wbId(2), source: pos(2) }), desiredWb("c", { id: wbId(1), source: pos(3) })];
    const { problems } = phases(wbs, live);
    expect(errorsOf(problems)).toEqual([
      `1: weighted backend "a": id ${wbId(9)} does not exist in this account; correct the id, or remove \`id:\` to create a new object`,
      `2: weighted backend "b": ${wbId(2)} belongs to stack "other" (as "x"); edgeplan never changes another stack's objects: pass --takeover to take it over, or remove \`id:\``,
    ]);
  });
});

describe("renames", () => {
  it("gives an orphan with the same spec to a new name, including one whose child is renamed first", () => {
    const child = liveWb(1, { metadata: markerMetadata("default", "old-child") });
    const parent = liveWb(2, { metadata: markerMetadata("default", "old-parent"), backends: { [wbId(1)]: 100 } });
    const wbs = [desiredWb("new-child"), desiredWb("new-parent", { backends: { "new-child": 100 } }), desiredWb("brand-new", { description: "x" })];
    const { index, matching } = phases(wbs, [child, parent]);
    const nameToId = matchedIds(matching);
    findRenames(index, matching, nameToId);
    const summary = [...matching.matches.values()].map((m) => `${m.desired.name}:${m.action}:${m.live?.id ?? "-"}`);
    expect(summary.sort()).toEqual(["brand-new:create:-", `new-child:rename:${wbId(1)}`, `new-parent:rename:${wbId(2)}`]);
    expect(matching.creates.map((d) => d.name)).toEqual(["brand-new"]);
    expect(Object.fromEntries(nameToId)).toEqual({ "new-child": wbId(1), "new-parent": wbId(2) });
  });
});

describe("children", () => {
  it("resolves names to known ids, keeps names of new objects pending, and reports what no write could fix", () => {
    const live = [liveWb(1, { metadata: markerMetadata("default", "known") })];
    const wbs = [
      desiredWb("known"),
      desiredWb("fresh"),
      desiredWb("parent", { backends: { known: 1, fresh: 2, [hrId(1)]: 3 } }),
      desiredWb("twice", { backends: { known: 1, [wbId(1)]: 2 }, source: pos(7) }),
      desiredWb("stray", { backends: { nobody: 1 }, source: pos(9) }),
    ];
    const { index, matching, problems } = phases(wbs, live);
    const nameToId = matchedIds(matching);
    findRenames(index, matching, nameToId);
    const resolved = resolveAllChildren(index, matching, nameToId, problems);
    expect(resolved.get("parent")?.backends).toEqual({ [hrId(1)]: 3, [wbId(1)]: 1, fresh: 2 });
    expect([...(resolved.get("parent")?.pending ?? [])]).toEqual(["fresh"]);
    expect(errorsOf(problems)).toEqual([
      `7: weighted backend "twice": children "${wbId(1)}" and "known" are the same object (${wbId(1)}); keep one of them`,
      `9: weighted backend "stray": child "nobody" is neither a backend id nor the name of a weighted backend in the manifests`,
    ]);
  });

  it("reports children that lead back to their parent through an id", () => {
    const live = [liveWb(1, { metadata: markerMetadata("default", "a") })];
    const wbs = [desiredWb("a", { backends: { b: 1 }, source: pos(1) }), desiredWb("b", { backends: { [wbId(1)]: 1 }, source: pos(2) })];
    const { index, matching, problems } = phases(wbs, live);
    const nameToId = matchedIds(matching);
    findRenames(index, matching, nameToId);
    resolveAllChildren(index, matching, nameToId, problems);
    expect(errorsOf(problems)).toEqual([`2: weighted backend "b": its children lead back to it (b -> a -> b); the API refuses cycles, remove one of these references`]);
  });
});

describe("orphans", () => {
  it("deletes with prune what nothing that stays references, keeps the protected and the referenced", () => {
    const live = [
      liveWb(1, { metadata: markerMetadata("default", "gone") }),
      liveWb(2, { metadata: markerMetadata("default", "guarded", {}, true) }),
      liveWb(3, { metadata: markerMetadata("default", "used") }),
      liveWb(4, { metadata: markerMetadata("default", "keeper"), backends: { [wbId(3)]: 1 } }),
    ];
    const { index, matching, problems } = phases([desiredWb("keeper", { backends: { [wbId(3)]: 1 } })], live);
    const nameToId = matchedIds(matching);
    findRenames(index, matching, nameToId);
    const resolved = resolveAllChildren(index, matching, nameToId, problems);
    const orphans = planOrphans(index, matching, resolved, true, problems);
    expect([...orphans.deleting]).toEqual([wbId(1)]);
    expect(orphans.list.map((o) => `${o.address} ${o.action}: ${o.reason}`)).toEqual([
      "weighted_backend.gone delete: no manifest names it; deleted because --prune is given",
      "weighted_backend.guarded keep: protected (its marker says protect: true): never deleted until a manifest takes it back with protect: false",
      "weighted_backend.used keep: kept although --prune is given: weighted_backend.keeper still references it, so the API would refuse the delete",
    ]);
  });
});

describe("routes", () => {
  it("pairs managed routes with the live ones, reports a missing route, and counts managed modules", () => {
    const other = { edge: EDGE, route: ROUTE.replace(/1$/, "2") };
    const problems = new PlanProblems();
    const routes = [desiredRoute(unmanaged, present(CB)), desiredRoute(unmanaged, present(CB), { ...other, source: pos(30) })];
    const pairs = pairRoutes(routes, [liveRouteOf(null, CB)], problems);
    expect(pairs.map((p) => `${p.desired.edge}/${p.desired.route}`)).toEqual([`${EDGE}/${ROUTE}`]);
    expect(managedModuleCount(pairs)).toBe(1);
    expect(errorsOf(problems).map((e) => e.replace(/^\d+: /, ""))).toEqual([
      `edge route ${EDGE}/${other.route} does not exist in this account; check the edge and route ids`,
    ]);
  });
});
