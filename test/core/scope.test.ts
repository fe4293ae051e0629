/**
 * The scope of a plan (`--target`, `--exclude`) and `ignore_changes`, on plain data: which addresses a pattern
 * names, what a scoped plan keeps, pulls in and refuses, and which fields an ignore list leaves as they are live.
 */
import { describe, expect, it } from "vitest";
import { applyModuleIgnore, checkModuleIgnore, checkWeightedBackendIgnore } from "../../src/kinds/ignore-changes.js";
import { inScope, scopeDesired, scopeReachesKind } from "../../src/core/scope.js";
import { addressMatches, parseAddressPattern } from "../../src/model/syntax.js";
import { CB, desiredRoute, desiredWb, EDGE, hrId, liveWb, markerMetadata, plan, present, ROUTE, samlSettings, wbChange, wbId } from "./builders.js";

describe("address patterns", () => {
  it("match within one segment, and name what is under an address", () => {
    expect(addressMatches("weighted_backend.checkout*", "weighted_backend.checkout-canary")).toBe(true);
    expect(addressMatches("weighted_backend.checkout*", "weighted_backend.search")).toBe(false);
    expect(addressMatches(`edge_route.${EDGE}/*.saml`, `edge_route.${EDGE}/${ROUTE}.saml`)).toBe(true);
    expect(addressMatches(`edge_route.${EDGE}/*.saml`, `edge_route.${EDGE}/${ROUTE}.circuit_breaker`)).toBe(false);
    expect(addressMatches("edge_route.*", `edge_route.${EDGE}/${ROUTE}.saml`)).toBe(true);
    expect(addressMatches(`edge_route.${EDGE}/${ROUTE}`, `edge_route.${EDGE}/${ROUTE}.circuit_breaker`)).toBe(true);
    // `*` never crosses a segment: a pattern for names does not reach into routes.
    expect(addressMatches("*.checkout", `edge_route.${EDGE}/${ROUTE}.saml`)).toBe(false);
    expect(addressMatches("weighted_backend.check", "weighted_backend.checkout")).toBe(false);
  });

  it("are refused when they name no kind", () => {
    expect(parseAddressPattern("--target", " weighted_backend.a ")).toBe("weighted_backend.a");
    expect(() => parseAddressPattern("--exclude", "checkout")).toThrow(/^--exclude: expected an address such as weighted_backend.checkout/);
    expect(() => parseAddressPattern("--target", "weighted_backend..a")).toThrow(/got "weighted_backend..a"$/);
  });

  it("reach a kind only when a target can name it and no exclude names all of it", () => {
    expect(scopeReachesKind({ targets: [], excludes: [] }, "weighted_backend")).toBe(true);
    expect(scopeReachesKind({ targets: ["edge_route.*"], excludes: [] }, "weighted_backend")).toBe(false);
    expect(scopeReachesKind({ targets: [], excludes: ["weighted_backend.*"] }, "weighted_backend")).toBe(false);
    expect(scopeReachesKind({ targets: [], excludes: ["weighted_backend.a"] }, "weighted_backend")).toBe(true);
    expect(inScope({ targets: ["weighted_backend.*"], excludes: ["weighted_backend.b"] }, "weighted_backend.b")).toBe(false);
  });
});

