/**
 * Properties over random desired and live states: plans are deterministic (input order never changes a byte of
 * any rendering), the JSON plan holds everything the Plan holds, and applying a plan in dependency order under the
 * API's rules converges: planning again shows no change.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { liveWeightedBackend } from "../../src/api/live-state.js";
import { dependencyLevels } from "../../src/core/graph.js";
import { buildPlan, type PlanOptions } from "../../src/core/plan.js";
import { resolveWeightedBackendBody } from "../../src/kinds/weighted-backend.js";
import { ManifestError } from "../../src/model/errors.js";
import type { Plan, WeightedBackendBody, WeightedBackendChange } from "../../src/model/plan.js";
import { weightedBackendFingerprint, type DesiredState, type DesiredWeightedBackend, type LiveState, type LiveWeightedBackend } from "../../src/model/state.js";
import type { CircuitBreakerSettings, SamlModule } from "../../src/model/wire.js";
import { renderJson } from "../../src/render/json.js";
import { renderMarkdown } from "../../src/render/markdown.js";
import { renderText } from "../../src/render/text.js";
import { PlanSchema } from "../../src/model/plan-schema.js";
import { CB, desiredRoute, hrId, liveRouteOf, markerMetadata, pos, samlModule, samlSettings, wbId, ROUTE } from "./builders.js";

const NAMES = ["a", "b", "c", "d", "e"];
const HR = [hrId(1), hrId(2), hrId(3)];

const weights = fc.integer({ min: 0, max: 3 }).map((n) => n * 50);

const desiredArb = fc
  .uniqueArray(fc.constantFrom(...NAMES), { maxLength: 5 })
  .chain((names) =>
    fc.tuple(
      ...names.map((name) =>
        fc.record({
          name: fc.constant(name),
          description: fc.constantFrom("", "x"),
          team: fc.boolean(),
          protect: fc.boolean(),
          // Only names after this one: references never form a cycle (the loader refuses cycles).
          refs: fc.subarray(names.filter((n) => n > name)),
          hr: fc.subarray(HR),
          weight: weights,
          adopt: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 6 }) }),
        }),
      ),
    ),
  )
  .map((specs) =>
    specs.map(
      // An id adopted by one manifest only (the loader refuses a second).
      (s, i): DesiredWeightedBackend => ({
        kind: "WeightedBackend",
        name: s.name,
        description: s.description,
        metadata: s.team ? { team: "t" } : {},
        backends: Object.fromEntries([...s.hr, ...s.refs].map((k) => [k, s.weight])),
        protect: s.protect,
        source: pos(i * 10 + 1),
        ...(s.adopt !== null && !specs.slice(0, i).some((o) => o.adopt === s.adopt) ? { id: wbId(s.adopt) } : {}),
      }),
    ),
  );

const liveArb = fc
  .array(
    fc.record({
      owner: fc.constantFrom("default", "default", "default", "other", "none", "junk"),
      name: fc.constantFrom(...NAMES, "old1", "old2"),
      // Another stack's object under a name no manifest may take: with --takeover, a manifest that would create a
      // second object of another stack's name is an error, so without these a takeover plan seldom gets made.
      apart: fc.boolean(),
      protect: fc.boolean(),
      description: fc.constantFrom("", "x"),
      team: fc.boolean(),
      hr: fc.subarray(HR),
      weight: weights,
      children: fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 3 }),
    }),
    { maxLength: 6 },
  )
  .map((specs) =>
    specs.map((s, i) => {
      const user = s.team ? { team: "t" } : {};
      const name = s.owner === "other" && s.apart ? `${s.name}-apart` : s.name;
      const metadata = s.owner === "none" ? (s.team ? '{"team":"t"}' : "") : s.owner === "junk" ? "owner=bob" : markerMetadata(s.owner, name, user, s.protect);
      // Children only among older objects: the API refuses cycles.
      const olderChildren = s.children.filter((c) => c <= i).map(wbId);
      return liveWeightedBackend({
        id: wbId(i + 1),
        uri: "",
        created_at: "2025-01-01T00:00:00Z",
        description: s.description,
        metadata,
        backends: Object.fromEntries([...s.hr, ...olderChildren].map((k) => [k, s.weight])),
      });
    }),
  );

const moduleArb = fc.record({
  samlIntent: fc.constantFrom("unmanaged", "absent", "present", "disabled"),
  cbIntent: fc.constantFrom("unmanaged", "absent", "present"),
  samlLive: fc.boolean(),
  cbLive: fc.constantFrom("none", "same", "other"),
});

const optionsArb = fc.record({
  prune: fc.boolean(),
  takeover: fc.boolean(),
  maxShift: fc.constantFrom(10, 50),
});

type Input = { desired: DesiredState; live: LiveState; options: PlanOptions };

const inputArb = fc.tuple(desiredArb, liveArb, moduleArb, optionsArb).map(([wbs, liveWbs, m, o]): Input => {
  const saml =
    m.samlIntent === "unmanaged"
      ? ({ state: "unmanaged" } as const)
      : m.samlIntent === "absent"
        ? ({ state: "absent", source: pos(100) } as const)
        : ({ state: "present", settings: samlSettings({ enabled: m.samlIntent === "present" }), source: pos(100) } as const);
  const cb =
    m.cbIntent === "unmanaged"
      ? ({ state: "unmanaged" } as const)
      : m.cbIntent === "absent"
        ? ({ state: "absent", source: pos(110) } as const)
        : ({ state: "present", settings: CB, source: pos(110) } as const);
  const liveCb = m.cbLive === "none" ? null : m.cbLive === "same" ? CB : { ...CB, num_buckets: 7 };
  return {
    desired: { weightedBackends: wbs, edgeRoutes: [desiredRoute(saml, cb)] },
    live: { weightedBackends: liveWbs, routes: [liveRouteOf(m.samlLive ? samlModule(ROUTE) : null, liveCb)] },
    options: { stack: "default", ...o },
  };
});

/** Plans, or null when the input is one no plan can satisfy (the plan says so with a ManifestError). */
function tryPlan(input: Input): Plan | null {
  try {
    return buildPlan(input.desired, input.live, input.options);
  } catch (err) {
    if (err instanceof ManifestError) return null;
    throw err;
  }
}

