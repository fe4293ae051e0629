/**
 * Properties over random worlds (./arbitraries.ts), with the real plan and the real apply engine running against an
 * in-memory API that enforces docs/api.md's rules and injects faults (./simulated-api.ts):
 * - plans are deterministic: the same input gives the same bytes in every format, and a plan read back from its
 *   JSON file renders the same bytes;
 * - applying converges: after the engine ran the plan, planning again shows no change, even when writes were refused
 *   or their answers lost along the way (a later run finishes the job);
 * - nothing is created twice, nothing of another stack (or unowned and not adopted) is touched, a protected object
 *   is never deleted, and with no --prune no object is deleted at all;
 * - applying a converged world again writes nothing.
 */
import { isInventoryObject, parseInventory } from "../../src/model/inventory.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fetchLive } from "../../src/api/fetch-live.js";
import { buildLiveState } from "../../src/api/live-state.js";
import { applyPlan } from "../../src/apply/engine.js";
import { buildPlan, type PlanOptions } from "../../src/core/plan.js";
import { parseLiveMetadata } from "../../src/kinds/weighted-backend.js";
import { ManifestError } from "../../src/model/errors.js";
import type { Plan } from "../../src/model/plan.js";
import type { DesiredState, LiveState } from "../../src/model/state.js";
import type { SamlModule, WeightedBackend } from "../../src/model/wire.js";
import { renderJson } from "../../src/render/json.js";
import { renderMarkdown } from "../../src/render/markdown.js";
import { renderText } from "../../src/render/text.js";
import { faultDraws } from "../../src/server/faults.js";
import { FIXTURES, STACK, worldArb, type LiveSpec } from "./arbitraries.js";
import { SimulatedApi, type SimRoute } from "./simulated-api.js";

const RUNS = Number(process.env.EDGEPLAN_PROPERTY_RUNS ?? 150);

function samlModuleOf(route: string, settings: LiveSpec["routes"][number]["saml"]): SamlModule | null {
  if (settings === null) return null;
  const base = `https://idp.example/saml/${route}`;
  return {
    ...settings,
    entity_id: base,
    assertion_consumer_service_url: `${base}/acs`,
    single_logout_url: `${base}/slo`,
    request_signing_certificate_pem: "",
    metadata_url: base,
    idp_metadata_url: "",
  };
}

function simRoutes(live: LiveSpec): SimRoute[] {
  return live.routes.map((r) => ({ edge: r.edge, route: r.route, saml: samlModuleOf(r.route, r.saml), circuit_breaker: r.circuit_breaker }));
}

function liveStateOf(live: LiveSpec): LiveState {
  return buildLiveState(live.backends, simRoutes(live));
}

function options(prune: boolean): PlanOptions {
  return { stack: STACK, prune, takeover: false, maxShift: 50 };
}

/** The plan, or null for a world no plan can satisfy (the plan says so with a ManifestError). */
function tryPlan(desired: DesiredState, live: LiveState, opts: PlanOptions): Plan | null {
  try {
    return buildPlan(desired, live, opts);
  } catch (err) {
    if (err instanceof ManifestError) return null;
    throw err;
  }
}

function renderAll(plan: Plan): string[] {
  return [renderText(plan, { color: false }), renderText(plan, { color: true }), renderMarkdown(plan), renderJson(plan)];
}

/** Ids per owner marker of this stack. */
function markers(backends: Iterable<WeightedBackend>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const b of backends) {
    const m = parseLiveMetadata(b.metadata).marker;
    if (m?.stack !== STACK) continue;
    out.set(m.name, [...(out.get(m.name) ?? []), b.id]);
  }
  return out;
}

