/**
 * The weighted backends of an export, in steps: read each live object's metadata, decide how the next plan will
 * match it (owned, adopt, takeover, rename), give it a manifest name, check that a manifest can hold it, and write
 * one file per object with exported children by name. Each step reports what it leaves out to an `ExportLog`. Pure.
 */
import { ownedByName, pinnedRelation } from "../core/match.js";
import { buildMarker, parseLiveMetadata } from "../kinds/weighted-backend.js";
import { ESTIMATE_STACK } from "../manifest/build-desired.js";
import { canonicalJson, compareText, isJsonObject, sortedJson } from "../model/canonical.js";
import { InternalError } from "../model/errors.js";
import { weightedBackendAddress, type JsonValue } from "../model/plan.js";
import { MARKER_KEY, type OwnerMarker } from "../model/state.js";
import { LIMITS, utf8Bytes } from "../model/wire.js";
import { isValidName, NameAllocator, nameFromId, slugify } from "./names.js";
import { renderDocument, renderManifestFile, type ManifestDoc } from "./render.js";
import {
  EXPORT_LAYOUT,
  EXPORT_SCHEMAS,
  schemaRef,
  type ExportedWeightedBackend,
  type ExportFile,
  type ExportInput,
  type ExportLog,
  type ExportMatch,
  type ExportWeightedBackendInput,
} from "./types.js";

/** A live object on its way to a manifest. */
export interface Candidate {
  live: ExportWeightedBackendInput;
  match: ExportMatch;
  /** The user's metadata: the live mapping without the marker key. */
  user: Record<string, JsonValue>;
  marker: OwnerMarker | null;
  protect: boolean;
  /** The manifest name; "" until `assignNames` gives one. */
  name: string;
  comment: string[];
  /** How the metadata is written: a mapping, or JSON text of an object (set by `checkWritable`). */
  form?: "mapping" | "json";
  /** `ignore_changes` of the manifest of that name, written back. */
  ignore?: string[] | undefined;
}

/** The metadata of a live object as the export reads it. */
export interface ExportMetadata {
  user: Record<string, JsonValue>;
  marker: OwnerMarker | null;
  /** The value of the marker key as held, well-formed or not (undefined: no such key). */
  rawMarker: JsonValue | undefined;
}

const describe = (wb: ExportWeightedBackendInput): string => `weighted backend ${wb.id}`;

/** Whether a parsed JSON value has a `__proto__` own key at any depth (JSON.parse keeps it as data; plain assignment does not). */
function hasProtoKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasProtoKey);
  if (value === null || typeof value !== "object") return false;
  return Object.hasOwn(value, "__proto__") || Object.values(value).some(hasProtoKey);
}

function preview(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);
}

/** The user's metadata and owner marker of a live object, or why a manifest cannot carry its metadata. */
export function readExportMetadata(wb: ExportWeightedBackendInput): ExportMetadata | { skip: string } {
  if (wb.metadata.trim() === "") return { user: {}, marker: null, rawMarker: undefined };
  const parsed = parseLiveMetadata(wb.metadata);
  if (parsed.user === null) {
    return {
      skip:
        `its metadata ${preview(wb.metadata)} is text but not JSON of an object, which a manifest cannot hold ` +
        `(metadata is a mapping or JSON text of an object), and adopting it would replace that text with edgeplan's owner marker; ` +
        `store it as a JSON object (or clear it) in the API, then export again`,
    };
  }
  if (hasProtoKey(JSON.parse(wb.metadata))) {
    return {
      skip: 'its metadata has a "__proto__" key, which edgeplan cannot carry through a plan without losing it; rename that key in the API, then export again',
    };
  }
  const rawMarker = isJsonObject(parsed.value) ? parsed.value[MARKER_KEY] : undefined;
  return { user: parsed.user, marker: parsed.marker, rawMarker };
}

/** What `classifyWeightedBackend` needs besides the object (made by `classifyContext`). */
export interface ClassifyContext {
  stack: string;
  takeover: boolean;
  /** The names taken so far. */
  names: NameAllocator;
  /** This stack's objects by marker name, oldest first, as the plan finds them (`ownedByName`). */
  owners: ReadonlyMap<string, ReadonlyArray<{ id: string }>>;
}

/** The context for classifying `live`, every weighted backend the export reads (lease objects left out). */
export function classifyContext(live: readonly ExportWeightedBackendInput[], options: { stack: string; takeover: boolean }): ClassifyContext {
  const byId = [...live].sort((a, b) => compareText(a.id, b.id));
  const owners = ownedByName(byId, (wb) => parseLiveMetadata(wb.metadata).marker, options.stack);
  return { stack: options.stack, takeover: options.takeover, names: new NameAllocator(), owners };
}