function renderAll(p: Plan): string[] {
  return [renderText(p, { color: false }), renderText(p, { color: true }), renderMarkdown(p), renderJson(p)];
}

/**
 * Applies a plan to the live state the way the API would, in dependency order, enforcing the API's rules: a child
 * must exist when it is referenced, and an object still referenced cannot be deleted.
 */
function simulateApply(p: Plan, live: LiveState, reverseLevels = false): LiveState {
  const wbs = new Map(live.weightedBackends.map((l) => [l.id, { ...l }]));
  const routes = live.routes.map((r) => ({ ...r }));
  const ids = new Map<string, string>();
  let next = 1000;
  const byAddress = new Map(p.changes.map((c) => [c.address, c]));
  const checkChildren = (children: Record<string, number>, who: string): void => {
    for (const child of Object.keys(children)) {
      if (child.startsWith("bkdwd_") && !wbs.has(child)) throw new Error(`${who}: child ${child} does not exist (API 6501)`);
    }
  };
  for (const level of dependencyLevels(p)) {
    // Changes of one level are independent: any order within it must work.
    for (const address of reverseLevels ? [...level].reverse() : level) {
      const c = byAddress.get(address);
      if (!c) throw new Error(`no change ${address}`);
      if (c.kind === "inventory") {
        if (c.action === "delete") wbs.delete(c.id as string);
        else {
          const id = c.id ?? wbId(next++);
          if (c.id === null) ids.set(address, id);
          const created_at = wbs.get(id)?.created_at ?? "2025-01-02T00:00:00Z";
          wbs.set(id, liveWeightedBackend({ id, uri: "", created_at, ...(c.request.body as WeightedBackendBody) }));
        }
        continue;
      }
      if (c.kind === "weighted_backend") {
        if (c.action === "delete") {
          const id = c.id as string;
          const referrer = [...wbs.values()].find((w) => Object.hasOwn(w.backends, id));
          if (referrer) throw new Error(`${address}: ${id} is still referenced by ${referrer.id} (API 6502)`);
          wbs.delete(id);
          continue;
        }
        const body = resolveWeightedBackendBody(c, ids);
        checkChildren(body.backends, address);
        if (c.action === "create") {
          const id = wbId(next++);
          ids.set(address, id);
          wbs.set(id, { ...liveWeightedBackend({ id, uri: "", created_at: "2025-01-02T00:00:00Z", ...body }) });
        } else {
          const old = wbs.get(c.id as string);
          if (!old) throw new Error(`${address}: ${c.id} does not exist`);
          wbs.set(old.id, liveWeightedBackend({ id: old.id, uri: "", created_at: old.created_at, ...body }));
        }
      } else {
        const r = routes.find((x) => x.edge === c.edge && x.route === c.route);
        if (!r) throw new Error(`no route for ${address}`);
        const value = c.action === "delete" ? null : c.request.body;
        if (c.kind === "saml") {
          const old = r.saml;
          const next = value === null ? null : ({ ...(old ?? samlModule(c.route)), ...value } as SamlModule);
          Object.assign(r, liveRouteOf(next, r.circuit_breaker, { edge: r.edge, route: r.route }));
        } else {
          Object.assign(r, liveRouteOf(r.saml, value as CircuitBreakerSettings | null, { edge: r.edge, route: r.route }));
        }
      }
    }
  }
  return { weightedBackends: [...wbs.values()], routes };
}

