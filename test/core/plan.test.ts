import { describe, expect, it } from "vitest";
import { InternalError, ManifestError } from "../../src/model/errors.js";
import { buildPlan } from "../../src/core/plan.js";
import { resolveWeightedBackendBody } from "../../src/kinds/weighted-backend.js";
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
  moduleChange,
  plan,
  pos,
  present,
  ROUTE,
  samlModule,
  samlSettings,
  unmanaged,
  wbChange,
  wbId,
} from "./builders.js";
import { weightedBackendFingerprint, type LiveWeightedBackend } from "../../src/model/state.js";

const SAML_ADDR = `edge_route.${EDGE}/${ROUTE}.saml`;
const CB_ADDR = `edge_route.${EDGE}/${ROUTE}.circuit_breaker`;

function planError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ManifestError);
    return (err as Error).message;
  }
  throw new Error("expected a ManifestError");
}

describe("create", () => {
  it("creates a manifest object that nothing live matches, with the full body and the owner marker", () => {
    const p = plan({ wbs: [desiredWb("checkout", { description: "Checkout", metadata: { team: "payments" }, backends: { [hrId(2)]: 1, [hrId(1)]: 9 } })] }, {});
    expect(p.changes).toHaveLength(1);
    const c = wbChange(p, "weighted_backend.checkout");
    expect(c.action).toBe("create");
    expect(c.id).toBeNull();
    expect(c.fingerprint).toBeNull();
    expect(c.source).toBe("manifests/main.yaml:1:1");
    expect(c.request).toEqual({
      method: "POST",
      path: "/backends/weighted",
      body: {
        description: "Checkout",
        metadata: '{"edgeplan":{"name":"checkout","stack":"default"},"team":"payments"}',
        backends: { [hrId(1)]: 9, [hrId(2)]: 1 },
      },
    });
    expect(Object.keys(c.request.body?.backends ?? {})).toEqual([hrId(1), hrId(2)]);
    expect(c.weights.map((w) => [w.child, w.after, w.share_after])).toEqual([
      [hrId(1), 9, 90],
      [hrId(2), 1, 10],
    ]);
    expect(p.summary).toMatchObject({ create: 1, update: 0, delete: 0, total: 1 });
  });

  it("writes protect: true into the marker", () => {
    const p = plan({ wbs: [desiredWb("keep", { protect: true })] }, {});
    expect(wbChange(p, "weighted_backend.keep").request.body?.metadata).toBe('{"edgeplan":{"name":"keep","protect":true,"stack":"default"}}');
  });
});

