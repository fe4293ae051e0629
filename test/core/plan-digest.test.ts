/** The record of a plan that the pull request's comment keeps and the apply on merge compares with. */
import { describe, expect, it } from "vitest";
import { buildPlanRecord, diffPlanRecords } from "../../src/core/plan-digest.js";
import { parseReviewedMarker, reviewedMarker } from "../../src/render/action.js";
import type { Change, Plan } from "../../src/model/plan.js";
import { desiredWb, hrId, liveWb, markerMetadata, plan } from "./builders.js";

const owned = (n: number, name: string, backends: Record<string, number>) => liveWb(n, { description: "", metadata: markerMetadata("default", name), backends });

describe("buildPlanRecord", () => {
  const desired = [desiredWb("checkout", { backends: { [hrId(1)]: 5000, [hrId(2)]: 5000 } }), desiredWb("search", { backends: { [hrId(3)]: 100 } })];
  const live = [owned(1, "checkout", { [hrId(1)]: 9000, [hrId(2)]: 1000 })];

  it("is the same for the same changes, whatever their order or the estimate", () => {
    const a = plan({ wbs: desired }, { wbs: live });
    const b = plan({ wbs: [...desired].reverse() }, { wbs: live });
    const shuffled = { ...a, changes: [...a.changes].reverse(), estimate: { ...a.estimate, seconds: 999 } };
    expect(buildPlanRecord(b)).toEqual(buildPlanRecord(a));
    expect(buildPlanRecord(shuffled)).toEqual(buildPlanRecord(a));
    expect(Object.keys(buildPlanRecord(a).changes)).toEqual(["weighted_backend.checkout", "weighted_backend.search"]);
    expect(buildPlanRecord(a).digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it("differs, at that address only, when live changed; and for another stack", () => {
    const reviewed = buildPlanRecord(plan({ wbs: desired }, { wbs: live }));
    const drifted = buildPlanRecord(plan({ wbs: desired }, { wbs: [owned(1, "checkout", { [hrId(1)]: 8000, [hrId(2)]: 2000 })] }));
    expect(drifted.digest).not.toBe(reviewed.digest);
    expect(diffPlanRecords(reviewed, drifted)).toEqual({ added: [], removed: [], changed: ["weighted_backend.checkout"] });
    const other = plan({ wbs: desired }, { wbs: [] }, { stack: "other" });
    expect(buildPlanRecord(other).digest).not.toBe(buildPlanRecord(plan({ wbs: desired }, { wbs: [] })).digest);
  });

  it("records an inventory write by what it records and forgets, not by what another merge recorded meanwhile", () => {
    const base = plan({ wbs: desired }, { wbs: live });
    const write = (before: Record<string, object> | null, after: Record<string, object>, method: "POST" | "PATCH"): Plan => {
      const request = { method, path: method === "POST" ? "/backends/weighted" : "/backends/weighted/bkdwd_1", body: null };
      const change = { kind: "inventory", action: before ? "update" : "create", address: "inventory.default#1", stack: "default", id: null, fingerprint: null };
      return { ...base, changes: [...base.changes, { ...change, source: null, before, after, diffs: [], request, depends_on: [], notes: [] } as unknown as Change] };
    };
    const cb = "edge_route.e/r.circuit_breaker";
    const reviewed = buildPlanRecord(write(null, { [cb]: {} }, "POST"));
    // Another pull request recorded its SAML module first: this merge's write now updates that object.
    const atMerge = buildPlanRecord(write({ "edge_route.e/r.saml": {} }, { "edge_route.e/r.saml": {}, [cb]: {} }, "PATCH"));
    expect(atMerge).toEqual(reviewed);
    const other = buildPlanRecord(write(null, { [cb]: { protect: true } }, "POST"));
    expect(diffPlanRecords(reviewed, other).changed).toEqual(["inventory.default#1"]);
  });

  it("says which changes are new and which are gone", () => {
    const reviewed = buildPlanRecord(plan({ wbs: desired }, { wbs: live }));
    const now = buildPlanRecord(plan({ wbs: [desired[0]!, desiredWb("cart", { backends: { [hrId(4)]: 1 } })] }, { wbs: live }));
    expect(diffPlanRecords(reviewed, now)).toEqual({ added: ["weighted_backend.cart"], removed: ["weighted_backend.search"], changed: [] });
  });

  it("survives the comment's hidden line, and a record too long for it keeps its digest alone", () => {
    const record = buildPlanRecord(plan({ wbs: desired }, { wbs: live }));
    const line = reviewedMarker(record, ["traffic-shift"]);
    expect(line).toBe(
      `<!-- edgeplan:reviewed digest=${record.digest} risks=traffic-shift changes=weighted_backend.checkout=${record.changes["weighted_backend.checkout"]},weighted_backend.search=${record.changes["weighted_backend.search"]} -->`,
    );
    expect(parseReviewedMarker(`<!-- edgeplan:plan stack=default -->\n${line}\n\n### plan`)).toEqual({
      line,
      digest: record.digest,
      rules: ["traffic-shift"],
      changes: record.changes,
    });
    const big = { digest: record.digest, changes: Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`weighted_backend.n${i}`, "0123456789abcdef"])) };
    expect(parseReviewedMarker(`<!-- edgeplan:plan stack=default -->\n${reviewedMarker(big, [])}`)).toEqual({
      line: reviewedMarker(big, []),
      digest: record.digest,
      rules: [],
      changes: undefined,
    });
    expect(parseReviewedMarker("> <!-- edgeplan:reviewed digest=abc risks= -->")).toBeUndefined();
  });
});
