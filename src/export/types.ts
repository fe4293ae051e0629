/** The input, the result and the layout of an export, shared by its steps. Pure. */
import type { CircuitBreakerModule, SamlModule } from "../model/wire.js";

/** Folders and files of the export, relative to the out dir (always `/`-separated). */
export const EXPORT_LAYOUT = {
  weightedBackends: "weighted-backends",
  routes: "routes",
  /**
   * IdP metadata files, beside the route manifests (`routes/idp/`), so that `idp_metadata_file: idp/<route>.xml`
   * stays inside the manifest root even when routes/ alone is loaded.
   */
  idp: "idp",
  schemas: "schemas",
} as const;

/** The JSON Schema files an export names in its manifests (and writes under `EXPORT_LAYOUT.schemas`). */
export const EXPORT_SCHEMAS = {
  weightedBackend: "weighted-backend.schema.json",
  route: "edge-route.schema.json",
} as const;

/** A live weighted backend as the API answers it (only the fields the export reads). */
export interface ExportWeightedBackendInput {
  id: string;
  description: string;
  metadata: string;
  backends: Record<string, number>;
}

/** A live route with the modules the API holds (null: not set). */
export interface ExportRouteInput {
  edge: string;
  route: string;
  saml: SamlModule | null;
  circuit_breaker: CircuitBreakerModule | null;
}

export interface ExportInput {
  /** The stack whose owner markers make an object "owned". */
  stack: string;
  /** Export objects of other stacks too, pinned by id (the plan then needs --takeover). */
  takeover: boolean;
  weightedBackends: readonly ExportWeightedBackendInput[];
  routes: readonly ExportRouteInput[];
  /**
   * `ignore_changes` of the manifests the export read, written back into the documents it writes: by weighted
   * backend name, and by route (`EDGE/ROUTE`).
   */
  ignoreChanges?: ExportIgnoreChanges;
  /** Whether an address is exported (`--target`, `--exclude`); everything when absent. */
  inScope?: (address: string) => boolean;
}

/** The `ignore_changes` lists an export writes back. */
export interface ExportIgnoreChanges {
  weightedBackends: ReadonlyMap<string, string[]>;
  routes: ReadonlyMap<string, string[]>;
}

/** How the next plan will match an exported weighted backend. */
export type ExportMatch = "owned" | "adopt" | "takeover" | "rename";

export interface ExportedWeightedBackend {
  id: string;
  name: string;
  match: ExportMatch;
  file: string;
}

export interface ExportedRoute {
  edge: string;
  route: string;
  modules: Array<"saml" | "circuit_breaker">;
  file: string;
}

export interface ExportFile {
  /** Relative to the out dir, `/`-separated. */
  path: string;
  /** Written as UTF-8, byte for byte. */
  text: string;
}

/** Something left out of the export, with a complete sentence saying why and what to do. */
export interface ExportSkip {
  what: string;
  reason: string;
  /** The other stack that owns it, when that is why it is left out (such skips are counted per stack, not listed). */
  stack?: string;
}

/** What the steps of an export report besides their files: what they left out, and notes for a person. */
export interface ExportLog {
  skipped: ExportSkip[];
  notes: string[];
}

export interface ExportResult {
  /** Sorted by path. Empty when there is nothing to export. */
  files: ExportFile[];
  /** Sorted by name. */
  weightedBackends: ExportedWeightedBackend[];
  /** Sorted by edge, then route. */
  routes: ExportedRoute[];
  /** What was left out, each with a complete sentence saying why and what to do. */
  skipped: ExportSkip[];
  /** Other things a person should know about what was written (one sentence each). */
  notes: string[];
}

/**
 * The line that marks a manifest export wrote: an export into a folder that holds earlier exports overwrites only
 * files that carry it (or that it refers to), unless `--force`. Removing it keeps a file from being overwritten.
 */
export const EXPORT_HEADER = "# Written by edgeplan export: a new export into this folder replaces this file; remove this line to keep it.";

/** The `$schema` reference of a manifest file one folder below the out dir. */
export function schemaRef(file: string): string {
  return `../${EXPORT_LAYOUT.schemas}/${file}`;
}
