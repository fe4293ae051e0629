/**
 * The rollout commands' side of progressive rollouts, from one listing of the weighted backends: where each rollout
 * of a stack stands (`edgeplan rollout status`), and the one write of `promote`, `abort` and `retry`, each a PATCH of
 * the object's owner marker (and, for `abort`, of its weights). Only objects the stack owns are read or written. Pure:
 * the time comes in as `now`.
 */
import { compareText } from "../model/canonical.js";
import { EdgeplanError } from "../model/errors.js";
import { weightedBackendPath } from "../model/paths.js";
import { weightedBackendAddress, type JsonValue, type PlannedRequest, type RolloutStep, type WeightedBackendBody } from "../model/plan.js";
import type { RolloutStatus } from "../model/rollout-schema.js";
import type { OwnerMarker, RolloutState } from "../model/state.js";
import { buildMarker, buildMetadata, buildWeightedBackendBody, parseLiveMetadata, sortedBackends } from "../kinds/weighted-backend.js";
import type { ListedObject } from "./state-list.js";
import { completeCommands } from "./command-text.js";
import { promoteCommand } from "./rollout.js";

/** A weighted backend of the stack whose owner marker holds a rollout's state. */
export interface OwnedRollout {
  address: string;
  name: string;
  object: ListedObject;
  marker: OwnerMarker & { rollout: RolloutState };
  user: Record<string, JsonValue>;
}

/** The write of one rollout command, and the sentence that says what it did. */
export interface RolloutWrite {
  request: PlannedRequest<"PATCH", WeightedBackendBody>;
  done: string;
}

/** Why `abort` halts a rollout: the reason kept in the marker, as a failed check's is. */
export const ABORT_REASON = "aborted by edgeplan rollout abort";

/** Every object of `stack` whose marker holds a rollout's state, sorted by address. */
export function findRollouts(objects: readonly ListedObject[], stack: string): OwnedRollout[] {
  const found: OwnedRollout[] = [];
  for (const object of objects) {
    const { marker, user } = parseLiveMetadata(object.metadata);
    if (marker === null || marker.stack !== stack || marker.rollout === undefined) continue;
    const owned = { ...marker, rollout: marker.rollout };
    found.push({ address: weightedBackendAddress(marker.name), name: marker.name, object, marker: owned, user: user ?? {} });
  }
  return found.sort((a, b) => compareText(a.address, b.address) || compareText(a.object.id, b.object.id));
}

/**
 * The rollout of `name` among the stack's objects. Throws EdgeplanError naming the rollouts there are when the
 * stack owns no object of that name, or the object has no rollout under way or halted. `where` (here and in the
 * builders below: the flags that reach the same API and stack) completes the commands the messages quote.
 */
export function findRollout(objects: readonly ListedObject[], stack: string, name: string, where = ""): OwnedRollout {
  const found = findRollouts(objects, stack).find((r) => r.name === name);
  if (found) return found;
  const owns = objects.some((o) => {
    const m = parseLiveMetadata(o.metadata).marker;
    return m?.stack === stack && m.name === name;
  });
  const names = findRollouts(objects, stack).map((r) => r.name);
  const others = names.length > 0 ? `rollouts of the stack: ${names.join(", ")}` : "the stack has no rollout under way";
  const what = owns ? `${weightedBackendAddress(name)} has no rollout under way or halted` : `stack "${stack}" owns no weighted backend named ${name}`;
  return fail(`${what} (${others}; see "edgeplan rollout status")`, where);
}

function fail(message: string, where = ""): never {
  throw new EdgeplanError(completeCommands(message, where));
}

/**
 * Where one rollout stands. `planned` is the plan's rollout step for the object (made from the manifests and this
 * listing), used only when it moves toward the marker's target: it knows the steps, when the next is due, and the
 * final weights. Without it the marker alone tells the step, the weights and why it halted or waits.
 */
