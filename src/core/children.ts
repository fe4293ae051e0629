/**
 * The children of the manifests' weighted backends: names resolved to ids where the id is known (a name created by
 * the same plan stays a name until apply), and the checks that need the whole plan: unknown names, two keys that
 * are the same object, and children that lead back to their parent through an id. Pure.
 */
import { ID_PREFIX } from "../model/wire.js";
import type { DesiredWeightedBackend } from "../model/state.js";
import { sortedBackends } from "../kinds/weighted-backend.js";
import { findIdCycles } from "./graph.js";
import type { Matching } from "./match.js";
import { posOf, type PlanIndex, type PlanProblems } from "./plan-index.js";

/** Children of a desired object with names resolved to ids where the id is known. */
export interface Resolved {
  /** Sorted by key. */
  backends: Record<string, number>;
  /** Keys of `backends` that are names of objects this plan creates. */
  pending: ReadonlySet<string>;
}

const NO_PENDING: ReadonlySet<string> = new Set<string>();

/** The ids of the manifests matched to live objects, by name. */
export function matchedIds(matching: Matching): Map<string, string> {
  const nameToId = new Map<string, string>();
  for (const m of matching.matches.values()) if (m.live) nameToId.set(m.desired.name, m.live.id);
  return nameToId;
}

export function resolveChildren(d: DesiredWeightedBackend, nameToId: ReadonlyMap<string, string>, desiredNames: ReadonlySet<string>): Resolved {
  const backends: Record<string, number> = {};
  // Most objects name no object of the plan: they share one empty set instead of each making its own.
  let pending: Set<string> | undefined;
  let renamed = false;
  for (const key of Object.keys(d.backends).sort()) {
    const weight = d.backends[key] as number;
    const id = key.includes("_") ? undefined : nameToId.get(key);
    if (id !== undefined) {
      backends[id] = weight;
      renamed = true;
    } else {
      backends[key] = weight;
      if (!key.includes("_") && desiredNames.has(key)) {
        pending ??= new Set<string>();
        pending.add(key);
      }
    }
  }
  // Keys went in sorted; only a name replaced by its id can be out of place.
  return { backends: renamed ? sortedBackends(backends) : backends, pending: pending ?? NO_PENDING };
}

/** Resolves the children of every matched manifest, reporting the problems that no order of writes could solve. */
export function resolveAllChildren(index: PlanIndex, matching: Matching, nameToId: ReadonlyMap<string, string>, problems: PlanProblems): Map<string, Resolved> {
  const resolvedByName = new Map<string, Resolved>();
  for (const d of index.desired) {
    if (!matching.matches.has(d.name)) continue; // an error was reported for it
    checkChildKeys(d, index.desiredNames, nameToId, problems);
    resolvedByName.set(d.name, resolveChildren(d, nameToId, index.desiredNames));
  }
  reportIdCycles(index, matching, resolvedByName, nameToId, problems);
  return resolvedByName;
}

/** Names that no manifest declares, and two keys that are the same object. Children given by id alone are distinct. */
function checkChildKeys(d: DesiredWeightedBackend, desiredNames: ReadonlySet<string>, nameToId: ReadonlyMap<string, string>, problems: PlanProblems): void {
  const keys = Object.keys(d.backends);
  if (!keys.some((k) => !k.includes("_"))) return;
  const seen = new Map<string, string>();
  for (const key of keys.sort()) {
    if (!key.includes("_") && !desiredNames.has(key)) {
      problems.error(posOf(d, `backends.${key}`), `weighted backend "${d.name}": child "${key}" is neither a backend id nor the name of a weighted backend in the manifests`);
    }
    const target = key.includes("_") ? key : (nameToId.get(key) ?? key);
    const first = seen.get(target);
    if (first !== undefined) {
      problems.error(posOf(d, `backends.${key}`), `weighted backend "${d.name}": children "${first}" and "${key}" are the same object (${target}); keep one of them`);
    } else seen.set(target, key);
  }
}

/**
 * Children that lead back to their parent through an id (names alone are checked by the loader): the API refuses
 * such a cycle (ERR_NGROK_6524), and no order of writes could reach it. It needs a manifest whose children name a
 * weighted backend by id; usually none does.
 */
function reportIdCycles(
  index: PlanIndex,
  matching: Matching,
  resolvedByName: ReadonlyMap<string, Resolved>,
  nameToId: ReadonlyMap<string, string>,
  problems: PlanProblems,
): void {
  const prefix = `${ID_PREFIX.weightedBackend}_`;
  if (!index.desired.some((d) => Object.keys(d.backends).some((key) => key.startsWith(prefix)))) return;
  const unmanaged = new Map(index.live.filter((l) => !matching.claimedBy.has(l.id)).map((l) => [l.id, l.backends]));
  const desired = index.desired.filter((d) => resolvedByName.has(d.name));
  for (const { d, key, path } of findIdCycles(desired, nameToId, index.desiredNames, unmanaged)) {
    problems.error(
      posOf(d, `backends.${key}`),
      `weighted backend "${d.name}": its children lead back to it (${path.join(" -> ")}); the API refuses cycles, remove one of these references`,
    );
  }
}
