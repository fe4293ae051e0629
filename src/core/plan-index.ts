/**
 * What every phase of `buildPlan` reads: both sides sorted and indexed once (live metadata parsed once), and the
 * collector of the problems and warnings the phases find. Pure.
 */
import { compareText } from "../model/canonical.js";
import { ManifestError, type Diagnostic } from "../model/errors.js";
import type { DesiredState, DesiredWeightedBackend, LiveState, LiveWeightedBackend, OwnerMarker, SourcePos } from "../model/state.js";
import { parseLiveMetadata, type ParsedMetadata } from "../kinds/weighted-backend.js";

export interface PlanIndex {
  /** The stack whose owner markers this plan manages. */
  stack: string;
  /** The manifests' weighted backends by name (then position, so a duplicate name follows its first). */
  desired: DesiredWeightedBackend[];
  desiredNames: ReadonlySet<string>;
  /** Live weighted backends in id order, which is creation order. */
  live: LiveWeightedBackend[];
  liveById: ReadonlyMap<string, LiveWeightedBackend>;
  /** Each live object's metadata, parsed once. */
  parsed: ReadonlyMap<string, ParsedMetadata>;
}

export function indexPlanInput(desired: DesiredState, live: LiveState, stack: string): PlanIndex {
  const desiredWbs = [...desired.weightedBackends].sort((a, b) => compareText(a.name, b.name) || comparePos(a.source, b.source));
  const liveWbs = [...live.weightedBackends].sort((a, b) => compareText(a.id, b.id));
  const liveById = new Map<string, LiveWeightedBackend>();
  const parsed = new Map<string, ParsedMetadata>();
  for (const l of liveWbs) {
    liveById.set(l.id, l);
    parsed.set(l.id, parseLiveMetadata(l.metadata));
  }
  return { stack, desired: desiredWbs, desiredNames: new Set(desiredWbs.map((d) => d.name)), live: liveWbs, liveById, parsed };
}

/** The owner marker of a live object, or null when it carries none (or is not live). */
export function markerOf(index: PlanIndex, id: string): OwnerMarker | null {
  return index.parsed.get(id)?.marker ?? null;
}

/** True when the live object carries the marker of this plan's stack. */
export function ownedByStack(index: PlanIndex, id: string): boolean {
  return markerOf(index, id)?.stack === index.stack;
}

/** Where a field of a manifest was written (the manifest's own position when the field's is unknown). */
export function posOf(d: DesiredWeightedBackend, field: string): SourcePos {
  return d.fieldSources?.[field] ?? d.source;
}

export function comparePos(a: SourcePos, b: SourcePos): number {
  return compareText(a.file, b.file) || a.line - b.line || a.col - b.col;
}

/** Errors (every one found, thrown together) and warnings (kept in the plan) of the phases. */
export class PlanProblems {
  readonly warnings: string[] = [];
  private readonly diagnostics: Diagnostic[] = [];

  error(pos: SourcePos, message: string): void {
    this.diagnostics.push({ severity: "error", pos, message });
  }

  /** Takes in what another collector found (a part of the plan built apart). */
  absorb(other: PlanProblems): void {
    this.diagnostics.push(...other.diagnostics);
    this.warnings.push(...other.warnings);
  }

  /** Throws a ManifestError with every error, sorted by position then text, when there is any. */
  throwIfErrors(): void {
    if (this.diagnostics.length === 0) return;
    const sorted = [...this.diagnostics].sort((a, b) => comparePos(a.pos, b.pos) || compareText(a.message, b.message));
    throw new ManifestError(sorted);
  }
}