export function buildRolloutStatus(owned: OwnedRollout, planned: RolloutStep | undefined): RolloutStatus {
  const state = owned.marker.rollout;
  const r = planned?.target === state.target ? planned : undefined;
  const paused = state.paused ?? r?.paused_reason ?? null;
  const status: RolloutStatus["status"] =
    state.halted !== undefined ? "halted" : paused !== null ? "paused" : r && (r.status === "due" || r.status === "waiting") ? r.status : "unknown";
  return {
    address: owned.address,
    name: owned.name,
    id: owned.object.id,
    status,
    step: state.step,
    steps: r?.steps ?? null,
    step_at: state.at,
    next_due_at: status === "due" || status === "waiting" ? (r?.due_at ?? null) : null,
    weights: sortedBackends(owned.object.backends),
    from: sortedBackends(state.from),
    target: state.target,
    final: r ? sortedBackends(r.final) : null,
    paused,
    halted: state.halted ?? null,
    promoted: state.promoted ?? null,
  };
}

/** The PATCH that writes `backends` and a marker holding `state` (none: no rollout), everything else as it is. */
function markerWrite(owned: OwnedRollout, backends: Readonly<Record<string, number>>, state: RolloutState | undefined): RolloutWrite["request"] {
  const m = owned.marker;
  const marker = buildMarker(m.stack, m.name, m.protect === true, state);
  const body = buildWeightedBackendBody({ description: owned.object.description, metadata: buildMetadata(owned.user, marker), backends });
  return { method: "PATCH", path: weightedBackendPath(owned.object.id), body };
}

/**
 * `rollout promote NAME`: the marker's `paused` cleared and `promoted` set to the step written, so that the next
 * apply takes the step after it (past a pause step) with no pause, check or analysis before it. A halted rollout is
 * refused: it starts again with `rollout retry`.
 */
export function buildPromote(owned: OwnedRollout, where = ""): RolloutWrite {
  const { paused: _paused, ...state } = owned.marker.rollout;
  if (state.halted !== undefined) {
    fail(`${owned.address}: the rollout is halted (${state.halted}), not paused; start it again with "edgeplan rollout retry ${owned.name}"`, where);
  }
  return {
    request: markerWrite(owned, owned.object.backends, { ...state, promoted: state.step }),
    done: `${owned.address}: promoted past step ${state.step}: the next apply takes the step after it, with no pause or check before it`,
  };
}

/**
 * `rollout abort NAME`: the weights the rollout started from, in one request, and the marker's state halted with
 * `ABORT_REASON` at `now`, as a failed check halts it; held there until the manifest changes or `rollout retry`.
 */
export function buildAbort(owned: OwnedRollout, now: number, where = ""): RolloutWrite {
  const { paused: _paused, promoted: _promoted, ...state } = owned.marker.rollout;
  if (state.halted !== undefined) fail(`${owned.address}: the rollout is halted already (${state.halted}); nothing to abort`);
  const halted: RolloutState = { ...state, at: new Date(now).toISOString(), halted: ABORT_REASON };
  return {
    request: markerWrite(owned, state.from, halted),
    done: completeCommands(
      `${owned.address}: rollout aborted: the weights it started from were written back; it stays halted until the manifest changes or "edgeplan rollout retry ${owned.name}"`,
      where,
    ),
  };
}

/**
 * `rollout retry NAME` (as `apply --retry-rollout NAME`): the halted state leaves the marker, so that the next apply
 * starts the rollout again from the live weights. Only a halted rollout is retried.
 */
export function buildRetry(owned: OwnedRollout, where = ""): RolloutWrite {
  const state = owned.marker.rollout;
  if (state.halted === undefined) {
    const hint = state.paused !== undefined ? `; it is paused: go on with "${promoteCommand(owned.name)}"` : "";
    fail(`${owned.address}: the rollout is not halted, nothing to retry${hint}`, where);
  }
  return {
    request: markerWrite(owned, owned.object.backends, undefined),
    done: `${owned.address}: the halted rollout was cleared: the next apply starts it again from the live weights`,
  };
}