describe("plan properties over random worlds", () => {
  it(`is deterministic and its JSON file holds everything its renderings show (${RUNS} worlds)`, () => {
    let planned = 0;
    fc.assert(
      fc.property(worldArb, ({ live, desired, prune }) => {
        const state = liveStateOf(live);
        const plan = tryPlan(desired, state, options(prune));
        if (!plan) return;
        planned++;
        // Same input (fresh copies, so no shared object can carry state from one build to the next): same bytes.
        const again = buildPlan(structuredClone(desired), structuredClone(state), options(prune));
        const bytes = renderAll(plan);
        expect(renderAll(again)).toEqual(bytes);
        // The saved plan (`plan --out`) renders exactly as the plan it was saved from.
        const reread = JSON.parse(bytes[3] as string) as Plan;
        expect(renderAll(reread)).toEqual(bytes);
      }),
      { numRuns: RUNS },
    );
    expect(planned).toBeGreaterThan(RUNS * 0.6);
  });

  it(`converges through the apply engine, with writes refused or their answers lost, and never duplicates or touches what it does not own (${RUNS} worlds)`, async () => {
    let planned = 0;
    let faultsSeen = 0;
    await fc.assert(
      fc.asyncProperty(worldArb, fc.integer(), fc.constantFrom(0.1, 0.3), fc.integer({ min: 1, max: 4 }), async ({ live, desired, prune }, seed, faultRate, concurrency) => {
        const opts = options(prune);
        if (!tryPlan(desired, liveStateOf(live), opts)) return;
        planned++;
        const sim = new SimulatedApi({ backends: live.backends, routes: simRoutes(live), fixtures: FIXTURES });
        const random = faultDraws(seed);
        const initial = new Map(live.backends.map((b) => [b.id, b]));
        const adopted = new Set(desired.weightedBackends.flatMap((d) => (d.id ? [d.id] : [])));
        const protectedIds = live.backends.filter((b) => parseLiveMetadata(b.metadata).marker?.protect === true).map((b) => b.id);

        const checkInvariants = (): void => {
          // Nothing created twice: every object the runs created carries a marker, at most one per name, and none
          // for a name an object already carried before the runs (that object is the match).
          const before = markers(initial.values());
          // Inventory objects record the stack's modules (docs/ownership.md): checked apart, below.
          const created = [...sim.backends.values()].filter((b) => !initial.has(b.id) && !isInventoryObject(b));
          const inventories = [...sim.backends.values()].filter((b) => !initial.has(b.id) && isInventoryObject(b));
          expect(
            inventories.filter((b) => parseInventory(b)?.stack !== STACK).map((b) => b.id),
            "an inventory created for another stack",
          ).toEqual([]);
          const unmarked = created.filter((b) => parseLiveMetadata(b.metadata).marker?.stack !== STACK);
          expect(
            unmarked.map((b) => b.id),
            "created without this stack's marker",
          ).toEqual([]);
          const createdMarkers = [...markers(created)];
          expect(
            createdMarkers.filter(([, ids]) => ids.length !== 1),
            "markers created more than once",
          ).toEqual([]);
          expect(
            createdMarkers.filter(([name]) => before.has(name)),
            "created although an object carried the marker",
          ).toEqual([]);
          const ownMarker = (b: WeightedBackend): boolean => parseLiveMetadata(b.metadata).marker?.stack === STACK;
          // What belongs to no manifest of this stack is left exactly as it was.
          const foreign = [...initial.values()].filter((b) => !ownMarker(b) && !adopted.has(b.id));
          expect(
            foreign.map((b) => sim.backends.get(b.id)),
            "objects of no manifest of this stack",
          ).toEqual(foreign);
          // Deleted: only orphans of this stack, only with --prune.
          const deleted = [...initial.values()].filter((b) => !sim.backends.has(b.id));
          expect(
            deleted.filter((b) => !prune || !ownMarker(b) || adopted.has(b.id)).map((b) => b.id),
            `deleted (prune: ${prune})`,
          ).toEqual([]);
          expect(
            protectedIds.filter((id) => !sim.backends.has(id)),
            "protected objects deleted",
          ).toEqual([]);
        };

        // Runs with faults, then runs without: a run left incomplete by a fault is finished by the next one.
        for (let run = 0; run < 6; run++) {
          const faulty = run < 3;
          sim.fault = () => {
            if (!faulty || random() >= faultRate) return "ok";
            faultsSeen++;
            return random() < 0.5 ? "refuse" : "lose";
          };
          const state = await fetchLive(sim, desired);
          const plan = buildPlan(desired, state, opts);
          if (plan.changes.length === 0) break;
          const outcome = await applyPlan(plan.changes, sim, { stack: STACK, concurrency });
          expect(outcome.counts.done + outcome.counts.failed + outcome.counts.skipped + outcome.counts.not_started).toBe(plan.changes.length);
          // Without faults nothing fails.
          expect(outcome.counts.failed, outcome.results.map((r) => `${r.address}: ${r.message}`).join("\n")).toBeLessThanOrEqual(faulty ? plan.changes.length : 0);
          checkInvariants();
        }
        sim.fault = () => "ok";
        const final = buildPlan(desired, await fetchLive(sim, desired), opts);
        expect(final.changes.map((c) => `${c.address} ${c.action}`)).toEqual([]);
        checkInvariants();

        // Applying a converged world again writes nothing and changes nothing.
        const snapshot = structuredClone([...sim.backends.entries()]);
        const writes = sim.writes;
        const second = await applyPlan(buildPlan(desired, await fetchLive(sim, desired), opts).changes, sim, { stack: STACK, concurrency });
        expect(second.results).toEqual([]);
        expect(sim.writes).toBe(writes);
        expect([...sim.backends.entries()]).toEqual(snapshot);
      }),
      { numRuns: RUNS },
    );
    expect(planned).toBeGreaterThan(RUNS * 0.6);
    // The fault plan must actually have bitten, or the property says nothing about faults.
    expect(faultsSeen).toBeGreaterThan(RUNS / 2);
  });
});
