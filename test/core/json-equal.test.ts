import { describe, expect, it } from "vitest";
import { jsonEqual } from "../../src/model/json-equal.js";

describe("jsonEqual", () => {
  it("compares objects whose keys shadow Object.prototype methods", () => {
    const a = JSON.parse('{"valueOf":"x","toString":"y","constructor":"z","n":1}');
    const b = JSON.parse('{"n":1,"constructor":"z","toString":"y","valueOf":"x"}');
    expect(jsonEqual(a, b)).toBe(true);
    expect(jsonEqual(a, { ...b, valueOf: "other" })).toBe(false);
    expect(jsonEqual({ valueOf: "x" }, {})).toBe(false);
  });
  it("agrees with structural equality on plain values", () => {
    expect(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBe(true);
    expect(jsonEqual({ a: [1, { b: 2 }] }, { a: [1, { b: 3 }] })).toBe(false);
    expect(jsonEqual([1, 2], [2, 1])).toBe(false);
  });
});

describe("plans over metadata with keys named like Object.prototype methods", () => {
  it("shows no change when they match, and a field change when they differ", async () => {
    const { desiredWb, liveWb, markerMetadata, plan } = await import("./builders.js");
    const user = { valueOf: "v", toString: "t", constructor: "c" };
    const same = plan({ wbs: [desiredWb("a", { metadata: user })] }, { wbs: [liveWb(1, { metadata: markerMetadata("default", "a", user) })] });
    expect(same.changes).toEqual([]);
    const changed = plan({ wbs: [desiredWb("a", { metadata: { ...user, valueOf: "w" } })] }, { wbs: [liveWb(1, { metadata: markerMetadata("default", "a", user) })] });
    expect(changed.changes.map((c) => [c.address, c.action])).toEqual([["weighted_backend.a", "update"]]);
  });
});
