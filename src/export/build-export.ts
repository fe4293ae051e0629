/**
 * `buildExport`: live objects to the manifest files `edgeplan export` writes, so that `plan` on them right after
 * shows no change but adoptions (docs/cli.md, "Plan and apply"). Owned weighted backends keep their marker's name;
 * others get a name from their description (or id) and `id:` pinned; children that are exported are written by
 * name. Routes get an EdgeRoute document with every client-settable field of each module that is set, the SAML
 * IdP metadata in a file of its own. What cannot be written faithfully is skipped with the reason. Pure.
 *
 * The steps live beside it: `weighted-backends.ts` (classify, name, check, write) and `routes.ts`.
 */
import { isLeaseObject } from "../model/lease.js";
import { parseInventory } from "../model/inventory.js";
import { compareText } from "../model/canonical.js";
import { renderSchemaFiles } from "../model/schemas.js";
import { routeFiles } from "./routes.js";
import { EXPORT_LAYOUT, EXPORT_SCHEMAS, type ExportFile, type ExportInput, type ExportLog, type ExportResult } from "./types.js";
import { exportableWeightedBackends, weightedBackendFiles } from "./weighted-backends.js";

export * from "./types.js";

/** The JSON Schema files the exported manifests name. */
function schemaFiles(): ExportFile[] {
  const wanted: readonly string[] = Object.values(EXPORT_SCHEMAS);
  return renderSchemaFiles()
    .filter((s) => wanted.includes(s.file))
    .map((s) => ({ path: `${EXPORT_LAYOUT.schemas}/${s.file}`, text: s.text }));
}

/**
 * Builds every file of an export. Deterministic: the same live objects give the same files, byte for byte,
 * whatever order they were read in. Throws InternalError only when a document it already checked fails to render.
 */
export function buildExport(input: ExportInput): ExportResult {
  const log: ExportLog = { skipped: [], notes: [] };
  // The scope (`inScope`) and the `ignore_changes` to write back reach both kinds of document. Lease objects
  // (src/model/lease.ts) and inventory objects (src/model/inventory.ts) are edgeplan's own bookkeeping: never exported.
  const recordedBy = new Map<string, string>();
  const objects = input.weightedBackends.filter((wb) => {
    const inventory = parseInventory(wb);
    for (const address of Object.keys(inventory?.entries ?? {})) recordedBy.set(address, inventory?.stack as string);
    return inventory === null && !isLeaseObject(wb);
  });
  const wbs = weightedBackendFiles(exportableWeightedBackends(objects, input, log));
  const routes = routeFiles(input.routes, log, { ...input, recordedBy });
  const files = [...wbs.files, ...routes.files];
  // Schemas only beside manifests: an export with nothing in it writes nothing.
  if (files.length > 0) files.push(...schemaFiles());
  return {
    files: files.sort((a, b) => compareText(a.path, b.path)),
    weightedBackends: wbs.exported,
    routes: routes.exported,
    skipped: log.skipped.sort((a, b) => compareText(a.what, b.what)),
    notes: log.notes.sort(),
  };
}
