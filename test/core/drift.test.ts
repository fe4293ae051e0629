/**
 * Drift: what changed outside edgeplan since the last apply, claimed only where edgeplan's records prove it (a module
 * the stack's inventory records and that is unset live; a rollout's weights off the way it writes them), shown
 * apart in the plan and in its JSON, and never claimed elsewhere.
 */
import { describe, expect, it } from "vitest";
import { buildPlan, DEFAULT_MAX_SHIFT, type PlanOptions } from "../../src/core/plan.js";
import { SAML_RECREATE_WARNING } from "../../src/core/drift.js";
import { rolloutTargetDigest } from "../../src/kinds/weighted-backend-rollout.js";
import type { DesiredEdgeRoute, DesiredWeightedBackend, LiveState, RolloutSpec, RolloutState } from "../../src/model/state.js";
import type { ModuleChange, Plan } from "../../src/model/plan.js";
import { PlanSchema } from "../../src/model/plan-schema.js";
import { renderJson } from "../../src/render/json.js";
import { renderText } from "../../src/render/text.js";
import { absent, CB, desiredRoute, desiredWb, EDGE, hrId, id, inventoryMetadata, liveRouteOf, liveWb, present, ROUTE, samlSettings, unmanaged } from "./builders.js";

const CB_ADDR = `edge_route.${EDGE}/${ROUTE}.circuit_breaker`;
const SAML_ADDR = `edge_route.${EDGE}/${ROUTE}.saml`;
const OTHER_ROUTE = id("edghtsrt", 2);
const OTHER_SAML = `edge_route.${EDGE}/${OTHER_ROUTE}.saml`;

const options: PlanOptions = { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT };

/** A plan of `routes` against live routes, the stack's inventory recording `recorded`. */
function planOf(routes: DesiredEdgeRoute[], live: Partial<LiveState>, recorded: string[], extra: Partial<PlanOptions> = {}): Plan {
  const inventory = recorded.length > 0 ? [liveWb(9, { metadata: inventoryMetadata("default", recorded), backends: {} })] : [];
  return buildPlan({ weightedBackends: [], edgeRoutes: routes }, { weightedBackends: inventory, routes: [], ...live }, { ...options, ...extra });
}

const moduleChange = (p: Plan, address: string): ModuleChange => p.changes.find((c) => c.address === address) as ModuleChange;

describe("drift of route modules", () => {
  it("calls a recorded module unset live deleted outside edgeplan, and its PUT a setting again", () => {
    const p = planOf([desiredRoute(unmanaged, present(CB))], { routes: [liveRouteOf(null, null)] }, [CB_ADDR]);
    expect(p.drift).toEqual([
      {
        address: CB_ADDR,
        what: "deleted",
        reason: 'the inventory of stack "default" records it, and the route has no circuit breaker module now; the plan sets it again',
        diffs: [],
      },
    ]);
    expect(moduleChange(p, CB_ADDR)).toMatchObject({ action: "replace", before: null, recreates: true });
    expect(moduleChange(p, CB_ADDR).warnings).toBeUndefined();
    const text = renderText(p, { color: false });
    expect(text.startsWith(`Changed outside edgeplan since the last apply:\n  - ${CB_ADDR}: deleted: `)).toBe(true);
    expect(text).toContain(`  # ${CB_ADDR} will be set again (it was deleted outside edgeplan) (manifests/main.yaml:21:1)\n`);
    expect(text).not.toContain("the route has none yet");
  });

  it("warns that a re-created SAML module has a new SP certificate the IdP must be given", () => {
    const p = planOf([desiredRoute(present(samlSettings()), unmanaged)], { routes: [liveRouteOf(null, null)] }, [SAML_ADDR]);
    expect(moduleChange(p, SAML_ADDR).warnings).toEqual([SAML_RECREATE_WARNING]);
    expect(renderText(p, { color: false })).toContain(`\n  ! warning: ${SAML_RECREATE_WARNING}\n`);
  });

  it("says a module the manifest wants absent, or that no manifest declares, is only forgotten", () => {
    const routes = { routes: [liveRouteOf(null, null)], recorded: [liveRouteOf(null, null, { route: OTHER_ROUTE })] };
    const p = planOf([desiredRoute(absent(), unmanaged)], routes, [SAML_ADDR, OTHER_SAML]);
    expect(p.drift?.map((d) => [d.address, d.reason.split("; ")[1]])).toEqual([
      [SAML_ADDR, "the manifest says saml: absent, so the plan only forgets it"],
      [OTHER_SAML, "no manifest declares it, so the plan only forgets it"],
    ]);
  });

  it("claims nothing without a record: a module never recorded, one still set, a route not read, a module out of scope", () => {
    const declared = [desiredRoute(unmanaged, present(CB))];
    const unset = { routes: [liveRouteOf(null, null)] };
    expect(planOf(declared, unset, []).drift).toBeUndefined();
    expect(moduleChange(planOf(declared, unset, []), CB_ADDR).recreates).toBeUndefined();
    expect(planOf(declared, { routes: [liveRouteOf(null, { ...CB, num_buckets: 9 })] }, [CB_ADDR]).drift).toBeUndefined();
    expect(planOf([], { routes: [] }, [OTHER_SAML]).drift).toBeUndefined();
    expect(planOf(declared, unset, [CB_ADDR], { excludes: [CB_ADDR] }).drift).toBeUndefined();
  });
});

