/**
 * Validated manifest documents to the normalised DesiredState (API defaults filled, metadata parsed, module intents
 * spelled out), and the rules that need several fields or several objects: duplicates, references, cycles, byte
 * limits, traffic. Every problem is returned at once, errors and warnings together. Pure.
 */
import { canonicalJson, isJsonObject as isPlainObject } from "../model/canonical.js";
import type { Diagnostic } from "../model/errors.js";
import type { EdgeRouteManifest, SamlManifest, WeightedBackendManifest } from "../model/manifest-schema.js";
import { ABSENT, WeightedBackendManifestSchema } from "../model/manifest-schema.js";
import { formatPos, MARKER_KEY, type DesiredEdgeRoute, type DesiredState, type DesiredWeightedBackend, type ModuleIntent, type SourcePos } from "../model/state.js";
import { fieldsOf, LIMITS, utf8Bytes, type CircuitBreakerSettings, type SamlSettings } from "../model/wire.js";
import { CIRCUIT_BREAKER } from "../kinds/circuit-breaker.js";
import { normaliseModuleSettings } from "../kinds/module.js";
import { buildMarker, buildMetadata, hasTraffic } from "../kinds/weighted-backend.js";
import { SAML } from "../kinds/saml.js";
import { checkModuleIgnore, checkWeightedBackendIgnore } from "../kinds/ignore-changes.js";
import { findCycles } from "../core/graph.js";
import { protoKeyPaths, type CheckedDocument } from "./check-document.js";
import type { CheckedTexts } from "./check-text.js";
import { Pinner } from "./yaml-source.js";
import { normaliseRollout } from "./rollout.js";
import { didYouMean } from "../model/suggest.js";

/** The stack used to estimate the size of the owner marker before the real stack is known (plan time). */
export const ESTIMATE_STACK = "default";

/** The fields of a WeightedBackend manifest whose positions a change may point at (all but apiVersion and kind). */
const WB_MANIFEST_FIELDS = fieldsOf(WeightedBackendManifestSchema).filter((f) => f !== "apiVersion" && f !== "kind");

type WeightedBackendDoc = CheckedDocument & { kind: "WeightedBackend" };
type EdgeRouteDoc = CheckedDocument & { kind: "EdgeRoute" };

/** IdP metadata of one SAML module, as read: the text, and the file it came from (display path) if any. */
export interface SamlSource {
  text: string;
  file?: string;
}

export interface BuildInput extends Pick<CheckedTexts, "documents" | "declaredNames" | "references"> {
  /** IdP metadata per EdgeRoute document whose saml module names exactly one source; undefined when it could not be used (reported). */
  samlSources: Map<CheckedDocument, SamlSource | undefined>;
}

/** Where a SAML module's IdP metadata comes from, as written. */
export function samlSourceKind(saml: SamlManifest): "inline" | "file" | "both" | "none" {
  const inline = saml.idp_metadata !== undefined;
  const file = saml.idp_metadata_file !== undefined;
  return inline && file ? "both" : inline ? "inline" : file ? "file" : "none";
}

/** Path (dotted) of the first value JSON cannot carry (a non-finite number), or undefined. */
function nonJsonPath(value: unknown, path: string): string | undefined {
  if (typeof value === "number") return Number.isFinite(value) ? undefined : path;
  if (!Array.isArray(value) && !isPlainObject(value)) return undefined;
  for (const [k, v] of Object.entries(value)) {
    const p = nonJsonPath(v, Array.isArray(value) ? `${path}[${k}]` : `${path}.${k}`);
    if (p) return p;
  }
  return undefined;
}

class Collector {
  readonly diagnostics: Diagnostic[] = [];
  /** Set while a partial document is checked: its warnings would be about the values taken out ("left out", "no children"). */
  quiet = false;
  /** Records an error; false, for `ok = out.error(...)`. */
  error(pos: SourcePos, message: string): false {
    this.diagnostics.push({ severity: "error", pos, message });
    return false;
  }
  warning(pos: SourcePos, message: string): void {
    if (!this.quiet) this.diagnostics.push({ severity: "warning", pos, message });
  }
}

/** The metadata as written, as a mapping (JSON text parsed), or why the text cannot be one. */
function writtenMetadata(written: WeightedBackendManifest["metadata"]): Record<string, unknown> | string {
  if (written === undefined || (typeof written === "string" && written.trim() === "")) return {};
  if (typeof written !== "string") return written;
  let parsed: unknown;
  try {
    parsed = JSON.parse(written);
  } catch {
    return "metadata is text but not JSON; write a mapping, or JSON text of an object";
  }
  return isPlainObject(parsed) ? parsed : "metadata is JSON text but not of an object; write a mapping, or JSON text of an object";
}