/**
 * An object marked by this stack under a valid name: exported under that name when the plan matches it by that name
 * (the oldest object of the marker), else left out as the orphan the plan sees.
 */
function classifyOwned(wb: ExportWeightedBackendInput, meta: ExportMetadata & { marker: OwnerMarker }, ctx: ClassifyContext, log: ExportLog): Candidate | null {
  const { marker } = meta;
  const owner = ctx.owners.get(marker.name)?.[0];
  if (owner !== undefined && owner.id !== wb.id) {
    // The owner was classified first (id order): it holds the name unless it could not be exported.
    const older = ctx.names.has(marker.name)
      ? "an older object, which is exported under that name"
      : `an older object, ${owner.id}, which the plan matches by that name (it is not exported either)`;
    log.skipped.push({
      what: describe(wb),
      reason:
        `it carries the same owner marker ("${marker.name}" of stack "${ctx.stack}") as ${older}; ` +
        `the plan lists this one as an orphan (delete it with --prune once you have checked it)`,
    });
    return null;
  }
  if (!ctx.names.claim(marker.name)) throw new InternalError(`export of ${wb.id}: the name "${marker.name}" was taken before its owner was classified`);
  const protect = marker.protect === true;
  if (canonicalJson(meta.rawMarker) !== canonicalJson(buildMarker(ctx.stack, marker.name, protect))) {
    log.notes.push(`${describe(wb)} ("${marker.name}"): its owner marker holds more than stack, name and protect: true, so the plan shows an update that rewrites it`);
  }
  return { live: wb, match: "owned", user: meta.user, marker, protect, name: marker.name, comment: [] };
}

/**
 * How the next plan will match one live object (owned, rename, takeover, adopt), or null when it is left out (the
 * reason in `log`). What is not exported under its marker's name is pinned by `id:` under a name of the export's
 * (`assignNames`), and the plan's `pinnedRelation` says how it is matched: never the marker's name, which is either
 * not valid or another stack's, so a pinned object of this stack is always a rename. Call in id order.
 */
export function classifyWeightedBackend(wb: ExportWeightedBackendInput, meta: ExportMetadata, ctx: ClassifyContext, log: ExportLog): Candidate | null {
  const { marker } = meta;
  if (marker !== null && marker.stack === ctx.stack && isValidName(marker.name)) return classifyOwned(wb, { ...meta, marker }, ctx, log);
  const relation = pinnedRelation(marker, ctx.stack, ctx.takeover);
  if (relation.kind === "adopt") return adopted(wb, meta, log);
  const held = relation.marker;
  if (relation.kind === "refused") {
    log.skipped.push({
      what: describe(wb),
      reason: `it belongs to stack "${held.stack}" (as "${held.name}"), and edgeplan never changes another stack's objects; pass --takeover to export it pinned by id`,
      stack: held.stack,
    });
    return null;
  }
  const base = { live: wb, user: meta.user, marker: held, protect: held.protect === true, name: "" };
  if (relation.kind === "this-stack") {
    const comment = `Pinned by id: its owner marker names it ${JSON.stringify(held.name)}, which is not a valid name; the next apply renames it.`;
    return { ...base, match: "rename", comment: [comment] };
  }
  const comment = `Taken over by id from stack "${held.stack}" (where it is "${held.name}"): plan and apply need --takeover.`;
  return { ...base, match: "takeover", comment: [comment] };
}

/** An object without an owner marker, pinned by id: the plan adopts it. */
function adopted(wb: ExportWeightedBackendInput, meta: ExportMetadata, log: ExportLog): Candidate {
  if (meta.rawMarker !== undefined) {
    log.notes.push(
      `${describe(wb)}: the "${MARKER_KEY}" key of its metadata is not an owner marker; the manifest leaves it out (the key is reserved) and adopting replaces it with this stack's marker`,
    );
  }
  const comment = "Adopted by id: it carries no owner marker yet; the next apply adds one.";
  return { live: wb, match: "adopt", user: meta.user, marker: null, protect: false, name: "", comment: [comment] };
}

/**
 * Names for the candidates that have none yet (owned ones claimed theirs while classified): another stack's name
 * where it is valid and free, then names derived from the description (or the id), in id order.
 */
export function assignNames(candidates: readonly Candidate[], names: NameAllocator): void {
  for (const c of candidates) {
    if (c.match === "takeover" && c.marker !== null && isValidName(c.marker.name) && names.claim(c.marker.name)) c.name = c.marker.name;
  }
  const unnamed = candidates.filter((c) => c.name === "").sort((a, b) => compareText(a.live.id, b.live.id));
  for (const c of unnamed) c.name = names.allocate(slugify(c.live.description) || nameFromId(c.live.id));
}

