/**
 * The first phase of a plan: each manifest's weighted backend matched to the live object it manages, first by
 * `id:` (adopt, take over, rename or update), then by the owner marker of this stack (the oldest object carrying
 * the marker of its name). What matches nothing is a create, unless a rename finds it an orphan (`renames.ts`).
 * Pure.
 */
import type { WeightedBackendAction } from "../model/plan.js";
import { weightedBackendAddress } from "../model/plan.js";
import { InternalError } from "../model/errors.js";
import { formatPos, type DesiredWeightedBackend, type LiveWeightedBackend, type OwnerMarker } from "../model/state.js";
import { markerOf, posOf, type PlanIndex, type PlanProblems } from "./plan-index.js";

export interface Match {
  desired: DesiredWeightedBackend;
  live: LiveWeightedBackend | null;
  action: Exclude<WeightedBackendAction, "delete">;
  previous: OwnerMarker | null;
  notes: string[];
}

export interface Matching {
  /** By manifest name. */
  matches: Map<string, Match>;
  /** Live id -> the name of the manifest that manages it. */
  claimedBy: Map<string, string>;
  /** Manifests that match no live object (yet): creates, unless a rename claims them. */
  creates: DesiredWeightedBackend[];
}

/**
 * How a manifest that pins a live object by `id:` stands to it, from the object's owner marker alone: `adopt` (no
 * marker), `takeover` (another stack's, with --takeover), `refused` (another stack's, without), or `this-stack`
 * (this stack's: an update under the marker's name, a rename under another). `export` decides with it too, so that
 * what it pins by id is matched by the next plan as it says.
 */
export type PinnedRelation = { kind: "adopt" } | { kind: "takeover" | "refused" | "this-stack"; marker: OwnerMarker };

/** See `PinnedRelation`. */
export function pinnedRelation(marker: OwnerMarker | null, stack: string, takeover: boolean): PinnedRelation {
  if (marker === null) return { kind: "adopt" };
  if (marker.stack !== stack) return { kind: takeover ? "takeover" : "refused", marker };
  return { kind: "this-stack", marker };
}

/**
 * The objects of `live` (in id order) that carry the marker of `stack`, by the marker's name, oldest first: a
 * manifest of that name without `id:` manages the first one not pinned by another manifest; the others are orphans.
 * `export` decides with it too, so that the object it writes under a marker's name is the one the plan matches.
 */
export function ownedByName<L extends { id: string }>(live: readonly L[], markerOf: (l: L) => OwnerMarker | null, stack: string): Map<string, L[]> {
  const owned = new Map<string, L[]>();
  for (const l of live) {
    const marker = markerOf(l);
    if (marker?.stack !== stack) continue;
    const list = owned.get(marker.name);
    if (list) list.push(l);
    else owned.set(marker.name, [l]);
  }
  return owned;
}

/**
 * Matches every manifest it can; reports unusable `id:`s to `problems`. The manifests' names and adopted ids are
 * unique: the loader reports a repeat (src/manifest/build-desired.ts), and a plan is never built from manifests
 * with an error.
 */
export function matchWeightedBackends(index: PlanIndex, takeover: boolean, problems: PlanProblems): Matching {
  assertUniqueNames(index);
  const matching: Matching = { matches: new Map(), claimedBy: new Map(), creates: [] };
  for (const d of index.desired) {
    if (d.id === undefined) continue;
    const match = matchById(index, d, matching, takeover, problems);
    if (match === null) continue;
    matching.matches.set(d.name, match);
    matching.claimedBy.set(match.live?.id as string, d.name);
  }
  matchByMarker(index, matching, problems);
  return matching;
}

function assertUniqueNames(index: PlanIndex): void {
  for (let i = 1; i < index.desired.length; i++) {
    const [prev, cur] = [index.desired[i - 1] as DesiredWeightedBackend, index.desired[i] as DesiredWeightedBackend];
    if (prev.name === cur.name) {
      throw new InternalError(
        `plan: weighted backend "${cur.name}" is declared at ${formatPos(prev.source)} and ${formatPos(cur.source)}; the loader reports a name declared twice`,
      );
    }
  }
}