/** The user's metadata as a mapping, or undefined after reporting why it cannot be one or is too large with the owner marker. */
function normaliseMetadata(v: WeightedBackendManifest, pin: Pinner, out: Collector): Record<string, unknown> | undefined {
  const written = v.metadata;
  const meta = writtenMetadata(written);
  if (typeof meta === "string") {
    out.error(pin.value(["metadata"]), meta);
    return undefined;
  }
  let ok = true;
  if (Object.hasOwn(meta, MARKER_KEY)) {
    const at = typeof written === "string" ? pin.value(["metadata"]) : pin.key(["metadata", MARKER_KEY]);
    ok = out.error(at, `metadata.${MARKER_KEY}: the key ${MARKER_KEY} is reserved for edgeplan's owner marker; rename it`);
  }
  if (typeof written === "string" && protoKeyPaths(meta).length > 0) {
    ok = out.error(pin.value(["metadata"]), "metadata: the key __proto__ cannot be used; rename it");
  }
  const bad = nonJsonPath(meta, "metadata");
  if (bad) ok = out.error(pin.value(["metadata"]), `${bad}: infinity and NaN cannot be stored as JSON; use a finite number or text`);
  if (!ok) return undefined;
  const bytes = utf8Bytes(canonicalJson(buildMetadata(meta, buildMarker(ESTIMATE_STACK, v.name, v.protect === true))));
  if (bytes <= LIMITS.metadataBytes) return meta;
  const over = `more than the ${LIMITS.metadataBytes} bytes the API accepts; make it smaller`;
  out.error(pin.value(["metadata"]), `metadata is ${bytes} bytes once edgeplan's owner marker is added, ${over}`);
  return undefined;
}

function normaliseWeightedBackend(doc: WeightedBackendDoc, out: Collector): DesiredWeightedBackend | undefined {
  const v = doc.value;
  const pin = new Pinner(doc.src);
  let ok = true;
  const description = v.description ?? "";
  const descriptionBytes = utf8Bytes(description);
  if (descriptionBytes > LIMITS.descriptionBytes) {
    ok = out.error(pin.value(["description"]), `description is ${descriptionBytes} bytes, more than the ${LIMITS.descriptionBytes} bytes the API accepts; shorten it`);
  }
  const metadata = normaliseMetadata(v, pin, out);
  if (metadata === undefined) ok = false;
  const children = Object.keys(v.backends);
  if (children.length > LIMITS.childrenPerWeightedBackend) {
    const many = `backends has ${children.length} children, more than the ${LIMITS.childrenPerWeightedBackend} a weighted backend may have`;
    ok = out.error(pin.key(["backends"]), `${many}; split them into nested weighted backends`);
  } else if (!hasTraffic(v.backends)) {
    const why = children.length === 0 ? "it has no children; add children to backends" : "every weight is 0; give at least one child a weight above 0";
    out.warning(pin.key(["backends"]), `weighted backend ${v.name} receives no traffic: ${why}`);
  }
  const rollout = v.rollout === undefined ? undefined : normaliseRollout(v.rollout, pin, out);
  if (v.rollout !== undefined && rollout === undefined) ok = false;
  const ignoreChanges = checkIgnoreChanges(v.ignore_changes, checkWeightedBackendIgnore, pin, out);
  if (!ok || ignoreChanges === undefined) return undefined;
  const fieldSources: Record<string, SourcePos> = {};
  for (const f of WB_MANIFEST_FIELDS) if (v[f] !== undefined) fieldSources[f] = pin.value([f]);
  for (const k of children) fieldSources[`backends.${k}`] = pin.key(["backends", k]);
  return {
    kind: "WeightedBackend",
    name: v.name,
    description,
    metadata: metadata ?? {},
    backends: { ...v.backends },
    ...(v.id !== undefined ? { id: v.id } : {}),
    protect: v.protect ?? false,
    ...(ignoreChanges.length > 0 ? { ignoreChanges } : {}),
    ...(rollout !== undefined ? { rollout } : {}),
    source: doc.src.pos,
    fieldSources,
  };
}

