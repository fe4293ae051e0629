/**
 * Orphans: live objects owned by the stack that no manifest names. Deleted only with prune, never when protected
 * or when something that stays still references them (the API would refuse the delete). Pure.
 */
import type { Orphan } from "../model/plan.js";
import { weightedBackendAddress } from "../model/plan.js";
import type { LiveWeightedBackend, OwnerMarker } from "../model/state.js";
import type { Resolved } from "./children.js";
import type { Matching } from "./match.js";
import { markerOf, type PlanIndex, type PlanProblems } from "./plan-index.js";
import { unclaimedOwned } from "./renames.js";

export interface OrphanEntry {
  live: LiveWeightedBackend;
  marker: OwnerMarker;
  address: string;
}

export interface Orphans {
  entries: OrphanEntry[];
  /** Ids of the orphans the plan deletes. */
  deleting: ReadonlySet<string>;
  /** What the plan shows of every orphan. */
  list: Orphan[];
}

/**
 * Finds the orphans and decides the fate of each. An orphan is addressed by the name in its marker, or by its id
 * when a manifest or an earlier orphan has that name (names never contain "_", so an id never meets a name).
 */
export function planOrphans(index: PlanIndex, matching: Matching, resolvedByName: ReadonlyMap<string, Resolved>, prune: boolean, problems: PlanProblems): Orphans {
  const usedNames = new Set(index.desiredNames);
  const entries = unclaimedOwned(index, matching).map((l) => {
    const marker = markerOf(index, l.id) as OwnerMarker;
    const taken = usedNames.has(marker.name);
    usedNames.add(marker.name);
    warnIfLeftByAdoption(index, matching, l, marker, prune, problems);
    return { live: l, marker, address: weightedBackendAddress(taken ? l.id : marker.name) };
  });
  const deleting = new Set(prune ? entries.filter((o) => o.marker.protect !== true).map((o) => o.live.id) : []);
  const keptReason = keepReferenced(index, matching, resolvedByName, deleting);
  const list: Orphan[] = entries.map(({ live: l, marker, address }) => {
    const isProtected = marker.protect === true;
    const action = deleting.has(l.id) ? "delete" : "keep";
    const reason =
      action === "delete"
        ? "no manifest names it; deleted because --prune is given"
        : isProtected
          ? "protected (its marker says protect: true): never deleted until a manifest takes it back with protect: false"
          : (keptReason.get(l.id) ?? "no manifest names it; run with --prune to delete it");
    return { address, id: l.id, name: marker.name, protected: isProtected, action, reason };
  });
  return { entries, deleting, list };
}

/** A manifest that adopts another object by id leaves the object that carried its name's marker behind. */
function warnIfLeftByAdoption(index: PlanIndex, matching: Matching, l: LiveWeightedBackend, marker: OwnerMarker, prune: boolean, problems: PlanProblems): void {
  const byId = matching.matches.get(marker.name);
  if (byId?.desired.id === undefined || !byId.live) return;
  let fate = "run with --prune to delete it, or adopt it under another name";
  if (prune) fate = marker.protect === true ? "it is protected, so it is kept" : "--prune deletes it";
  problems.warnings.push(
    `${weightedBackendAddress(marker.name)}: adopted by id ${byId.live.id}, while ${l.id} carries the marker of ` +
      `"${marker.name}" in stack "${index.stack}"; ${l.id} is an orphan: ${fate}`,
  );
}

/**
 * Takes out of `deleting` every orphan that something staying still references, until nothing changes; returns
 * why each was kept. Who references an id once the plan is applied: live objects (with their manifest's children
 * when a manifest names them) and new objects. An object being deleted references nothing.
 */
function keepReferenced(index: PlanIndex, matching: Matching, resolvedByName: ReadonlyMap<string, Resolved>, deleting: Set<string>): Map<string, string> {
  const keptReason = new Map<string, string>();
  // Only references to objects being deleted matter, and most plans delete nothing: nothing else is recorded.
  if (deleting.size === 0) return keptReason;
  const { referrers, referrerIds } = findReferrers(index, matching, resolvedByName, deleting);
  for (let changed = true; changed; ) {
    changed = false;
    for (const id of [...deleting].sort()) {
      const by = (referrers.get(id) ?? []).filter((label) => {
        const rid = referrerIds.get(label);
        return rid === undefined || !deleting.has(rid);
      });
      if (by.length === 0) continue;
      deleting.delete(id);
      keptReason.set(
        id,
        `kept although --prune is given: ${by.sort().join(", ")} still ${by.length === 1 ? "references" : "reference"} it, so the API would refuse the delete`,
      );
      changed = true;
    }
  }
  return keptReason;
}

/** Child id -> the addresses (or ids) of the objects that reference it; and the live id of each such label. */
function findReferrers(
  index: PlanIndex,
  matching: Matching,
  resolvedByName: ReadonlyMap<string, Resolved>,
  deleting: ReadonlySet<string>,
): { referrers: Map<string, string[]>; referrerIds: Map<string, string> } {
  const referrers = new Map<string, string[]>();
  const referrerIds = new Map<string, string>();
  const addReferrer = (child: string, by: string): void => {
    const list = referrers.get(child);
    if (list) list.push(by);
    else referrers.set(child, [by]);
  };
  for (const l of index.live) {
    const name = matching.claimedBy.get(l.id);
    const children = name !== undefined ? (resolvedByName.get(name)?.backends ?? {}) : l.backends;
    for (const child of Object.keys(children)) {
      if (child === l.id || !deleting.has(child)) continue;
      const label = name !== undefined ? weightedBackendAddress(name) : l.id;
      referrerIds.set(label, l.id);
      addReferrer(child, label);
    }
  }
  for (const d of matching.creates) {
    for (const child of Object.keys(resolvedByName.get(d.name)?.backends ?? {})) {
      if (deleting.has(child)) addReferrer(child, weightedBackendAddress(d.name));
    }
  }
  return { referrers, referrerIds };
}
