/**
 * Renames: an orphan of this stack with the same spec (description, user metadata, children) as a manifest that
 * matched nothing keeps its id, and every reference to it, instead of being deleted while a copy is created.
 * Repeated until nothing changes, because a rename gives an id to a name that another object's children use. Pure.
 */
import { canonicalJson, sortedJson } from "../model/canonical.js";
import type { LiveWeightedBackend, OwnerMarker } from "../model/state.js";
import { sortedBackends, type ParsedMetadata } from "../kinds/weighted-backend.js";
import { resolveChildren } from "./children.js";
import type { Matching } from "./match.js";
import { markerOf, ownedByStack, type PlanIndex } from "./plan-index.js";

/**
 * Moves every create that an orphan can serve into `matching` as a rename (and its id into `nameToId`); the
 * creates left are matched as creates.
 */
export function findRenames(index: PlanIndex, matching: Matching, nameToId: Map<string, string>): void {
  const orphansBySpec = orphansBySpecKey(index, matching);
  const { creates } = matching;
  let progress = orphansBySpec.size > 0;
  while (progress && creates.length > 0) {
    progress = false;
    for (const d of [...creates]) {
      const resolved = resolveChildren(d, nameToId, index.desiredNames);
      if (resolved.pending.size > 0) continue;
      const orphan = orphansBySpec.get(specKey(d.description, sortedJson(d.metadata), resolved.backends))?.shift();
      if (!orphan) continue;
      const previous = markerOf(index, orphan.id) as OwnerMarker;
      matching.matches.set(d.name, {
        desired: d,
        live: orphan,
        action: "rename",
        previous,
        notes: [
          `renamed from "${previous.name}": ${orphan.id} has the same description, metadata and children, so the plan keeps it (and every reference to it) and rewrites its marker instead of deleting and creating`,
        ],
      });
      matching.claimedBy.set(orphan.id, d.name);
      nameToId.set(d.name, orphan.id);
      creates.splice(creates.indexOf(d), 1);
      progress = true;
    }
  }
  for (const d of creates) matching.matches.set(d.name, { desired: d, live: null, action: "create", previous: null, notes: [] });
}

/** Live objects of this stack that no manifest claims, oldest first. */
export function unclaimedOwned(index: PlanIndex, matching: Matching): LiveWeightedBackend[] {
  return index.live.filter((l) => ownedByStack(index, l.id) && !matching.claimedBy.has(l.id));
}

function specKey(description: string, user: unknown, backends: Readonly<Record<string, number>>): string {
  return canonicalJson([description, user, sortedBackends(backends)]);
}

/** Orphans by spec, oldest first, so a rename is found without a scan. */
function orphansBySpecKey(index: PlanIndex, matching: Matching): Map<string, LiveWeightedBackend[]> {
  const bySpec = new Map<string, LiveWeightedBackend[]>();
  for (const l of unclaimedOwned(index, matching)) {
    const key = specKey(l.description, (index.parsed.get(l.id) as ParsedMetadata).user, l.backends);
    const list = bySpec.get(key);
    if (list) list.push(l);
    else bySpec.set(key, [l]);
  }
  return bySpec;
}