/** The entries of `ignore_changes`, each checked by the kind; undefined after reporting a bad one. */
function checkIgnoreChanges(written: string[] | undefined, check: (path: string) => string | undefined, pin: Pinner, out: Collector): string[] | undefined {
  let ok = true;
  (written ?? []).forEach((path, i) => {
    const problem = check(path);
    if (problem === undefined) return;
    ok = out.error(pin.value(["ignore_changes", i]), `ignore_changes[${i}]: ${problem}`);
  });
  return ok ? [...new Set(written ?? [])] : undefined;
}

function samlIntent(doc: EdgeRouteDoc, source: SamlSource | undefined, out: Collector): (ModuleIntent<SamlSettings> & { idpMetadataFile?: string }) | undefined {
  const written = doc.value.saml;
  const pin = new Pinner(doc.src);
  if (written === undefined) return { state: "unmanaged" };
  const at = pin.key(["saml"]);
  if (written === ABSENT) return { state: "absent", source: at };
  const kind = samlSourceKind(written);
  if (kind === "both") {
    out.error(pin.key(["saml", "idp_metadata_file"]), "saml has both idp_metadata and idp_metadata_file; keep exactly one of them");
    return undefined;
  }
  if (kind === "none") {
    out.error(at, "saml needs the IdP's metadata; add idp_metadata_file: <path of the XML file> (or idp_metadata: <the XML>)");
    return undefined;
  }
  if (source === undefined) return undefined;
  if (written.allow_idp_initiated === undefined) {
    const defaulted = "saml.allow_idp_initiated is left out, so the API default true applies and the IdP may start logins on its own";
    out.warning(at, `${defaulted}; write allow_idp_initiated: true (or false) to choose and silence this warning`);
  }
  const settings = normaliseModuleSettings(SAML, { ...written, idp_metadata: source.text });
  return { state: "present", settings, source: at, ...(source.file !== undefined ? { idpMetadataFile: source.file } : {}) };
}

function circuitBreakerIntent(doc: EdgeRouteDoc): ModuleIntent<CircuitBreakerSettings> {
  const written = doc.value.circuit_breaker;
  if (written === undefined) return { state: "unmanaged" };
  const source = new Pinner(doc.src).key(["circuit_breaker"]);
  return written === ABSENT ? { state: "absent", source } : { state: "present", source, settings: normaliseModuleSettings(CIRCUIT_BREAKER, written) };
}

function normaliseEdgeRoute(doc: EdgeRouteDoc, source: SamlSource | undefined, out: Collector): DesiredEdgeRoute | undefined {
  const v: EdgeRouteManifest = doc.value;
  const saml = samlIntent(doc, source, out);
  const circuit_breaker = circuitBreakerIntent(doc);
  const ignoreChanges = checkIgnoreChanges(v.ignore_changes, checkModuleIgnore, new Pinner(doc.src), out);
  if (saml === undefined || ignoreChanges === undefined) return undefined;
  if (saml.state === "unmanaged" && circuit_breaker.state === "unmanaged") {
    out.warning(doc.src.pos, `edge route ${v.edge}/${v.route} manages no module; add saml or circuit_breaker (settings, or absent to delete one), or remove this manifest`);
  }
  const ignored = ignoreChanges.length > 0 ? { ignoreChanges } : {};
  const routeSource = new Pinner(doc.src).value(["route"]);
  const guarded = v.protect === true ? { protect: true as const } : {};
  return { kind: "EdgeRoute", edge: v.edge, route: v.route, saml, circuit_breaker, ...ignored, ...guarded, source: doc.src.pos, routeSource };
}

/**
 * Names: the first declaration wins; every later one is an error that names the first. The one check of unique
 * names: the plan relies on it.
 */
function firstDeclarations(declaredNames: BuildInput["declaredNames"], out: Collector): Map<string, SourcePos> {
  const firstByName = new Map<string, SourcePos>();
  for (const { name, pos } of declaredNames) {
    const first = firstByName.get(name);
    if (first) out.error(pos, `name ${name} is already used by the WeightedBackend at ${formatPos(first)}; names must be unique across all manifests`);
    else firstByName.set(name, pos);
  }
  return firstByName;
}

/**
 * Normalises every WeightedBackend document into `desired`, checking that no id is adopted twice (the one check of
 * it: the plan relies on it); returns the adopted ids with the name that adopts each.
 */
