/**
 * `ignore_changes` in the plan: before a kind builds the change of an object that exists live, the fields its
 * manifest ignores are taken from the live side (src/kinds/ignore-changes.ts), so they never show as a change; each
 * one that differed is kept as an `IgnoredDifference` of the plan and, when the object changes anyway, a note of its
 * change (`ignored: description differs`). A create sends the manifest's values: ignored fields are set on create.
 * Pure.
 */
import type { Change, IgnoredDifference } from "../model/plan.js";
import { moduleAddress, weightedBackendAddress } from "../model/plan.js";
import { formatPos, type ModuleIntent, type DesiredEdgeRoute, type DesiredWeightedBackend, type LiveRoute, type LiveWeightedBackend } from "../model/state.js";
import { applyModuleIgnore, applyWeightedBackendIgnore } from "../kinds/ignore-changes.js";
import { normaliseModuleSettings, type ModuleKindSpec } from "../kinds/module.js";
import type { ParsedMetadata } from "../kinds/weighted-backend.js";
import type { Resolved } from "./children.js";

/** The differences a plan leaves alone, collected while the changes are built. */
export class IgnoredCollector {
  private readonly list: IgnoredDifference[] = [];

  add(address: string, source: string | null, paths: readonly string[]): void {
    for (const path of paths) this.list.push({ address, path, source });
  }

  /** Takes in what another collector found (a part of the plan built apart). */
  absorb(other: IgnoredCollector): void {
    this.list.push(...other.list);
  }

  /** Adds a note per ignored field of the change's object to the change (when there is one). */
  noteOn(change: Change | null, paths: readonly string[]): void {
    if (change) for (const path of paths) change.notes.push(`ignored: ${path} differs`);
  }

  /** Sorted by address, then path; only those `keep` says yes to (the scope). */
  sorted(keep: (address: string) => boolean): IgnoredDifference[] {
    return this.list.filter((i) => keep(i.address)).sort((a, b) => (a.address === b.address ? (a.path < b.path ? -1 : 1) : a.address < b.address ? -1 : 1));
  }
}

/**
 * The manifest of a live weighted backend with its ignored fields taken from the live object, its children
 * likewise, and the ignored fields that differ. Without `ignore_changes`, or for a create, it is returned as it is.
 */
export function ignoreWeightedBackendFields(
  d: DesiredWeightedBackend,
  live: LiveWeightedBackend | null,
  parsedLive: ParsedMetadata | undefined,
  resolved: Resolved,
  nameToId: ReadonlyMap<string, string>,
): { desired: DesiredWeightedBackend; resolved: Resolved; ignored: string[] } {
  if (live === null || d.ignoreChanges === undefined) return { desired: d, resolved, ignored: [] };
  const { value, ignored } = applyWeightedBackendIgnore(
    { description: d.description, metadata: d.metadata, backends: resolved.backends },
    { description: live.description, metadata: parsedLive?.user ?? {}, backends: live.backends },
    d.ignoreChanges,
    (child) => (child.includes("_") ? child : (nameToId.get(child) ?? child)),
  );
  const backends: Record<string, number> = {};
  for (const key of Object.keys(value.backends).sort()) backends[key] = value.backends[key] as number;
  const pending = new Set([...resolved.pending].filter((name) => Object.hasOwn(backends, name)));
  return { desired: { ...d, description: value.description, metadata: value.metadata }, resolved: { backends, pending }, ignored };
}

/** The address of a manifest's weighted backend, and where it is declared: what an ignored difference names. */
export function weightedBackendOrigin(d: DesiredWeightedBackend): [string, string] {
  return [weightedBackendAddress(d.name), formatPos(d.source)];
}

/**
 * The intent of one module of a route with its ignored fields taken from the live module (when both are set), and
 * the ignored fields that differ; recorded in `collector` under the module's address.
 */
export function ignoreModuleFields(
  spec: ModuleKindSpec,
  r: DesiredEdgeRoute,
  lr: LiveRoute,
  collector: IgnoredCollector,
): { intent: ModuleIntent<object>; ignored: string[] } {
  const intent = r[spec.kind];
  const live = lr[spec.kind];
  if (r.ignoreChanges === undefined || intent.state !== "present" || live === null) return { intent, ignored: [] };
  const { settings, ignored } = applyModuleIgnore(spec.kind, intent.settings, normaliseModuleSettings(spec, live), r.ignoreChanges);
  collector.add(moduleAddress(r.edge, r.route, spec.kind), formatPos(intent.source), ignored);
  return { intent: { ...intent, settings }, ignored };
}
