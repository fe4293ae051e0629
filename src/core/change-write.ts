/**
 * What a change writes, the one notion every judge reads: what it writes now (its `after`, which its request sends)
 * and what it commits to. For a plain change the two are the same; a rollout step writes one step now and commits to
 * the manifest's value at the end, reached by the steps still to come under the rollout's pace and gates. Risks,
 * policies, the plan's digest (the pull request's review record), the saved-plan check and the renderings read it
 * here rather than each working it out from the rollout's fields. Pure.
 */
import { isJsonObject } from "../model/canonical.js";
import type { Change, JsonValue, RolloutGates, RolloutStep, WeightedBackendValue } from "../model/plan.js";
import { MARKER_KEY } from "../model/state.js";
import { rolloutSteps } from "./rollout.js";

type Weights = Record<string, number>;

/** What a rollout commits to beyond the step it writes now. */
export interface RolloutCommitment {
  /** The weights of each write still to come, this change's first and the final weights last; none while halted or paused. */
  steps: Weights[];
  /** How the writes are paced: the manifest's `max_step` or `steps:`, and the least time between two. */
  pace: Pick<RolloutStep, "max_step" | "shares" | "interval_ms">;
  /** What is asked before each later write. */
  gates: RolloutGates;
}

/** What a change writes now and where it leads. */
export interface ChangeWrite {
  /** The value this change writes (its `after`): null for a delete, and for a rollout that is halted or paused. */
  now: JsonValue | WeightedBackendValue | null;
  /** The value it commits to: `now` for a plain change; for a rollout, the manifest's value once its last step is written. */
  end: JsonValue | WeightedBackendValue | null;
  /** Only for a rollout. */
  rollout: RolloutCommitment | null;
}

/** The one reading of what `change` writes and commits to. */
export function changeWriteOf(change: Change): ChangeWrite {
  if (change.kind !== "weighted_backend" || change.rollout === undefined) {
    return { now: change.after as ChangeWrite["now"], end: change.after as ChangeWrite["end"], rollout: null };
  }
  const r = change.rollout;
  // The rollback of a halt writes the weights the rollout started from, and that is where it ends: no step follows.
  if (r.phase === "halt") return { now: change.after, end: change.after, rollout: { steps: [], pace: paceOf(r), gates: r.gates } };
  const writes = r.status !== "halted" && r.status !== "paused";
  const end = change.after === null ? null : { ...change.after, metadata: withoutRolloutState(change.after.metadata), backends: { ...r.final } };
  const rollout: RolloutCommitment = {
    steps: writes ? remainingSteps(r) : [],
    pace: paceOf(r),
    gates: r.gates,
  };
  return { now: writes ? change.after : null, end, rollout };
}

function paceOf(r: RolloutStep): RolloutCommitment["pace"] {
  return { max_step: r.max_step, shares: r.shares, interval_ms: r.interval_ms };
}

/** The writes from this one to the last: a step and those after it; a confirmation or a return is the last write. */
function remainingSteps(r: RolloutStep): Weights[] {
  if (r.phase !== "step") return [{ ...r.final }];
  return rolloutSteps(r.from, r.final, r).slice(r.step - 1);
}

/** Metadata as it is once the rollout ends: the owner marker without the rollout's progress (its last write clears it). */
function withoutRolloutState(metadata: JsonValue): JsonValue {
  if (!isJsonObject(metadata) || !isJsonObject(metadata[MARKER_KEY])) return metadata;
  const { rollout: _rollout, ...marker } = metadata[MARKER_KEY] as Record<string, JsonValue>;
  return { ...metadata, [MARKER_KEY]: marker };
}
