/**
 * The child ids a plan would write that nobody has checked: which of them to read before planning, and the errors
 * for those that the account does not hold. A child id the live side already shows (a weighted backend the listing
 * holds, or a backend some weighted backend already references: the API made sure it existed when that reference
 * was written, and the API deletes no referenced backend) needs no read; so an unchanged child is never read, nor
 * one that a change introduces and another object already uses. Pure.
 */
import { isLeaseObject } from "../model/lease.js";
import type { ChildRead, ChildReadResult } from "../model/reads.js";
import type { DesiredState, DesiredWeightedBackend, LiveState } from "../model/state.js";
import { closest } from "../model/suggest.js";
import { CHILD_BACKEND_KINDS, childBackendType, ID_PREFIX } from "../model/wire.js";
import { posOf, type PlanProblems } from "./plan-index.js";

/** Every child id some live weighted backend references, and the ids of the live weighted backends. */
function vouchedIds(live: LiveState): Set<string> {
  const ids = new Set<string>();
  for (const l of live.weightedBackends) {
    ids.add(l.id);
    for (const child of Object.keys(l.backends)) ids.add(child);
  }
  return ids;
}

/** The manifests' child keys that are ids (a key without `_` is the name of a weighted backend of the manifests). */
function childIds(d: DesiredWeightedBackend): string[] {
  return Object.keys(d.backends).filter((key) => key.includes("_"));
}

/**
 * The child backends (not weighted ones: the listing holds every one of those) that `desired` names by id and that
 * no live weighted backend references yet: each must be read before a write names it. Sorted by id, each once;
 * empty when no manifest introduces a child id.
 */
export function childIdsToRead(desired: DesiredState, live: LiveState): ChildRead[] {
  const wanted = new Set<string>();
  for (const d of desired.weightedBackends) for (const id of childIds(d)) wanted.add(id);
  if (wanted.size === 0) return [];
  const vouched = vouchedIds(live);
  const reads: ChildRead[] = [];
  for (const id of [...wanted].sort()) {
    const type = childBackendType(id);
    if (type !== undefined && !vouched.has(id)) reads.push({ type, id });
  }
  return reads;
}

/**
 * Adds to `problems` one error per child id of `desired` that the account does not hold, at the line of the child:
 * a weighted backend the listing lacks, or a child backend that was read (`childIdsToRead`) and not found. Each
 * names the kind the id's prefix asks for and, when an id of that kind is close, suggests it.
 */
export function findChildIdProblems(desired: DesiredState, live: LiveState, read: ChildReadResult, problems: PlanProblems): void {
  const vouched = vouchedIds(live);
  // Only an error needs them: parsing every live object's metadata for lease objects is not done otherwise.
  let weighted: string[] | undefined;
  const weightedIds = (): string[] => (weighted ??= live.weightedBackends.filter((l) => !isLeaseObject(l)).map((l) => l.id));
  for (const d of desired.weightedBackends) {
    for (const id of childIds(d)) {
      if (vouched.has(id) || read.found.has(id)) continue;
      const type = childBackendType(id);
      if (type === undefined && !id.startsWith(`${ID_PREFIX.weightedBackend}_`)) continue; // the loader refused it
      const noun = type === undefined ? "weighted backend" : CHILD_BACKEND_KINDS[type].noun;
      const suggestion = closest(id, type === undefined ? weightedIds() : (read.known.get(type) ?? []));
      const advice = suggestion === undefined ? "check the id, or remove the child" : `did you mean ${suggestion}?`;
      problems.error(posOf(d, `backends.${id}`), `weighted backend "${d.name}": child ${id} does not exist: this account has no ${noun} with that id; ${advice}`);
    }
  }
}
