/**
 * The promise of export, over random live states: the files it builds load without an error, and the plan of them
 * against the same live state holds no change but adoptions (adopt, takeover, rename of an invalid marker name).
 */
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { buildLiveState } from "../../src/api/live-state.js";
import { buildPlan } from "../../src/core/plan.js";
import { buildExport, type ExportRouteInput } from "../../src/export/build-export.js";
import { loadDesired } from "../../src/manifest/load.js";
import type { WeightedBackend } from "../../src/model/wire.js";
import { NAMEID_FORMATS } from "../../src/model/wire.js";
import { cb, edgeId, hrId, marked, routeId, saml, wbId } from "./builders.js";

const STACK = "blue";
const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

// Keys that name Object.prototype members are left out: the plan's deep comparison reads them as methods.
const key = fc.string({ minLength: 1, maxLength: 8 }).filter((k) => !(k in Object.prototype) && k !== "edgeplan" && k !== "__proto__");
const leaf = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null));
const userMetadata = fc.dictionary(key, fc.oneof(leaf, fc.array(leaf, { maxLength: 3 }), fc.dictionary(key, leaf, { maxKeys: 3 })), { maxKeys: 4 });
const description = fc.oneof(fc.constantFrom("", "Checkout", "Checkout", "Storefront ${HOME} $${X}", "日本語", "a: b # c"), fc.string({ maxLength: 30 }));

const wbSpec = fc.record({
  description,
  owner: fc.constantFrom("none", "none", "mine", "mine-protected", "other", "text", "empty"),
  name: fc.constantFrom("checkout", "storefront", "api", "Bad_Name"),
  user: userMetadata,
  hr: fc.subarray([hrId(1), hrId(2)]),
  refs: fc.array(fc.nat(), { maxLength: 3 }),
  weight: fc.integer({ min: 0, max: 10_000 }),
});

const routeSpec = fc.record({
  edge: fc.integer({ min: 1, max: 2 }),
  saml: fc.option(
    fc.record({
      enabled: fc.boolean(),
      options_passthrough: fc.boolean(),
      cookie_prefix: fc.string({ maxLength: 10 }),
      inactivity_timeout: fc.nat(),
      maximum_duration: fc.nat(),
      force_authn: fc.boolean(),
      allow_idp_initiated: fc.boolean(),
      authorized_groups: fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }),
      nameid_format: fc.constantFrom(...NAMEID_FORMATS),
    }),
  ),
  cb: fc.option(
    fc.record({
      enabled: fc.boolean(),
      tripped_duration: fc.integer({ min: 1, max: 4_294_967_295 }),
      rolling_window: fc.integer({ min: 1, max: 1000 }),
      num_buckets: fc.integer({ min: 1, max: 128 }),
      volume_threshold: fc.nat(),
      error_threshold_percentage: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  ),
});

type WbSpec = typeof wbSpec extends fc.Arbitrary<infer T> ? T : never;

function liveWbs(specs: WbSpec[]): WeightedBackend[] {
  return specs.map((s, i) => {
    const metadata =
      s.owner === "mine" || s.owner === "mine-protected"
        ? marked(STACK, s.name, s.user, s.owner === "mine-protected")
        : s.owner === "other"
          ? marked("green", s.name, s.user)
          : s.owner === "text"
            ? "not json"
            : s.owner === "empty"
              ? ""
              : JSON.stringify(s.user);
    // Children only among older objects: the API refuses cycles.
    const refs = i === 0 ? [] : [...new Set(s.refs.map((r) => wbId(1 + (r % i))))];
    const backends = Object.fromEntries([...s.hr, ...refs].map((k) => [k, s.weight]));
    return { id: wbId(i + 1), uri: "", created_at: "2025-01-01T00:00:00Z", description: s.description, metadata, backends };
  });
}

describe("plan right after export", () => {
  it("loads without an error and plans nothing but adoptions (property)", async () => {
    let exported = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(wbSpec, { maxLength: 7 }), fc.array(routeSpec, { maxLength: 4 }), fc.boolean(), async (wbSpecs, routeSpecs, takeover) => {
        const weightedBackends = liveWbs(wbSpecs);
        const routes: ExportRouteInput[] = routeSpecs.map((r, i) => ({
          edge: edgeId(r.edge),
          route: routeId(i + 1),
          saml: r.saml ? saml(routeId(i + 1), r.saml) : null,
          circuit_breaker: r.cb ? cb(r.cb) : null,
        }));
        const result = buildExport({ stack: STACK, takeover, weightedBackends, routes });
        if (result.files.length === 0) return;
        exported++;

        const dir = await mkdtemp(path.join(tmpdir(), "edgeplan-export-prop-"));
        dirs.push(dir);
        for (const f of result.files) {
          const target = path.join(dir, ...f.path.split("/"));
          await mkdir(path.dirname(target), { recursive: true });
          await writeFile(target, f.text);
        }
        const loaded = await loadDesired([dir], { cwd: dir, env: {} });
        expect(loaded.diagnostics.filter((d) => d.severity === "error")).toEqual([]);

        const plan = buildPlan(loaded.desired, buildLiveState(weightedBackends, routes), { stack: STACK, prune: false, takeover, maxShift: 50 });
        const count = (m: string): number => result.weightedBackends.filter((w) => w.match === m).length;
        expect(plan.summary).toEqual({
          create: 0,
          update: 0,
          delete: 0,
          adopt: count("adopt"),
          takeover: count("takeover"),
          rename: count("rename"),
          rollout: 0,
          module_replace: 0,
          module_delete: 0,
          orphans_kept: plan.orphans.length,
          // The exported modules are adopted by one inventory write that records them (none without modules).
          total: result.weightedBackends.length - count("owned") + (routes.some((r) => r.saml !== null || r.circuit_breaker !== null) ? 1 : 0),
        });
        for (const c of plan.changes) if (c.kind === "inventory") expect(c.diffs.every((d) => d.op === "add")).toBe(true);
        // Orphans are only the owned duplicates export skipped.
        expect(plan.orphans.map((o) => o.id).sort()).toEqual(
          result.skipped
            .filter((s) => s.reason.startsWith("it carries the same owner marker"))
            .map((s) => s.what.replace("weighted backend ", ""))
            .sort(),
        );
      }),
      { numRuns: 40 },
    );
    // Most worlds must have written files, or the property says little.
    expect(exported).toBeGreaterThan(20);
  });
});
