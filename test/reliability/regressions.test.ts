/**
 * The smallest examples of defects the reliability tests found, kept as plain tests so that each stays fixed with
 * a readable failure: a swap of parent and child applied in an order the API refuses, and a cycle through an id
 * that the plan let through to apply.
 */
import { describe, expect, it } from "vitest";
import { fetchLive } from "../../src/api/fetch-live.js";
import { applyPlan } from "../../src/apply/engine.js";
import { buildPlan } from "../../src/core/plan.js";
import { ManifestError } from "../../src/model/errors.js";
import type { DesiredState, DesiredWeightedBackend, LiveState } from "../../src/model/state.js";
import type { WeightedBackend } from "../../src/model/wire.js";
import { FIXTURES, STACK, wbId } from "./arbitraries.js";
import { SimulatedApi } from "./simulated-api.js";

const OPTIONS = { stack: STACK, prune: false, takeover: false, maxShift: 50 };
const HR = FIXTURES[0] as string;

function live(n: number, name: string | null, backends: Record<string, number>): WeightedBackend {
  const metadata = name === null ? "" : JSON.stringify({ edgeplan: { stack: STACK, name } });
  return { id: wbId(n), uri: "", created_at: "2025-01-01T00:00:00Z", description: "", metadata, backends };
}

function desired(name: string, backends: Record<string, number>, line: number): DesiredWeightedBackend {
  return { kind: "WeightedBackend", name, description: "", metadata: {}, backends, protect: false, source: { file: "m.yaml", line, col: 1 } };
}

/** The message of the ManifestError the plan throws (undefined when it plans). */
function planError(want: DesiredState, state: LiveState): string | undefined {
  try {
    buildPlan(want, state, OPTIONS);
    return undefined;
  } catch (err) {
    if (err instanceof ManifestError) return err.message;
    throw err;
  }
}

const noRoutes = (wbs: DesiredWeightedBackend[]): DesiredState => ({ weightedBackends: wbs, edgeRoutes: [] });

describe("defects found by the reliability tests", () => {
  it("swapping parent and child: the child's update runs first, so no state in between holds a cycle", async () => {
    // Live: web -> blue. Desired: blue -> web, and web no longer references blue.
    const sim = new SimulatedApi({ backends: [live(1, "blue", { [HR]: 1 }), live(2, "web", { [wbId(1)]: 1 })], routes: [], fixtures: FIXTURES });
    const want = noRoutes([desired("blue", { web: 1 }, 1), desired("web", { [HR]: 1 }, 10)]);
    const plan = buildPlan(want, await fetchLive(sim, want), OPTIONS);
    expect(plan.changes.map((c) => [c.address, c.depends_on])).toEqual([
      ["weighted_backend.blue", ["weighted_backend.web"]],
      ["weighted_backend.web", []],
    ]);
    const outcome = await applyPlan(plan.changes, sim, { stack: STACK, concurrency: 1 });
    expect(outcome.results.map((r) => `${r.address} ${r.status}`)).toEqual(["weighted_backend.blue done", "weighted_backend.web done"]);
    expect(buildPlan(want, await fetchLive(sim, want), OPTIONS).changes).toEqual([]);
  });

  it("a cycle through an id, or through an object no manifest names, is a plan error at the reference", () => {
    const state = { weightedBackends: [], routes: [] };
    const liveState = (wbs: WeightedBackend[]): LiveState => ({ ...state, weightedBackends: wbs.map((w) => ({ ...w, fingerprint: "f" })) });
    // blue names web's id; web names blue.
    const viaId = noRoutes([desired("blue", { [wbId(2)]: 1 }, 1), desired("web", { blue: 1 }, 10)]);
    expect(planError(viaId, liveState([live(1, "blue", {}), live(2, "web", {})]))).toBe(
      'm.yaml:10:1: weighted backend "web": its children lead back to it (web -> blue -> web); the API refuses cycles, remove one of these references',
    );
    // blue -> canary -> bkdwd_3 (unmanaged, whose live child is blue).
    const viaForeign = noRoutes([desired("blue", { canary: 1 }, 1), desired("canary", { [wbId(3)]: 1 }, 10)]);
    expect(planError(viaForeign, liveState([live(1, "blue", {}), live(3, null, { [wbId(1)]: 1 })]))).toBe(
      `m.yaml:10:1: weighted backend "canary": its children lead back to it (canary -> ${wbId(3)} -> blue -> canary); the API refuses cycles, remove one of these references`,
    );
    // Not a cycle: two objects that share a child.
    const shared = noRoutes([desired("a", { c: 1 }, 1), desired("b", { c: 1, a: 1 }, 10), desired("c", { [HR]: 1 }, 20)]);
    expect(buildPlan(shared, liveState([]), OPTIONS).changes).toHaveLength(3);
  });
});