describe("update and no change", () => {
  it("shows no change when metadata differs only in key order and spacing", () => {
    const metadata = '{ "edgeplan" : {"stack":"default", "name":"checkout"},\n  "team": "payments", "a": [1, 2] }';
    const p = plan({ wbs: [desiredWb("checkout", { metadata: { team: "payments", a: [1, 2] }, description: "x" })] }, { wbs: [liveWb(1, { metadata, description: "x" })] });
    expect(p.changes).toEqual([]);
    expect(p.orphans).toEqual([]);
    expect(p.summary.total).toBe(0);
  });

  it("updates description with field diffs and a PATCH carrying every field and the full children map", () => {
    const p = plan(
      { wbs: [desiredWb("checkout", { description: "new", backends: { [hrId(1)]: 100, [hrId(2)]: 5 } })] },
      { wbs: [liveWb(1, { description: "old", metadata: markerMetadata("default", "checkout"), backends: { [hrId(1)]: 100, [hrId(2)]: 5 } })] },
    );
    const c = wbChange(p, "weighted_backend.checkout");
    expect(c.action).toBe("update");
    expect(c.id).toBe(wbId(1));
    expect(c.fingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(c.diffs).toEqual([{ path: "description", op: "change", before: "old", after: "new", lines: null }]);
    expect(c.request.method).toBe("PATCH");
    expect(c.request.path).toBe(`/backends/weighted/${wbId(1)}`);
    expect(c.request.body?.backends).toEqual({ [hrId(1)]: 100, [hrId(2)]: 5 });
    expect(c.weights.every((w) => !w.changed)).toBe(true);
  });

  it("diffs user metadata key by key", () => {
    const p = plan(
      { wbs: [desiredWb("a", { metadata: { team: "pay", env: "prod" } })] },
      { wbs: [liveWb(1, { metadata: markerMetadata("default", "a", { team: "payments", old: true }) })] },
    );
    expect(wbChange(p, "weighted_backend.a").diffs.map((d) => [d.path, d.op, d.before, d.after])).toEqual([
      ["metadata.env", "add", null, "prod"],
      ["metadata.old", "remove", true, null],
      ["metadata.team", "change", "payments", "pay"],
    ]);
  });

  it("toggling protect changes the marker", () => {
    const p = plan({ wbs: [desiredWb("a", { protect: false })] }, { wbs: [liveWb(1, { metadata: markerMetadata("default", "a", {}, true) })] });
    expect(wbChange(p, "weighted_backend.a").diffs).toEqual([
      {
        path: "metadata.edgeplan",
        op: "change",
        before: { name: "a", protect: true, stack: "default" },
        after: { name: "a", stack: "default" },
        lines: null,
      },
    ]);
  });

  it("gives shares of traffic before and after for every child", () => {
    const p = plan(
      { wbs: [desiredWb("a", { backends: { [hrId(1)]: 5000, [hrId(2)]: 5000 } })] },
      { wbs: [liveWb(1, { metadata: markerMetadata("default", "a"), backends: { [hrId(1)]: 9000, [hrId(3)]: 1000 } })] },
    );
    expect(wbChange(p, "weighted_backend.a").weights).toEqual([
      { child: hrId(1), name: null, known_after_apply: false, before: 9000, after: 5000, share_before: 90, share_after: 50, changed: true },
      { child: hrId(2), name: null, known_after_apply: false, before: null, after: 5000, share_before: null, share_after: 50, changed: true },
      { child: hrId(3), name: null, known_after_apply: false, before: 1000, after: null, share_before: 10, share_after: null, changed: true },
    ]);
  });
});

describe("matching by owner marker", () => {
  it("never touches objects of another stack or without a marker", () => {
    const p = plan(
      { wbs: [desiredWb("checkout")] },
      {
        wbs: [
          liveWb(1, { metadata: markerMetadata("other", "checkout") }),
          liveWb(2, { metadata: "" }),
          liveWb(3, { metadata: "not json" }),
          liveWb(4, { metadata: '["an array"]' }),
          liveWb(5, { metadata: '{"edgeplan":"not a marker"}' }),
        ],
      },
      { prune: true },
    );
    expect(p.changes.map((c) => [c.address, c.action])).toEqual([["weighted_backend.checkout", "create"]]);
    expect(p.orphans).toEqual([]);
  });

  it("matches the oldest of several objects carrying the same marker; the others are orphans", () => {
    const p = plan({ wbs: [desiredWb("a")] }, { wbs: [liveWb(7, { metadata: markerMetadata("default", "a") }), liveWb(3, { metadata: markerMetadata("default", "a") })] });
    expect(p.changes).toEqual([]);
    expect(p.orphans).toEqual([
      {
        address: `weighted_backend.${wbId(7)}`,
        id: wbId(7),
        name: "a",
        protected: false,
        action: "keep",
        reason: "no manifest names it; run with --prune to delete it",
      },
    ]);
    expect(p.warnings).toEqual([
      `weighted_backend.a: 2 objects carry the marker of "a" in stack "default"; the oldest, ${wbId(3)}, is the match, and ${wbId(7)} is an orphan`,
    ]);
  });

  it("adopting by id leaves the object with the name's marker an orphan, and the warning says what becomes of it", () => {
    const warningOf = (protect: boolean, prune: boolean): string[] =>
      plan({ wbs: [desiredWb("a", { id: wbId(1) })] }, { wbs: [liveWb(1), liveWb(2, { metadata: markerMetadata("default", "a", {}, protect) })] }, { prune }).warnings;
    const head = `weighted_backend.a: adopted by id ${wbId(1)}, while ${wbId(2)} carries the marker of "a" in stack "default"; ${wbId(2)} is an orphan: `;
    expect(warningOf(false, false)).toEqual([`${head}run with --prune to delete it, or adopt it under another name`]);
    expect(warningOf(false, true)).toEqual([`${head}--prune deletes it`]);
    expect(warningOf(true, true)).toEqual([`${head}it is protected, so it is kept`]);
  });

  it("keeps stacks apart: the same name in another stack is a different object", () => {
    const p = plan({ wbs: [desiredWb("a")] }, { wbs: [liveWb(1, { metadata: markerMetadata("prod", "a") })] }, { stack: "staging" });
    expect(wbChange(p, "weighted_backend.a").action).toBe("create");
    expect(wbChange(p, "weighted_backend.a").request.body?.metadata).toBe('{"edgeplan":{"name":"a","stack":"staging"}}');
  });
});

describe("adopt, takeover and id", () => {
  it("adopts an object without a marker by id, adding the marker", () => {
    const p = plan({ wbs: [desiredWb("legacy", { id: wbId(4) })] }, { wbs: [liveWb(4, { metadata: '{"team":"x"}' })] });
    const c = wbChange(p, "weighted_backend.legacy");
    expect(c.action).toBe("adopt");
    expect(c.previous_owner).toBeNull();
    expect(c.notes).toEqual([`adopted by id: ${wbId(4)} carries no owner marker, so the plan adds one`]);
    expect(c.diffs.map((d) => d.path)).toEqual(["metadata.edgeplan", "metadata.team"]);
    expect(p.summary.adopt).toBe(1);
  });

  it("shows non-JSON metadata being replaced as one field", () => {
    const p = plan({ wbs: [desiredWb("legacy", { id: wbId(4) })] }, { wbs: [liveWb(4, { metadata: "owner: bob" })] });
    expect(wbChange(p, "weighted_backend.legacy").diffs).toEqual([
      { path: "metadata", op: "change", before: "owner: bob", after: { edgeplan: { name: "legacy", stack: "default" } }, lines: null },
    ]);
  });

  it("refuses an id of another stack without takeover, naming the manifest position", () => {
    const d = desiredWb("a", { id: wbId(4), fieldSources: { id: pos(9, "manifests/a.yaml", 5) } });
    const live = { wbs: [liveWb(4, { metadata: markerMetadata("prod", "main") })] };
    expect(planError(() => plan({ wbs: [d] }, live))).toBe(
      `manifests/a.yaml:9:5: weighted backend "a": ${wbId(4)} belongs to stack "prod" (as "main"); edgeplan never changes another stack's objects: pass --takeover to take it over, or remove \`id:\``,
    );
    const p = plan({ wbs: [d] }, live, { takeover: true });
    const c = wbChange(p, "weighted_backend.a");
    expect(c.action).toBe("takeover");
    expect(c.previous_owner).toEqual({ stack: "prod", name: "main" });
    expect(c.notes).toEqual([`taken over from stack "prod" (where it is "main") because --takeover is given`]);
  });

  it("reports every id that does not exist, each at its position", () => {
    const msg = planError(() => plan({ wbs: [desiredWb("b", { id: wbId(8), source: pos(5) }), desiredWb("a", { id: wbId(9), source: pos(2) })] }, { wbs: [liveWb(1)] }));
    expect(msg).toBe(
      [
        `manifests/main.yaml:2:1: weighted backend "a": id ${wbId(9)} does not exist in this account; correct the id, or remove \`id:\` to create a new object`,
        `manifests/main.yaml:5:1: weighted backend "b": id ${wbId(8)} does not exist in this account; correct the id, or remove \`id:\` to create a new object`,
      ].join("\n"),
    );
  });

  it("an id of this stack under another name is a rename, and says so", () => {
    const p = plan({ wbs: [desiredWb("new", { id: wbId(2) })] }, { wbs: [liveWb(2, { metadata: markerMetadata("default", "old") })] });
    const c = wbChange(p, "weighted_backend.new");
    expect(c.action).toBe("rename");
    expect(c.notes).toEqual([`adopted by id: ${wbId(2)} is "old" of this stack; the plan renames it to "new"`]);
    expect(p.orphans).toEqual([]);
  });

  it("an id of this stack under its own name is an ordinary match", () => {
    const p = plan({ wbs: [desiredWb("a", { id: wbId(2) })] }, { wbs: [liveWb(2, { metadata: markerMetadata("default", "a") })] });
    expect(p.changes).toEqual([]);
  });
});

describe("orphans, prune and protect", () => {
  const live = {
    wbs: [
      liveWb(1, { metadata: markerMetadata("default", "gone") }),
      liveWb(2, { metadata: markerMetadata("default", "kept", {}, true), backends: { [hrId(2)]: 1 } }),
      liveWb(3, { metadata: markerMetadata("other", "theirs") }),
    ],
  };

  it("lists orphans without deleting them unless prune", () => {
    const p = plan({}, live);
    expect(p.changes).toEqual([]);
    expect(p.orphans.map((o) => [o.address, o.action, o.protected])).toEqual([
      ["weighted_backend.gone", "keep", false],
      ["weighted_backend.kept", "keep", true],
    ]);
    expect(p.summary.orphans_kept).toBe(2);
  });

  it("deletes unprotected orphans with prune, never protected ones", () => {
    const p = plan({}, live, { prune: true });
    expect(p.changes.map((c) => [c.address, c.action, c.request.method, c.request.path])).toEqual([
      ["weighted_backend.gone", "delete", "DELETE", `/backends/weighted/${wbId(1)}`],
    ]);
    expect(p.orphans.map((o) => [o.address, o.action, o.reason])).toEqual([
      ["weighted_backend.gone", "delete", "no manifest names it; deleted because --prune is given"],
      ["weighted_backend.kept", "keep", "protected (its marker says protect: true): never deleted until a manifest takes it back with protect: false"],
    ]);
    expect(wbChange(p, "weighted_backend.gone").fingerprint).toBe(weightedBackendFingerprint(live.wbs[0] as LiveWeightedBackend));
  });

  it("keeps an orphan that an object staying in place still references", () => {
    const p = plan(
      {},
      {
        wbs: [liveWb(1, { metadata: markerMetadata("default", "child") }), liveWb(2, { metadata: markerMetadata("other", "parent"), backends: { [wbId(1)]: 1 } })],
      },
      { prune: true },
    );
    expect(p.changes).toEqual([]);
    expect(p.orphans[0]?.reason).toBe(`kept although --prune is given: ${wbId(2)} still references it, so the API would refuse the delete`);
  });
});

describe("rename", () => {
  it("turns an orphan and a new object with the same spec into one rename", () => {
    const p = plan(
      { wbs: [desiredWb("checkout-v2", { description: "d", metadata: { team: "t" }, backends: { [hrId(1)]: 10 } })] },
      { wbs: [liveWb(5, { description: "d", metadata: markerMetadata("default", "checkout", { team: "t" }), backends: { [hrId(1)]: 10 } })] },
      { prune: true },
    );
    expect(p.changes.map((c) => [c.address, c.action])).toEqual([["weighted_backend.checkout-v2", "rename"]]);
    const c = wbChange(p, "weighted_backend.checkout-v2");
    expect(c.id).toBe(wbId(5));
    expect(c.request.method).toBe("PATCH");
    expect(c.diffs.map((d) => [d.path, d.before, d.after])).toEqual([
      ["metadata.edgeplan", { name: "checkout", stack: "default" }, { name: "checkout-v2", stack: "default" }],
    ]);
    expect(p.orphans).toEqual([]);
    expect(p.summary).toMatchObject({ rename: 1, create: 0, delete: 0 });
  });

  it("is not a rename when the spec differs", () => {
    const p = plan(
      { wbs: [desiredWb("b", { backends: { [hrId(1)]: 11 } })] },
      { wbs: [liveWb(5, { metadata: markerMetadata("default", "a"), backends: { [hrId(1)]: 10 } })] },
      { prune: true },
    );
    expect(p.changes.map((c) => [c.address, c.action])).toEqual([
      ["weighted_backend.a", "delete"],
      ["weighted_backend.b", "create"],
    ]);
  });

  it("resolves renames in chains: a parent's child named by a renamed object", () => {
    const p = plan(
      { wbs: [desiredWb("leaf2", { backends: { [hrId(1)]: 1 } }), desiredWb("top2", { backends: { leaf2: 1 } })] },
      {
        wbs: [
          liveWb(1, { metadata: markerMetadata("default", "leaf"), backends: { [hrId(1)]: 1 } }),
          liveWb(2, { metadata: markerMetadata("default", "top"), backends: { [wbId(1)]: 1 } }),
        ],
      },
    );
    expect(p.changes.map((c) => [c.address, c.action, c.kind === "weighted_backend" ? c.id : null])).toEqual([
      ["weighted_backend.leaf2", "rename", wbId(1)],
      ["weighted_backend.top2", "rename", wbId(2)],
    ]);
  });
});

describe("references by name", () => {
  it("resolves a reference to an existing object to its id", () => {
    const p = plan(
      { wbs: [desiredWb("canary", { backends: { [hrId(1)]: 1 } }), desiredWb("main", { backends: { canary: 10, [hrId(2)]: 90 } })] },
      {
        wbs: [
          liveWb(1, { metadata: markerMetadata("default", "canary"), backends: { [hrId(1)]: 1 } }),
          liveWb(2, { metadata: markerMetadata("default", "main"), backends: { [wbId(1)]: 10, [hrId(2)]: 80 } }),
        ],
      },
    );
    const c = wbChange(p, "weighted_backend.main");
    expect(c.request.body?.backends).toEqual({ [wbId(1)]: 10, [hrId(2)]: 90 });
    expect(c.refs).toEqual({});
    expect(c.weights.find((w) => w.child === wbId(1))).toMatchObject({ name: "canary", changed: false, before: 10, after: 10 });
  });

  it("keeps a reference to an object created by the same plan by name, with a dependency", () => {
    const p = plan(
      { wbs: [desiredWb("canary", { backends: { [hrId(1)]: 1 } }), desiredWb("main", { backends: { canary: 10, [hrId(2)]: 90 } })] },
      { wbs: [liveWb(2, { metadata: markerMetadata("default", "main"), backends: { [hrId(2)]: 100 } })] },
    );
    const c = wbChange(p, "weighted_backend.main");
    expect(c.request.body?.backends).toEqual({ canary: 10, [hrId(2)]: 90 });
    expect(c.refs).toEqual({ canary: "weighted_backend.canary" });
    expect(c.depends_on).toEqual(["weighted_backend.canary"]);
    expect(c.weights.find((w) => w.child === "canary")).toMatchObject({ known_after_apply: true, name: "canary", before: null, after: 10 });
    expect(resolveWeightedBackendBody(c, new Map([["weighted_backend.canary", wbId(9)]])).backends).toEqual({ [wbId(9)]: 10, [hrId(2)]: 90 });
    expect(() => resolveWeightedBackendBody(c, {})).toThrow("weighted_backend.main: child canary has no id yet; weighted_backend.canary must be applied first");
  });

  it("refuses two children that name the same object", () => {
    const msg = planError(() =>
      plan(
        {
          wbs: [
            desiredWb("a", { backends: { [hrId(1)]: 1 } }),
            desiredWb("b", { backends: { a: 1, [wbId(1)]: 2 }, fieldSources: { [`backends.${wbId(1)}`]: pos(7, "m.yaml", 3) } }),
          ],
        },
        { wbs: [liveWb(1, { metadata: markerMetadata("default", "a"), backends: { [hrId(1)]: 1 } })] },
      ),
    );
    expect(msg).toBe(`m.yaml:7:3: weighted backend "b": children "a" and "${wbId(1)}" are the same object (${wbId(1)}); keep one of them`);
  });
});

describe("cycles through ids", () => {
  it("refuses children that lead back to their parent through an id, at the reference that closes the cycle", () => {
    const msg = planError(() =>
      plan(
        {
          wbs: [
            desiredWb("a", { backends: { [wbId(2)]: 1 }, fieldSources: { [`backends.${wbId(2)}`]: pos(4, "a.yaml", 3) } }),
            desiredWb("b", { backends: { a: 1 }, fieldSources: { "backends.a": pos(9, "b.yaml", 3) } }),
          ],
        },
        { wbs: [liveWb(1, { metadata: markerMetadata("default", "a") }), liveWb(2, { metadata: markerMetadata("default", "b") })] },
      ),
    );
    expect(msg).toBe(`b.yaml:9:3: weighted backend "b": its children lead back to it (b -> a -> b); the API refuses cycles, remove one of these references`);
  });
});

describe("modules", () => {
  it("sets a module the route lacks, replaces one that differs, leaves an equal one alone", () => {
    const p = plan({ routes: [desiredRoute(present(samlSettings({ authorized_groups: ["eng", "ops"] })), present(CB))] }, { routes: [liveRouteOf(samlModule(ROUTE), null)] });
    const cb = moduleChange(p, CB_ADDR);
    expect(cb.action).toBe("replace");
    expect(cb.before).toBeNull();
    expect(cb.request).toEqual({ method: "PUT", path: `/edges/https/${EDGE}/routes/${ROUTE}/circuit_breaker`, body: { ...CB } });
    expect(cb.diffs.map((d) => d.path)).toEqual(["enabled", "tripped_duration", "rolling_window", "num_buckets", "volume_threshold", "error_threshold_percentage"]);
    const saml = moduleChange(p, SAML_ADDR);
    expect(saml.diffs).toEqual([{ path: "authorized_groups", op: "change", before: ["engineering"], after: ["eng", "ops"], lines: null }]);
    expect(saml.request.body).toEqual(samlSettings({ authorized_groups: ["eng", "ops"] }));
    expect(Object.keys(saml.request.body ?? {})).not.toContain("entity_id");
    expect(p.summary.module_replace).toBe(2);

    // Both modules were first declared: one inventory write records them once they are set.
    expect(p.changes.filter((c) => c.kind === "inventory").map((c) => [c.action, c.depends_on])).toEqual([["create", [CB_ADDR, SAML_ADDR]]]);

    const recorded = [liveWb(1, { metadata: inventoryMetadata("default", [CB_ADDR, SAML_ADDR]) })];
    const same = plan({ routes: [desiredRoute(present(samlSettings()), present(CB))] }, { wbs: recorded, routes: [liveRouteOf(samlModule(ROUTE), CB)] });
    expect(same.changes).toEqual([]);
  });

  it("fills API defaults on the desired side so that leaving them out is no change", () => {
    const partial = { tripped_duration: 120, rolling_window: 300, num_buckets: 5, error_threshold_percentage: 0.2 };
    const p = plan(
      { routes: [desiredRoute(unmanaged, present(partial as typeof CB))] },
      { wbs: [liveWb(1, { metadata: inventoryMetadata("default", [CB_ADDR]) })], routes: [liveRouteOf(null, { ...partial, enabled: true, volume_threshold: 0 })] },
    );
    expect(p.changes).toEqual([]);
  });

  it("compares IdP metadata as the exact string and shows a line diff", () => {
    const xml = samlSettings().idp_metadata as string;
    const p = plan(
      { routes: [desiredRoute(present(samlSettings({ idp_metadata: xml.replace(/\n/g, "\r\n") })), unmanaged)] },
      { routes: [liveRouteOf(samlModule(ROUTE), null)] },
    );
    const d = moduleChange(p, SAML_ADDR).diffs[0];
    expect(d?.path).toBe("idp_metadata");
    expect(d?.lines).toEqual(["  (the texts differ only in line endings or the final newline)"]);
    const p2 = plan(
      { routes: [desiredRoute(present(samlSettings({ idp_metadata: xml.replace("exk1", "exk2") })), unmanaged)] },
      { routes: [liveRouteOf(samlModule(ROUTE), null)] },
    );
    const lines = moduleChange(p2, SAML_ADDR).diffs[0]?.lines ?? [];
    expect(lines[0]).toBe("@@ -1,5 +1,5 @@");
    expect(lines.filter((l) => l.startsWith("- ") || l.startsWith("+ ")).map((l) => l.slice(0, 3))).toEqual(["- <", "+ <"]);
  });

  it("deletes a module the manifest says is absent; leaves an unmanaged module alone", () => {
    const p = plan({ routes: [desiredRoute(unmanaged, absent())] }, { routes: [liveRouteOf(samlModule(ROUTE, { enabled: false }), CB)] });
    expect(p.changes.map((c) => [c.address, c.action, c.request.method])).toEqual([[CB_ADDR, "delete", "DELETE"]]);
    expect(p.summary.module_delete).toBe(1);
    const none = plan({ routes: [desiredRoute(absent(), absent())] }, { routes: [liveRouteOf(null, null)] });
    expect(none.changes).toEqual([]);
  });

  it("refuses a route the live side lacks, naming the manifest position", () => {
    const msg = planError(() => plan({ routes: [desiredRoute(present(samlSettings()), unmanaged, { source: pos(3, "routes.yaml") })] }, { routes: [] }));
    expect(msg).toBe(`routes.yaml:3:1: edge route ${EDGE}/${ROUTE} does not exist in this account; check the edge and route ids`);
  });
});

describe("outputs", () => {
  it("lists the generated SAML fields of managed routes; a new module's are known after apply", () => {
    const route2 = ROUTE.replace(/1$/, "2");
    const p = plan(
      {
        routes: [
          desiredRoute(present(samlSettings()), unmanaged),
          desiredRoute(present(samlSettings()), unmanaged, { route: route2 }),
          desiredRoute(unmanaged, present(CB), { route: ROUTE.replace(/1$/, "3") }),
        ],
      },
      {
        routes: [
          { ...liveRouteOf(samlModule(ROUTE), null), samlCertificateSha256: "AB:CD" },
          liveRouteOf(null, null, { route: route2 }),
          liveRouteOf(samlModule(ROUTE.replace(/1$/, "3")), CB, { route: ROUTE.replace(/1$/, "3") }),
        ],
      },
    );
    expect(p.outputs).toEqual([
      {
        address: SAML_ADDR,
        edge: EDGE,
        route: ROUTE,
        known_after_apply: false,
        entity_id: `https://idp.edgeplan.localhost/saml/${ROUTE}`,
        assertion_consumer_service_url: `https://idp.edgeplan.localhost/saml/${ROUTE}/acs`,
        single_logout_url: `https://idp.edgeplan.localhost/saml/${ROUTE}/slo`,
        metadata_url: `https://idp.edgeplan.localhost/saml/${ROUTE}`,
        certificate_sha256: "AB:CD",
      },
      {
        address: `edge_route.${EDGE}/${route2}.saml`,
        edge: EDGE,
        route: route2,
        known_after_apply: true,
        entity_id: null,
        assertion_consumer_service_url: null,
        single_logout_url: null,
        metadata_url: null,
        certificate_sha256: null,
      },
    ]);
  });
});

describe("input checks", () => {
  it("reports every problem at once, sorted by position", () => {
    const msg = planError(() =>
      buildPlan(
        {
          weightedBackends: [desiredWb("a", { id: wbId(8), source: pos(10) }), desiredWb("b", { id: wbId(9), source: pos(8) })],
          edgeRoutes: [desiredRoute(absent(), unmanaged, { source: pos(12) })],
        },
        { weightedBackends: [], routes: [] },
        { stack: "default", prune: false, takeover: false, maxShift: 50 },
      ),
    );
    expect(msg.split("\n")).toEqual([
      `manifests/main.yaml:8:1: weighted backend "b": id ${wbId(9)} does not exist in this account; correct the id, or remove \`id:\` to create a new object`,
      `manifests/main.yaml:10:1: weighted backend "a": id ${wbId(8)} does not exist in this account; correct the id, or remove \`id:\` to create a new object`,
      `manifests/main.yaml:12:1: edge route ${EDGE}/${ROUTE} does not exist in this account; check the edge and route ids`,
    ]);
  });

  it("takes the loader's word that names, adopted ids and routes are unique: a repeat is an internal error", () => {
    const options = { stack: "default", prune: false, takeover: false, maxShift: 50 };
    const live = { weightedBackends: [liveWb(1)], routes: [] };
    const names = { weightedBackends: [desiredWb("a", { source: pos(4) }), desiredWb("a", { source: pos(1) })], edgeRoutes: [] };
    expect(() => buildPlan(names, live, options)).toThrow(
      new InternalError(`plan: weighted backend "a" is declared at manifests/main.yaml:1:1 and manifests/main.yaml:4:1; the loader reports a name declared twice`),
    );
    const ids = { weightedBackends: [desiredWb("a", { id: wbId(1) }), desiredWb("b", { id: wbId(1) })], edgeRoutes: [] };
    expect(() => buildPlan(ids, live, options)).toThrow(new InternalError(`plan: id ${wbId(1)} is adopted by "a" and "b"; the loader reports an id adopted twice`));
    const routes = { weightedBackends: [], edgeRoutes: [desiredRoute(absent(), unmanaged, { source: pos(12) }), desiredRoute(absent(), unmanaged, { source: pos(2) })] };
    expect(() => buildPlan(routes, live, options)).toThrow(
      new InternalError(`plan: edge route ${EDGE}/${ROUTE} is declared at manifests/main.yaml:2:1 and manifests/main.yaml:12:1; the loader reports a route declared twice`),
    );
  });
});