describe("a scoped plan", () => {
  const parent = desiredWb("parent", { backends: { child: 1, [hrId(1)]: 1 } });
  const child = desiredWb("child");
  const other = desiredWb("other", { description: "new" });

  it("pulls in a create its target needs, with a warning, and leaves the rest out", () => {
    const p = plan({ wbs: [parent, child, other] }, { wbs: [liveWb(1, { metadata: markerMetadata("default", "other") })] }, { targets: ["weighted_backend.parent"] });
    expect(p.targeted).toBe(true);
    expect(p.changes.map((c) => `${c.action} ${c.address}`)).toEqual(["create weighted_backend.child", "create weighted_backend.parent"]);
    expect(p.warnings).toEqual(["weighted_backend.child is pulled into this targeted plan: weighted_backend.parent references it by name, and it must be created first"]);
    expect(p.summary.total).toBe(2);
  });

  it("warns of a target that names nothing, as a typo would, with the address meant when one is near", () => {
    const p = plan({ wbs: [parent, child] }, {}, { targets: ["weighted_backend.parnet", "weighted_backend.zzz*"] });
    expect(p.changes).toEqual([]);
    expect(p.warnings).toEqual([
      "--target weighted_backend.parnet names nothing in the manifests or among the stack's objects; did you mean weighted_backend.parent?",
      "--target weighted_backend.zzz* names nothing in the manifests or among the stack's objects; check the address (a plan without --target shows them)",
    ]);
  });

  it("refuses to leave out a create that a target needs", () => {
    expect(() => plan({ wbs: [parent, child] }, {}, { targets: ["weighted_backend.parent"], excludes: ["weighted_backend.child"] })).toThrow(
      "weighted_backend.parent references weighted_backend.child by name, which does not exist yet and --exclude leaves out; remove that --exclude so that it is created first, or leave weighted_backend.parent out too",
    );
  });

  it("keeps an orphan whose delete waits for a change the targets leave out", () => {
    const live = [liveWb(1, { metadata: markerMetadata("default", "old-child") }), liveWb(2, { metadata: markerMetadata("default", "keeper"), backends: { [wbId(1)]: 1 } })];
    const p = plan({ wbs: [desiredWb("keeper")] }, { wbs: live }, { prune: true, targets: ["weighted_backend.old-*"] });
    expect(p.changes).toEqual([]);
    expect(p.orphans.map((o) => [o.address, o.action, o.reason])).toEqual([
      ["weighted_backend.old-child", "keep", "kept although --prune is given: it is deleted after weighted_backend.keeper, which the targets leave out"],
    ]);
    const whole = plan({ wbs: [desiredWb("keeper")] }, { wbs: live }, { prune: true });
    expect(wbChange(whole, "weighted_backend.old-child").depends_on).toEqual(["weighted_backend.keeper"]);
  });

  it("reads only the modules in scope, and no weighted backend when none can be", () => {
    const route = desiredRoute(present(samlSettings()), present(CB));
    const scoped = scopeDesired({ weightedBackends: [parent], edgeRoutes: [route] }, { targets: [`edge_route.${EDGE}/${ROUTE}.circuit_breaker`], excludes: [] });
    expect(scoped.weightedBackends).toEqual([]);
    expect(scoped.edgeRoutes.map((r) => [r.saml.state, r.circuit_breaker.state])).toEqual([["unmanaged", "present"]]);
    const none = scopeDesired({ weightedBackends: [parent], edgeRoutes: [route] }, { targets: ["weighted_backend.parent"], excludes: [] });
    expect(none.edgeRoutes).toEqual([]);
    expect(none.weightedBackends).toEqual([parent]);
  });
});

describe("ignore_changes", () => {
  it("accepts the fields of each kind and refuses the owner marker and unknown fields", () => {
    for (const ok of ["description", "metadata", "metadata.team", "backends", `backends.${hrId(1)}`, "backends.canary"]) {
      expect(checkWeightedBackendIgnore(ok)).toBeUndefined();
    }
    expect(checkWeightedBackendIgnore("metadata.edgeplan")).toBe(
      "metadata.edgeplan cannot be ignored: the owner marker is how edgeplan finds its objects; it is never ignorable",
    );
    expect(checkWeightedBackendIgnore("name")).toBe("name cannot be ignored: the name is how edgeplan finds the object");
    expect(checkWeightedBackendIgnore("weights")).toBe(
      '"weights" cannot be ignored; a WeightedBackend ignores description, metadata, metadata.KEY, backends or backends.CHILD',
    );
    expect(checkModuleIgnore("saml.authorized_groups")).toBeUndefined();
    expect(checkModuleIgnore("circuit_breaker.num_buckets")).toBeUndefined();
    expect(checkModuleIgnore("saml.idp_metadata_file")).toBe("saml.idp_metadata_file cannot be ignored; ignore saml.idp_metadata, the XML it sends");
    expect(checkModuleIgnore("circuit_breaker.buckets")).toMatch(/^circuit_breaker.buckets: circuit_breaker has no field buckets; its fields are enabled, /);
    expect(checkModuleIgnore("saml")).toMatch(/^"saml" cannot be ignored; an EdgeRoute ignores saml.FIELD or circuit_breaker.FIELD/);
  });

  it("takes ignored fields from the live side and names those that differed", () => {
    const { settings, ignored } = applyModuleIgnore("circuit_breaker", { ...CB, num_buckets: 10, volume_threshold: 5 }, { ...CB, num_buckets: 3 }, [
      "circuit_breaker.num_buckets",
      "saml.enabled",
    ]);
    expect(settings).toEqual({ ...CB, num_buckets: 3, volume_threshold: 5 });
    expect(ignored).toEqual(["circuit_breaker.num_buckets"]);
  });

  it("sends the manifest's values on create, and keeps a live metadata key on update", () => {
    const d = desiredWb("checkout", { metadata: { team: "a" }, ignoreChanges: ["metadata.pager"] });
    const created = plan({ wbs: [d] }, {});
    expect(created.ignored).toEqual([]);
    const live = liveWb(1, { metadata: markerMetadata("default", "checkout", { team: "b", pager: "PX1" }) });
    const updated = plan({ wbs: [d] }, { wbs: [live] });
    const change = wbChange(updated, "weighted_backend.checkout");
    expect(change.after?.metadata).toEqual({ edgeplan: { name: "checkout", stack: "default" }, pager: "PX1", team: "a" });
    expect(change.notes).toEqual(["ignored: metadata.pager differs"]);
    expect(updated.ignored).toEqual([{ address: "weighted_backend.checkout", path: "metadata.pager", source: "manifests/main.yaml:1:1" }]);
  });
});
