/** One run of apply's rollout steps, with a checker of the test's own: steps sent as planned, halts, holds. */
import { describe, expect, it } from "vitest";
import { prepareRolloutRun, type Checker } from "../../src/apply/rollout.js";
import { stepGraceMs } from "../../src/kinds/weighted-backend-rollout.js";
import { buildPlan, DEFAULT_MAX_SHIFT } from "../../src/core/plan.js";
import { rolloutTargetDigest } from "../../src/kinds/weighted-backend-rollout.js";
import type { Change, WeightedBackendChange } from "../../src/model/plan.js";
import type { RolloutSpec } from "../../src/model/state.js";
import { desiredWb, hrId, liveWb } from "../core/builders.js";

const [A, B] = [hrId(1), hrId(2)];
const SPEC: RolloutSpec = {
  max_step: 50,
  shares: null,
  interval: "1m",
  interval_ms: 60_000,
  check: { url: "https://status.example.com/ok", expect_status: null, timeout_ms: 1000 },
  analysis: [],
};
const NOW = Date.parse("2026-01-01T00:00:00Z");
const target = { [A]: 0, [B]: 100 };

/** The plan's change of `web` at step 2 of 2 (step 1 written a minute before NOW), due at NOW. */
function step2(): WeightedBackendChange {
  const state = { from: { [A]: 100, [B]: 0 }, target: rolloutTargetDigest(target), step: 1, at: "2025-12-31T23:59:00.000Z" };
  const live = liveWb(1, { backends: { [A]: 5000, [B]: 5000 }, metadata: JSON.stringify({ edgeplan: { name: "web", stack: "default", rollout: state } }) });
  const plan = buildPlan(
    { weightedBackends: [{ ...desiredWb("web", { backends: target }), rollout: SPEC }], edgeRoutes: [] },
    { weightedBackends: [live], routes: [] },
    { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT, now: NOW },
  );
  return plan.changes[0] as WeightedBackendChange;
}

const ok: Checker = async () => ({ ok: true });
const down: Checker = async () => ({ ok: false, reason: "HTTP 503" });

describe("prepareRolloutRun", () => {
  it("asks the check of a due step, then sends it exactly as planned, its time the plan's", async () => {
    const asked: string[] = [];
    const run = await prepareRolloutRun(
      [step2()],
      async (c) => {
        asked.push(c.url);
        return { ok: true };
      },
      () => NOW + 5000,
    );
    expect(asked).toEqual(["https://status.example.com/ok"]);
    const sent = run.changes[0] as WeightedBackendChange;
    expect(sent).toEqual(step2());
    expect(sent.request.body?.backends).toEqual(target);
    // The last step with a check keeps the state until the check after it: its time is the plan's, as the request shows.
    expect(JSON.parse(sent.request.body?.metadata ?? "").edgeplan.rollout.at).toBe("2026-01-01T00:00:00.000Z");
    expect(sent.rollout?.next_due_at).toBe("2026-01-01T00:01:00.000Z");
  });

  it("holds a step whose planned time is more than its grace past (a tenth of the interval, at least 5 s), asking no check", async () => {
    expect(stepGraceMs(60_000)).toBe(6000);
    expect(stepGraceMs(3_600_000)).toBe(360_000);
    const asked: string[] = [];
    const checker: Checker = async (c) => {
      asked.push(c.url);
      return { ok: true };
    };
    expect((await prepareRolloutRun([step2()], checker, () => NOW + 6000)).changes).toEqual([step2()]);
    const late = await prepareRolloutRun([step2()], checker, () => NOW + 6001);
    expect(late.changes).toEqual([]);
    expect(late.halted).toEqual([]);
    expect(late.held).toEqual([
      {
        address: "weighted_backend.web",
        status: "waiting",
        message: "step 2 of 2 was planned for 2026-01-01T00:00:00.000Z, more than 6s ago; plan again: the next step counts its interval from the time this write records",
      },
    ]);
    expect(asked).toEqual(["https://status.example.com/ok"]);
  });

  it("turns a failed check into the halt: the starting weights, the reason in the marker", async () => {
    const run = await prepareRolloutRun([step2()], down, () => NOW);
    expect(run.halted).toEqual([{ address: "weighted_backend.web", name: "web", reason: "HTTP 503", weights: { [A]: 100, [B]: 0 } }]);
    const halt = run.changes[0] as WeightedBackendChange;
    expect(halt.rollout?.phase).toBe("halt");
    expect(halt.request.body?.backends).toEqual({ [A]: 100, [B]: 0 });
    expect(JSON.parse(halt.request.body?.metadata ?? "").edgeplan.rollout).toMatchObject({ step: 1, halted: "HTTP 503" });
  });

  it("holds a step that is not due, and every change that depends on it", async () => {
    const { rollout: _rollout, ...plain } = step2();
    const dependent: Change = { ...plain, action: "update", address: "weighted_backend.parent", depends_on: ["weighted_backend.web"] };
    const run = await prepareRolloutRun([step2(), dependent], ok, () => NOW - 1);
    expect(run.changes).toEqual([]);
    expect(run.held).toEqual([
      { address: "weighted_backend.web", status: "waiting", message: "step 2 of 2 is due at 2026-01-01T00:00:00.000Z" },
      { address: "weighted_backend.parent", status: "waiting", message: "waits for weighted_backend.web, which is held back" },
    ]);
  });

  it("never halts on Ctrl-C: an interrupted check leaves the step for the next run", async () => {
    const controller = new AbortController();
    const interrupted: Checker = async () => {
      controller.abort();
      return { ok: false, reason: "interrupted" };
    };
    const run = await prepareRolloutRun([step2()], interrupted, () => NOW, controller.signal);
    expect(run.halted).toEqual([]);
    expect(run.changes).toEqual([]);
    expect(run.held).toEqual([{ address: "weighted_backend.web", status: "waiting", message: "step 2 of 2: the run was interrupted" }]);
  });
});