/** The manifest document of a candidate, with `backends` as given (children by id or by name). */
export function weightedBackendDoc(c: Candidate, backends: Record<string, number>, form: "mapping" | "json"): ManifestDoc {
  const value: Record<string, JsonValue> = { kind: "WeightedBackend", name: c.name };
  if (c.match !== "owned") value.id = c.live.id;
  if (c.protect) value.protect = true;
  if (c.live.description !== "") value.description = c.live.description;
  if (Object.keys(c.user).length > 0) value.metadata = form === "json" ? canonicalJson(c.user) : sortedJson(c.user);
  value.backends = sortedJson(backends);
  if (c.ignore !== undefined) value.ignore_changes = [...c.ignore];
  return { value, comment: c.comment, sortedKeys: ["metadata", "backends"] };
}

/** The bytes of the metadata once the owner marker is added (of this stack, or of the loader's estimate if longer). */
function markedMetadataBytes(c: Candidate, stack: string): number {
  const withMarker = (s: string): number => utf8Bytes(canonicalJson({ ...c.user, [MARKER_KEY]: buildMarker(s, c.name, c.protect) }));
  return Math.max(withMarker(stack), withMarker(ESTIMATE_STACK));
}

/**
 * Whether a manifest can hold the candidate: its metadata within the API's limit once the marker is added, and a
 * document that reads back the same (metadata as a mapping, else as JSON text of an object, which the loader's
 * nesting guard lets through). Sets `c.form`; returns false with the reason in `log` when it cannot.
 */
export function checkWritable(c: Candidate, stack: string, log: ExportLog): boolean {
  const what = describe(c.live);
  const bytes = markedMetadataBytes(c, stack);
  if (bytes > LIMITS.metadataBytes) {
    log.skipped.push({
      what,
      reason: `its metadata would be ${bytes} bytes with the owner marker, more than the ${LIMITS.metadataBytes} bytes the API accepts; make its metadata smaller in the API, then export again`,
    });
    return false;
  }
  // Children by id here: whether the document can be written does not depend on how children are named.
  for (const form of ["mapping", "json"] as const) {
    const rendered = renderDocument(weightedBackendDoc(c, c.live.backends, form));
    if (!("problem" in rendered)) {
      c.form = form;
      return true;
    }
    if (form === "json") log.skipped.push({ what, reason: `it cannot be written as a manifest that reads back the same: ${rendered.problem}` });
  }
  return false;
}

/**
 * One file per checked candidate, sorted by name, children that are exported too written by name. Throws
 * InternalError when a document that passed `checkWritable` fails to render.
 */
export function weightedBackendFiles(kept: readonly Candidate[]): { files: ExportFile[]; exported: ExportedWeightedBackend[] } {
  const nameById = new Map(kept.map((c) => [c.live.id, c.name]));
  const files: ExportFile[] = [];
  const exported: ExportedWeightedBackend[] = [];
  for (const c of [...kept].sort((a, b) => compareText(a.name, b.name))) {
    const backends: Record<string, number> = {};
    for (const [child, weight] of Object.entries(c.live.backends)) backends[nameById.get(child) ?? child] = weight;
    const rendered = renderDocument(weightedBackendDoc(c, backends, c.form ?? "mapping"));
    if ("problem" in rendered) throw new InternalError(`export of ${c.live.id} failed after its check: ${rendered.problem}`);
    const file = `${EXPORT_LAYOUT.weightedBackends}/${c.name}.yaml`;
    files.push({ path: file, text: renderManifestFile(schemaRef(EXPORT_SCHEMAS.weightedBackend), [rendered.text]) });
    exported.push({ id: c.live.id, name: c.name, match: c.match, file });
  }
  return { files, exported };
}

/**
 * Every live weighted backend that a manifest can hold, classified and named, and in scope by that name. Objects
 * are taken oldest first (id order is creation order), so that the oldest of two same markers wins, as in a plan.
 */
export function exportableWeightedBackends(
  live: readonly ExportWeightedBackendInput[],
  options: { stack: string; takeover: boolean } & Pick<ExportInput, "inScope" | "ignoreChanges">,
  log: ExportLog,
): Candidate[] {
  const ctx = classifyContext(live, options);
  const candidates: Candidate[] = [];
  for (const wb of [...live].sort((a, b) => compareText(a.id, b.id))) {
    const meta = readExportMetadata(wb);
    if ("skip" in meta) {
      log.skipped.push({ what: describe(wb), reason: meta.skip });
      continue;
    }
    const c = classifyWeightedBackend(wb, meta, ctx, log);
    if (c) candidates.push(c);
  }
  assignNames(candidates, ctx.names);
  const inScope = options.inScope ?? (() => true);
  return candidates.filter((c) => {
    if (!inScope(weightedBackendAddress(c.name))) return false;
    c.ignore = options.ignoreChanges?.weightedBackends.get(c.name);
    return checkWritable(c, options.stack, log);
  });
}
