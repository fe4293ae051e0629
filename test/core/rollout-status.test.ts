/**
 * The rollout commands in the pure core: where a rollout stands from its owner marker alone, and the one write of
 * promote, abort and retry, each refused with a sentence that says what to do when the rollout is in another state.
 */
import { describe, expect, it } from "vitest";
import { ABORT_REASON, buildAbort, buildPromote, buildRetry, buildRolloutStatus, findRollout, findRollouts } from "../../src/core/rollout-status.js";
import type { RolloutState } from "../../src/model/state.js";
import { hrId, liveWb } from "./builders.js";

const [A, B] = [hrId(1), hrId(2)];
const STATE: RolloutState = { from: { [A]: 100, [B]: 0 }, target: "0123456789abcdef", step: 1, at: "2026-01-01T00:00:00.000Z" };

/** An object of `stack` named `name` whose marker holds `rollout`, with the user's metadata `team`. */
function object(n: number, stack: string, name: string, rollout?: RolloutState) {
  const marker = { stack, name, ...(rollout ? { rollout } : {}) };
  return liveWb(n, { description: "web", backends: { [A]: 7500, [B]: 2500 }, metadata: JSON.stringify({ edgeplan: marker, team: "pay" }) });
}

const body = (w: { request: { body: { metadata: string; backends: Record<string, number> } | null } }) => ({
  backends: w.request.body?.backends,
  metadata: JSON.parse(w.request.body?.metadata ?? ""),
});

describe("the rollout commands", () => {
  const listing = [object(1, "default", "web", STATE), object(2, "default", "api"), object(3, "other", "web", STATE)];

  it("find only the stack's rollouts, and name them when the one asked for is not one", () => {
    expect(findRollouts(listing, "default").map((r) => [r.address, r.object.id])).toEqual([["weighted_backend.web", listing[0]?.id]]);
    expect(() => findRollout(listing, "default", "api")).toThrow(
      'weighted_backend.api has no rollout under way or halted (rollouts of the stack: web; see "edgeplan rollout status")',
    );
    expect(() => findRollout(listing, "default", "cart")).toThrow(
      'stack "default" owns no weighted backend named cart (rollouts of the stack: web; see "edgeplan rollout status")',
    );
  });

  it("status from the marker alone: the step and weights, the rest not known without the manifest", () => {
    expect(buildRolloutStatus(findRollout(listing, "default", "web"), undefined)).toEqual({
      address: "weighted_backend.web",
      name: "web",
      id: listing[0]?.id,
      status: "unknown",
      step: 1,
      steps: null,
      step_at: STATE.at,
      next_due_at: null,
      weights: { [A]: 7500, [B]: 2500 },
      from: { [A]: 100, [B]: 0 },
      target: STATE.target,
      final: null,
      paused: null,
      halted: null,
      promoted: null,
    });
  });

  it("promote clears paused and records the step; abort writes the starting weights, halted; retry clears a halt", () => {
    const paused = findRollout([object(1, "default", "web", { ...STATE, paused: "inconclusive: error-rate: no data" })], "default", "web");
    expect(body(buildPromote(paused))).toEqual({
      backends: { [A]: 7500, [B]: 2500 },
      metadata: { edgeplan: { name: "web", rollout: { ...STATE, promoted: 1 }, stack: "default" }, team: "pay" },
    });
    const aborted = buildAbort(paused, Date.parse("2026-01-01T00:10:00Z"));
    expect(aborted.request.path).toBe(`/backends/weighted/${listing[0]?.id}`);
    expect(body(aborted)).toEqual({
      backends: { [A]: 100, [B]: 0 },
      metadata: { edgeplan: { name: "web", rollout: { ...STATE, at: "2026-01-01T00:10:00.000Z", halted: ABORT_REASON }, stack: "default" }, team: "pay" },
    });
    const halted = findRollout([object(1, "default", "web", { ...STATE, halted: "down" })], "default", "web");
    expect(body(buildRetry(halted))).toEqual({ backends: { [A]: 7500, [B]: 2500 }, metadata: { edgeplan: { name: "web", stack: "default" }, team: "pay" } });
  });

  it("each refuses a rollout in another state, saying what to run instead", () => {
    const halted = findRollout([object(1, "default", "web", { ...STATE, halted: "down" })], "default", "web");
    expect(() => buildPromote(halted)).toThrow('weighted_backend.web: the rollout is halted (down), not paused; start it again with "edgeplan rollout retry web"');
    expect(() => buildAbort(halted, 0)).toThrow("weighted_backend.web: the rollout is halted already (down); nothing to abort");
    const paused = findRollout([object(1, "default", "web", { ...STATE, paused: "pause step 2 of 4" })], "default", "web");
    expect(() => buildRetry(paused)).toThrow('weighted_backend.web: the rollout is not halted, nothing to retry; it is paused: go on with "edgeplan rollout promote web"');
  });
});