function addWeightedBackends(wbDocs: WeightedBackendDoc[], desired: DesiredState, out: Collector): Map<string, { name: string; pos: SourcePos }> {
  const adopted = new Map<string, { name: string; pos: SourcePos }>();
  for (const doc of wbDocs) {
    const v = doc.value;
    if (v.id !== undefined) {
      const at = new Pinner(doc.src).value(["id"]);
      const first = adopted.get(v.id);
      if (first) out.error(at, `id ${v.id} is already adopted by ${first.name} at ${formatPos(first.pos)}; two manifests cannot manage the same weighted backend`);
      else adopted.set(v.id, { name: v.name, pos: at });
    }
    out.quiet = doc.partial;
    const wb = normaliseWeightedBackend(doc, out);
    out.quiet = false;
    if (wb && !doc.partial) desired.weightedBackends.push(wb);
  }
  return adopted;
}

/** Every child key that names no declared WeightedBackend is an error. */
function reportUnresolved(references: BuildInput["references"], firstByName: Map<string, SourcePos>, out: Collector): void {
  const declared = [...firstByName.keys()];
  for (const { key, pos } of references) {
    if (firstByName.has(key)) continue;
    const hint = didYouMean(key, declared, "; declare a WeightedBackend with that name, or use a backend id (bkdhr_..., bkdwd_...)");
    out.error(pos, `backends.${key}: no WeightedBackend is named ${key}${hint}`);
  }
}

/** Reference cycles, through names and through the ids that manifests adopt. */
function reportCycles(wbDocs: WeightedBackendDoc[], adopted: Map<string, { name: string }>, out: Collector): void {
  const byName = new Map<string, WeightedBackendDoc>();
  for (const doc of wbDocs) if (!byName.has(doc.value.name)) byName.set(doc.value.name, doc);
  const edges = new Map<string, string[]>();
  for (const [name, doc] of byName) {
    const targets: string[] = [];
    for (const key of Object.keys(doc.value.backends)) {
      const target = key.includes("_") ? adopted.get(key)?.name : key;
      if (target !== undefined && byName.has(target)) targets.push(target);
    }
    edges.set(name, targets);
  }
  for (const cycle of findCycles([...byName.keys()], edges)) {
    const first = cycle[0] as string;
    const doc = byName.get(first);
    const nextName = cycle[1] ?? first;
    const key = Object.keys(doc?.value.backends ?? {}).find((k) => k === nextName || adopted.get(k)?.name === nextName) ?? nextName;
    const pos = doc ? new Pinner(doc.src).key(["backends", key]) : { file: "", line: 1, col: 1 };
    out.error(pos, `backends.${key}: reference cycle ${cycle.join(" -> ")}; a weighted backend cannot contain itself, remove one of these references`);
  }
}

/**
 * Normalises every EdgeRoute document into `desired`; a route declared twice is an error at the second (the one
 * check of it: the plan relies on it).
 */
function addEdgeRoutes(erDocs: EdgeRouteDoc[], samlSources: BuildInput["samlSources"], desired: DesiredState, out: Collector): void {
  const routes = new Map<string, SourcePos>();
  for (const doc of erDocs) {
    const v = doc.value;
    const address = `${v.edge}/${v.route}`;
    const at = new Pinner(doc.src).value(["route"]);
    const first = routes.get(address);
    if (first) {
      out.error(at, `edge route ${address} is already declared at ${formatPos(first)}; declare each route once, with both of its modules in one manifest`);
      continue;
    }
    routes.set(address, at);
    out.quiet = doc.partial;
    const er = normaliseEdgeRoute(doc, samlSources.get(doc), out);
    out.quiet = false;
    if (er && !doc.partial) desired.edgeRoutes.push(er);
  }
}

/**
 * Builds the DesiredState from validated documents and checks every rule between objects. `desired` holds only the
 * objects without errors (never a partial document); it is meaningful to a plan only when no error is returned.
 * With no error, its names, adopted ids and routes are each unique.
 */
export function buildDesired(input: BuildInput): { desired: DesiredState; diagnostics: Diagnostic[] } {
  const out = new Collector();
  const desired: DesiredState = { weightedBackends: [], edgeRoutes: [] };
  const firstByName = firstDeclarations(input.declaredNames, out);
  const wbDocs = input.documents.filter((d): d is WeightedBackendDoc => d.kind === "WeightedBackend");
  const erDocs = input.documents.filter((d): d is EdgeRouteDoc => d.kind === "EdgeRoute");
  const adopted = addWeightedBackends(wbDocs, desired, out);
  reportUnresolved(input.references, firstByName, out);
  reportCycles(wbDocs, adopted, out);
  addEdgeRoutes(erDocs, input.samlSources, desired, out);
  return { desired, diagnostics: out.diagnostics };
}