describe("drift of a rollout's weights", () => {
  const [A, B, C] = [hrId(1), hrId(2), hrId(3)];
  const SPEC: RolloutSpec = { max_step: 30, shares: null, interval: "5m", interval_ms: 300_000, check: null, analysis: [] };
  const target = { [A]: 0, [B]: 10000 };
  const desired: DesiredWeightedBackend = { ...desiredWb("web", { backends: target }), rollout: SPEC };
  const state = (t = rolloutTargetDigest(target)): RolloutState => ({ from: { [A]: 9000, [B]: 1000 }, target: t, step: 1, at: "2025-12-31T23:50:00.000Z" });
  const planWith = (backends: Record<string, number>, s: RolloutState): Plan => {
    const live = liveWb(1, { backends, metadata: JSON.stringify({ edgeplan: { name: "web", stack: "default", rollout: s } }) });
    return buildPlan({ weightedBackends: [desired], edgeRoutes: [] }, { weightedBackends: [live], routes: [] }, { ...options, now: Date.parse("2026-01-01T00:00:00Z") });
  };

  it("calls weights off the way from the rollout's start to the manifest's changed outside edgeplan, with the fields that differ", () => {
    const p = planWith({ [A]: 5000, [B]: 4000, [C]: 1000 }, state());
    expect(p.drift).toEqual([
      {
        address: "weighted_backend.web",
        what: "changed",
        reason:
          "rollout step 1 (its owner marker records it) wrote weights on the way to the manifest's; the live weights are off that way, so the plan starts the rollout again from them",
        // From step 1 as the manifest paces it (9000/1000 to 0/10000 by at most 30 points: 6000/4000) to the live weights.
        diffs: [
          { path: `backends.${A}`, op: "change", before: 6000, after: 5000, lines: null },
          { path: `backends.${C}`, op: "add", before: null, after: 1000, lines: null },
        ],
      },
    ]);
  });

  it("claims nothing for weights on the way (whatever the pace), nor once the manifest's weights changed", () => {
    expect(planWith({ [A]: 6000, [B]: 4000 }, state()).drift).toBeUndefined();
    expect(planWith({ [A]: 8000, [B]: 2000 }, state()).drift).toBeUndefined();
    expect(planWith({ [A]: 5000, [B]: 4000, [C]: 1000 }, state(rolloutTargetDigest({ [A]: 5000, [B]: 5000 }))).drift).toBeUndefined();
  });
});

describe("drift in the JSON plan", () => {
  it("is a list before the options, valid against the plan's schema, and absent when there is none", () => {
    const p = planOf([desiredRoute(unmanaged, present(CB))], { routes: [liveRouteOf(null, null)] }, [CB_ADDR]);
    const json = JSON.parse(renderJson(p)) as Record<string, unknown>;
    expect(Object.keys(json).slice(0, 6)).toEqual(["format_version", "stack", "environment", "targeted", "drift", "options"]);
    expect(json.drift).toEqual([{ address: CB_ADDR, what: "deleted", reason: p.drift?.[0]?.reason, diffs: [] }]);
    expect(PlanSchema.parse(json)).toEqual(p);
    const clean = JSON.parse(renderJson(planOf([desiredRoute(unmanaged, present(CB))], { routes: [liveRouteOf(null, CB)] }, [CB_ADDR]))) as object;
    expect(Object.hasOwn(clean, "drift")).toBe(false);
  });
});