function matchById(index: PlanIndex, d: DesiredWeightedBackend, matching: Matching, takeover: boolean, problems: PlanProblems): Match | null {
  const l = index.liveById.get(d.id as string);
  if (!l) {
    problems.error(posOf(d, "id"), `weighted backend "${d.name}": id ${d.id} does not exist in this account; correct the id, or remove \`id:\` to create a new object`);
    return null;
  }
  const other = matching.claimedBy.get(l.id);
  if (other !== undefined) {
    throw new InternalError(`plan: id ${d.id} is adopted by "${other}" and "${d.name}"; the loader reports an id adopted twice`);
  }
  const relation = pinnedRelation(markerOf(index, l.id), index.stack, takeover);
  if (relation.kind === "adopt") {
    return { desired: d, live: l, action: "adopt", previous: null, notes: [`adopted by id: ${l.id} carries no owner marker, so the plan adds one`] };
  }
  const { marker } = relation;
  if (relation.kind === "refused") {
    problems.error(
      posOf(d, "id"),
      `weighted backend "${d.name}": ${l.id} belongs to stack "${marker.stack}" (as "${marker.name}"); edgeplan never changes another stack's objects: pass --takeover to take it over, or remove \`id:\``,
    );
    return null;
  }
  if (relation.kind === "takeover") {
    const notes = [`taken over from stack "${marker.stack}" (where it is "${marker.name}") because --takeover is given`];
    return { desired: d, live: l, action: "takeover", previous: marker, notes };
  }
  if (marker.name !== d.name) {
    const notes = [`adopted by id: ${l.id} is "${marker.name}" of this stack; the plan renames it to "${d.name}"`];
    return { desired: d, live: l, action: "rename", previous: marker, notes };
  }
  return { desired: d, live: l, action: "update", previous: marker, notes: [] };
}

/** Manifests without `id:` take the oldest unclaimed object carrying their name's marker; the others are creates. */
function matchByMarker(index: PlanIndex, matching: Matching, problems: PlanProblems): void {
  const owned = ownedByName(index.live, (l) => markerOf(index, l.id), index.stack);
  for (const d of index.desired) {
    if (d.id !== undefined || matching.matches.has(d.name)) continue;
    const candidates = (owned.get(d.name) ?? []).filter((l) => !matching.claimedBy.has(l.id));
    const first = candidates[0];
    if (!first) {
      matching.creates.push(d);
      continue;
    }
    matching.matches.set(d.name, { desired: d, live: first, action: "update", previous: markerOf(index, first.id), notes: [] });
    matching.claimedBy.set(first.id, d.name);
    if (candidates.length > 1) {
      const rest = candidates.slice(1).map((l) => l.id);
      problems.warnings.push(
        `${weightedBackendAddress(d.name)}: ${candidates.length} objects carry the marker of "${d.name}" in stack "${index.stack}"; ` +
          `the oldest, ${first.id}, is the match, and ${rest.join(", ")} ${rest.length === 1 ? "is an orphan" : "are orphans"}`,
      );
    }
  }
}

/**
 * A create whose name another stack's object carries is never planned silently: names are per stack, so without
 * --takeover the create goes ahead with a note naming that object and the `id:` line that would take it over; with
 * --takeover, which moves only what `id:` names, the manifest is an error (the user asked to take objects over, and
 * a second object of the same name is seldom what they meant), as Terraform refuses a resource that already exists
 * and says to import it. Runs after the renames, on the creates left.
 */
export function checkNamesOfOtherStacks(index: PlanIndex, matching: Matching, takeover: boolean, problems: PlanProblems): void {
  const creates = [...matching.matches.values()].filter((m) => m.action === "create");
  if (creates.length === 0) return;
  const elsewhere = namedElsewhere(index);
  for (const m of creates) {
    const found = elsewhere.get(m.desired.name);
    if (found === undefined) continue;
    const objects = found.map((f) => `${f.id} of stack "${f.stack}"`).join(", ");
    const idLines = found.map((f) => `\`id: ${f.id}\``).join(" or ");
    const it = found.length === 1 ? "it" : "one";
    if (takeover) {
      problems.error(
        posOf(m.desired, "name"),
        `weighted backend "${m.desired.name}": ${objects} ${found.length === 1 ? "has" : "have"} this name, and --takeover takes over only what \`id:\` names: ` +
          `add ${idLines} to this manifest to take ${it} over, or plan without --takeover to create a second "${m.desired.name}" in stack "${index.stack}"`,
      );
    } else {
      m.notes.push(
        `${objects} also ${found.length === 1 ? "has" : "have"} this name (names are per stack, so this creates another); to take ${it} over instead, add ${idLines} and plan with --takeover`,
      );
    }
  }
}

/** The objects of other stacks by their marker's name, in id order. */
function namedElsewhere(index: PlanIndex): Map<string, Array<{ id: string; stack: string }>> {
  const named = new Map<string, Array<{ id: string; stack: string }>>();
  for (const l of index.live) {
    const marker = markerOf(index, l.id);
    if (marker === null || marker.stack === index.stack) continue;
    const list = named.get(marker.name) ?? [];
    list.push({ id: l.id, stack: marker.stack });
    named.set(marker.name, list);
  }
  return named;
}