describe("plan properties", () => {
  it("is deterministic: shuffled inputs give the same bytes in every format", () => {
    let planned = 0;
    fc.assert(
      fc.property(inputArb, fc.integer(), (input, seed) => {
        const p = tryPlan(input);
        if (!p) return;
        planned++;
        const rotate = <T>(xs: T[]): T[] => (xs.length === 0 ? xs : [...xs.slice(seed % xs.length), ...xs.slice(0, seed % xs.length)].reverse());
        const shuffled: Input = {
          desired: { weightedBackends: rotate(input.desired.weightedBackends), edgeRoutes: rotate(input.desired.edgeRoutes) },
          live: { weightedBackends: rotate(input.live.weightedBackends), routes: rotate(input.live.routes) },
          options: input.options,
        };
        expect(renderAll(buildPlan(shuffled.desired, shuffled.live, shuffled.options))).toEqual(renderAll(p));
      }),
      { numRuns: 200 },
    );
    // Most random inputs must be plannable, or this property says little.
    expect(planned).toBeGreaterThan(100);
  });

  it("keeps everything in the JSON plan, and the JSON matches its schema", () => {
    let planned = 0;
    fc.assert(
      fc.property(inputArb, (input) => {
        const p = tryPlan(input);
        if (!p) return;
        planned++;
        const json = JSON.parse(renderJson(p)) as unknown;
        expect(PlanSchema.parse(json)).toEqual(p);
        expect(json).toEqual(JSON.parse(JSON.stringify(p)));
      }),
      { numRuns: 200 },
    );
    expect(planned).toBeGreaterThan(100);
  });

  it("never changes what it does not own and deletes only unprotected orphans with prune", () => {
    // How many changes of each group the runs met: each group must have been met, or its check said nothing.
    const seen = { planned: 0, touching: 0, deletes: 0, foreign: 0, unowned: 0 };
    fc.assert(
      fc.property(inputArb, (input) => {
        const p = tryPlan(input);
        if (!p) return;
        seen.planned++;
        const liveById = new Map(input.live.weightedBackends.map((l) => [l.id, l]));
        const touching = p.changes.filter((c): c is WeightedBackendChange => c.kind === "weighted_backend" && c.id !== null);
        // Every change of a live object names it as it was read.
        expect(touching.map((c) => c.fingerprint)).toEqual(touching.map((c) => weightedBackendFingerprint(liveById.get(c.id as string) as LiveWeightedBackend)));
        // A delete: only with --prune, of an unprotected object of this stack.
        const deletes = touching.filter((c) => c.action === "delete");
        expect(deletes.map((c) => [input.options.prune, c.previous_owner?.stack, c.previous_owner?.protect])).toEqual(deletes.map(() => [true, "default", undefined]));
        // Another stack's object: only taken over, and only with --takeover.
        const foreign = touching.filter((c) => c.previous_owner && c.previous_owner.stack !== "default");
        expect(foreign.map((c) => [c.action, input.options.takeover])).toEqual(foreign.map(() => ["takeover", true]));
        // An object without a marker: only adopted.
        const unowned = touching.filter((c) => c.previous_owner === null);
        expect(unowned.map((c) => c.action)).toEqual(unowned.map(() => "adopt"));
        seen.touching += touching.length;
        seen.deletes += deletes.length;
        seen.foreign += foreign.length;
        seen.unowned += unowned.length;
      }),
      { numRuns: 300 },
    );
    expect(seen.planned).toBeGreaterThan(150);
    for (const [group, n] of Object.entries(seen)) expect(n, `changes met: ${group}`).toBeGreaterThan(0);
  });

  it("converges: after applying the plan in dependency order, planning again shows no change", () => {
    let planned = 0;
    let ordered = 0;
    fc.assert(
      fc.property(inputArb, (input) => {
        const p = tryPlan(input);
        if (!p) return;
        planned++;
        if (p.changes.some((c) => c.depends_on.length > 0)) ordered++;
        for (const reverse of [false, true]) {
          const after = simulateApply(p, input.live, reverse);
          const again = buildPlan(input.desired, after, input.options);
          expect(again.changes.map((c) => `${c.address} ${c.action}`)).toEqual([]);
          expect(again.orphans.filter((o) => o.action === "delete")).toEqual([]);
        }
      }),
      { numRuns: 300 },
    );
    // Most random inputs must be plannable, or this property says little.
    expect(planned).toBeGreaterThan(200);
    expect(ordered).toBeGreaterThan(50);
  });
});
