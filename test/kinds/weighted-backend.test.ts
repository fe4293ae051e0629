/** The weighted backend kind builds its own changes: create, update (or nothing), and the delete of an orphan. */
import { describe, expect, it } from "vitest";
import { buildWeightedBackendChange, buildWeightedBackendDelete, parseLiveMetadata } from "../../src/kinds/weighted-backend.js";
import { desiredWb, hrId, liveWb, markerMetadata, wbId } from "../core/builders.js";

const names = new Map<string, string>();
const base = { previous: null, notes: [], stack: "default", pending: new Set<string>(), names };

describe("buildWeightedBackendChange", () => {
  it("compares the live metadata as written: same keys in another order match, a marker written otherwise is rewritten", () => {
    const d = desiredWb("web", { metadata: { team: "a", tier: "1" } });
    const input = { ...base, parsedLive: undefined, action: "update" as const, desired: d, backends: d.backends };
    const reordered = liveWb(1, { metadata: '{"tier":"1","edgeplan":{"stack":"default","name":"web"},"team":"a"}' });
    expect(buildWeightedBackendChange({ ...input, live: reordered, parsedLive: parseLiveMetadata(reordered.metadata) })).toBeNull();
    // Parsed, this marker is the same one; written, it is not what edgeplan writes: the update writes it anew.
    const otherwise = liveWb(1, { metadata: '{"edgeplan":{"name":"web","protect":false,"stack":"default"},"team":"a","tier":"1"}' });
    const change = buildWeightedBackendChange({ ...input, live: otherwise, parsedLive: parseLiveMetadata(otherwise.metadata) });
    expect(change?.request.body?.metadata).toBe('{"edgeplan":{"name":"web","stack":"default"},"team":"a","tier":"1"}');
    // A user key more or less on the live side is a change too.
    const more = liveWb(1, { metadata: '{"edgeplan":{"name":"web","stack":"default"},"extra":"x","team":"a","tier":"1"}' });
    expect(buildWeightedBackendChange({ ...input, live: more, parsedLive: parseLiveMetadata(more.metadata) })?.action).toBe("update");
  });

  it("creates with a POST of the whole body, metadata carrying the marker", () => {
    const d = desiredWb("web", { description: "front", metadata: { team: "a" }, backends: { [hrId(1)]: 100 } });
    const change = buildWeightedBackendChange({ ...base, desired: d, live: null, parsedLive: undefined, action: "create", backends: d.backends });
    expect(change?.request).toEqual({
      method: "POST",
      path: "/backends/weighted",
      body: { description: "front", metadata: '{"edgeplan":{"name":"web","stack":"default"},"team":"a"}', backends: { [hrId(1)]: 100 } },
    });
    expect(change?.diffs.map((f) => `${f.op} ${f.path}`)).toEqual(["add description", "add metadata"]);
  });

  it("returns null for an object that already matches, and a PATCH with the weights for one that does not", () => {
    const live = liveWb(1, { metadata: markerMetadata("default", "web"), backends: { [hrId(1)]: 100 } });
    const parsedLive = parseLiveMetadata(live.metadata);
    const same = desiredWb("web");
    const input = { ...base, live, parsedLive, action: "update" as const };
    expect(buildWeightedBackendChange({ ...input, desired: same, backends: same.backends })).toBeNull();
    const moved = desiredWb("web", { backends: { [hrId(1)]: 50, [hrId(2)]: 50 } });
    const change = buildWeightedBackendChange({ ...input, desired: moved, backends: moved.backends });
    expect(change?.request.method).toBe("PATCH");
    expect(change?.request.path).toBe(`/backends/weighted/${wbId(1)}`);
    expect(change?.weights.map((w) => `${w.child} ${w.before}->${w.after}`)).toEqual([`${hrId(1)} 100->50`, `${hrId(2)} null->50`]);
  });
});

describe("buildWeightedBackendDelete", () => {
  it("deletes an orphan by id, saying why", () => {
    const live = liveWb(2, { metadata: markerMetadata("default", "old") });
    const change = buildWeightedBackendDelete(live, undefined, { stack: "default", name: "old" }, "weighted_backend.old", names);
    expect(change.request).toEqual({ method: "DELETE", path: `/backends/weighted/${wbId(2)}`, body: null });
    expect(change.notes).toEqual(['orphan: no manifest names "old" and --prune is given']);
  });
});
