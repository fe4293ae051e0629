/**
 * `buildExport`: live objects to the manifest files `edgeplan export` writes, so that `plan` on them right after
 * shows no change but adoptions (README, "Plan and apply"). Owned weighted backends keep their marker's name;
 * others get a name from their description (or id) and `id:` pinned; children that are exported are written by
 * name. Routes get an EdgeRoute document with every client-settable field of each module that is set, the SAML
 * IdP metadata in a file of its own. What cannot be written faithfully is skipped with the reason. Pure.
 */
import { InternalError } from "../model/errors.js";
import type { JsonValue } from "../model/plan.js";
import { MARKER_KEY, type OwnerMarker } from "../model/state.js";
import { renderSchemaFiles } from "../model/schemas.js";
import { LIMITS, type CircuitBreakerModule, type SamlModule } from "../model/wire.js";
import { buildMarker, parseLiveMetadata } from "../kinds/weighted-backend.js";
import { canonicalJson, sortedJson } from "../model/canonical.js";
import { ESTIMATE_STACK } from "../manifest/build-desired.js";
import { isValidName, NameAllocator, nameFromId, slugify } from "./names.js";
import { renderDocument, renderManifestFile, type ManifestDoc } from "./render.js";

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

const WB_SCHEMA = "weighted-backend.schema.json";
const ROUTE_SCHEMA = "edge-route.schema.json";

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

export interface ExportResult {
  /** Sorted by path. Empty when there is nothing to export. */
  files: ExportFile[];
  /** Sorted by name. */
  weightedBackends: ExportedWeightedBackend[];
  /** Sorted by edge, then route. */
  routes: ExportedRoute[];
  /** What was left out, each with a complete sentence saying why and what to do. */
  skipped: Array<{ what: string; reason: string }>;
  /** Other things a person should know about what was written (one sentence each). */
  notes: string[];
}

interface Candidate {
  live: ExportWeightedBackendInput;
  match: ExportMatch;
  /** The user's metadata: the live mapping without the marker key. */
  user: Record<string, JsonValue>;
  marker: OwnerMarker | null;
  protect: boolean;
  name: string;
  comment: string[];
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function isObject(v: unknown): v is Record<string, JsonValue> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** Whether a parsed JSON value has a `__proto__` own key at any depth (JSON.parse keeps it as data; plain assignment does not). */
function hasProtoKey(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(hasProtoKey);
  if (value === null || typeof value !== "object") return false;
  return Object.hasOwn(value, "__proto__") || Object.values(value).some(hasProtoKey);
}

function preview(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 37)}...` : text);
}

/**
 * Builds every file of an export. Deterministic: the same live objects give the same files, byte for byte,
 * whatever order they were read in. Throws InternalError only when a document it already checked fails to render.
 */
export function buildExport(input: ExportInput): ExportResult {
  const { stack } = input;
  const skipped: ExportResult["skipped"] = [];
  const notes: string[] = [];

  // 1. Classify, oldest first (id order is creation order), so that the oldest of two same markers wins, as in a plan.
  const live = [...input.weightedBackends].sort((a, b) => cmp(a.id, b.id));
  const names = new NameAllocator();
  const candidates: Candidate[] = [];
  const needName: Candidate[] = [];
  const wantMarkerName: Candidate[] = [];
  for (const wb of live) {
    const what = `weighted backend ${wb.id}`;
    let user: Record<string, JsonValue>;
    let marker: OwnerMarker | null = null;
    let strayKey = false;
    let rawMarker: JsonValue | undefined;
    if (wb.metadata.trim() === "") {
      user = {};
    } else {
      const parsed = parseLiveMetadata(wb.metadata);
      if (parsed.user === null) {
        skipped.push({
          what,
          reason:
            `its metadata ${preview(wb.metadata)} is text but not JSON of an object, which a manifest cannot hold ` +
            `(metadata is a mapping or JSON text of an object), and adopting it would replace that text with edgeplan's owner marker; ` +
            `store it as a JSON object (or clear it) in the API, then export again`,
        });
        continue;
      }
      if (hasProtoKey(JSON.parse(wb.metadata))) {
        skipped.push({
          what,
          reason:
            'its metadata has a "__proto__" key, which edgeplan cannot carry through a plan without losing it; rename that key in the API, then export again',
        });
        continue;
      }
      user = parsed.user;
      marker = parsed.marker;
      rawMarker = isObject(parsed.value) ? parsed.value[MARKER_KEY] : undefined;
      strayKey = marker === null && rawMarker !== undefined;
    }

    if (marker !== null && marker.stack === stack) {
      if (isValidName(marker.name)) {
        if (!names.claim(marker.name)) {
          skipped.push({
            what,
            reason:
              `it carries the same owner marker ("${marker.name}" of stack "${stack}") as an older object, which is exported under that name; ` +
              `the plan lists this one as an orphan (delete it with --prune once you have checked it)`,
          });
          continue;
        }
        candidates.push({ live: wb, match: "owned", user, marker, protect: marker.protect === true, name: marker.name, comment: [] });
        if (canonicalJson(rawMarker) !== canonicalJson(buildMarker(stack, marker.name, marker.protect === true))) {
          notes.push(`${what} ("${marker.name}"): its owner marker holds more than stack, name and protect: true, so the plan shows an update that rewrites it`);
        }
        continue;
      }
      const c: Candidate = {
        live: wb,
        match: "rename",
        user,
        marker,
        protect: marker.protect === true,
        name: "",
        comment: [`Pinned by id: its owner marker names it ${JSON.stringify(marker.name)}, which is not a valid name; the next apply renames it.`],
      };
      candidates.push(c);
      needName.push(c);
      continue;
    }
    if (marker !== null) {
      if (!input.takeover) {
        skipped.push({
          what,
          reason: `it belongs to stack "${marker.stack}" (as "${marker.name}"), and edgeplan never changes another stack's objects; pass --takeover to export it pinned by id`,
        });
        continue;
      }
      const c: Candidate = {
        live: wb,
        match: "takeover",
        user,
        marker,
        protect: marker.protect === true,
        name: "",
        comment: [`Taken over by id from stack "${marker.stack}" (where it is "${marker.name}"): plan and apply need --takeover.`],
      };
      candidates.push(c);
      wantMarkerName.push(c);
      continue;
    }
    const c: Candidate = {
      live: wb,
      match: "adopt",
      user,
      marker: null,
      protect: false,
      name: "",
      comment: ["Adopted by id: it carries no owner marker yet; the next apply adds one."],
    };
    if (strayKey) {
      notes.push(
        `${what}: the "${MARKER_KEY}" key of its metadata is not an owner marker; the manifest leaves it out (the key is reserved) and adopting replaces it with this stack's marker`,
      );
    }
    candidates.push(c);
    needName.push(c);
  }

  // 2. Names: owned ones claimed theirs above; then other stacks' names where free; then derived names.
  for (const c of wantMarkerName) {
    const wanted = c.marker?.name ?? "";
    if (isValidName(wanted) && names.claim(wanted)) c.name = wanted;
    else needName.push(c);
  }
  needName.sort((a, b) => cmp(a.live.id, b.live.id));
  for (const c of needName) c.name = names.allocate(slugify(c.live.description) || nameFromId(c.live.id));

  // 3. What a manifest cannot hold: metadata too large once the marker is added, text the YAML cannot carry back.
  const kept: Candidate[] = [];
  const docOf = new Map<Candidate, ManifestDoc>();
  for (const c of candidates) {
    const what = `weighted backend ${c.live.id}`;
    const marker = (s: string): OwnerMarker => buildMarker(s, c.name, c.protect);
    const bytes = Math.max(
      utf8Bytes(canonicalJson({ ...c.user, [MARKER_KEY]: marker(stack) })),
      utf8Bytes(canonicalJson({ ...c.user, [MARKER_KEY]: marker(ESTIMATE_STACK) })),
    );
    if (bytes > LIMITS.metadataBytes) {
      skipped.push({
        what,
        reason: `its metadata would be ${bytes} bytes with the owner marker, more than the ${LIMITS.metadataBytes} bytes the API accepts; make its metadata smaller in the API, then export again`,
      });
      continue;
    }
    // Children by id here: whether the document can be written does not depend on how children are named.
    const probe = weightedBackendDoc(c, c.live.backends, "mapping");
    let doc = probe;
    if ("problem" in renderDocument(probe)) {
      // A mapping too deep for the loader's nesting guard still loads as JSON text of an object.
      doc = weightedBackendDoc(c, c.live.backends, "json");
      const again = renderDocument(doc);
      if ("problem" in again) {
        skipped.push({ what, reason: `it cannot be written as a manifest that reads back the same: ${again.problem}` });
        continue;
      }
    }
    docOf.set(c, doc);
    kept.push(c);
  }

  // 4. Documents, children of exported objects by name.
  const nameById = new Map(kept.map((c) => [c.live.id, c.name]));
  const files: ExportFile[] = [];
  const exportedWbs: ExportedWeightedBackend[] = [];
  for (const c of [...kept].sort((a, b) => cmp(a.name, b.name))) {
    const backends: Record<string, number> = {};
    for (const [child, weight] of Object.entries(c.live.backends)) backends[nameById.get(child) ?? child] = weight;
    const form = typeof (docOf.get(c) as ManifestDoc).value.metadata === "string" ? "json" : "mapping";
    const rendered = renderDocument(weightedBackendDoc(c, backends, form));
    if ("problem" in rendered) throw new InternalError(`export of ${c.live.id} failed after its check: ${rendered.problem}`);
    const file = `${EXPORT_LAYOUT.weightedBackends}/${c.name}.yaml`;
    files.push({ path: file, text: renderManifestFile(`../${EXPORT_LAYOUT.schemas}/${WB_SCHEMA}`, [rendered.text]) });
    exportedWbs.push({ id: c.live.id, name: c.name, match: c.match, file });
  }

  // 5. Routes, one file per edge.
  const byEdge = new Map<string, ExportRouteInput[]>();
  for (const r of input.routes) byEdge.set(r.edge, [...(byEdge.get(r.edge) ?? []), r]);
  const exportedRoutes: ExportedRoute[] = [];
  for (const edge of [...byEdge.keys()].sort()) {
    const seen = new Set<string>();
    const routes = (byEdge.get(edge) ?? []).filter((r) => !seen.has(r.route) && seen.add(r.route)).sort((a, b) => cmp(a.route, b.route));
    const bodies: string[] = [];
    const file = `${EXPORT_LAYOUT.routes}/${edge}.yaml`;
    for (const r of routes) {
      const what = `edge route ${r.edge}/${r.route}`;
      const value: Record<string, JsonValue> = { kind: "EdgeRoute", edge: r.edge, route: r.route };
      const modules: ExportedRoute["modules"] = [];
      let idp: ExportFile | undefined;
      if (r.saml) {
        if (LONE_SURROGATE.test(r.saml.idp_metadata)) {
          skipped.push({
            what: `${what} saml`,
            reason: "its IdP metadata holds text that UTF-8 cannot encode (a lone surrogate), so no file can hold it as it is; the SAML module is left out (unmanaged)",
          });
        } else {
          const ref = `${EXPORT_LAYOUT.idp}/${r.route}.xml`;
          idp = { path: `${EXPORT_LAYOUT.routes}/${ref}`, text: r.saml.idp_metadata };
          value.saml = samlValue(r.saml, ref);
          modules.push("saml");
        }
      }
      if (r.circuit_breaker) {
        value.circuit_breaker = circuitBreakerValue(r.circuit_breaker);
        modules.push("circuit_breaker");
      }
      if (modules.length === 0) continue;
      const rendered = renderDocument({ value });
      if ("problem" in rendered) {
        skipped.push({ what, reason: `it cannot be written as a manifest that reads back the same: ${rendered.problem}` });
        continue;
      }
      bodies.push(rendered.text);
      if (idp) files.push(idp);
      exportedRoutes.push({ edge: r.edge, route: r.route, modules, file });
    }
    if (bodies.length > 0) files.push({ path: file, text: renderManifestFile(`../${EXPORT_LAYOUT.schemas}/${ROUTE_SCHEMA}`, bodies) });
  }

  if (files.length > 0) {
    for (const s of renderSchemaFiles()) {
      if (s.file === WB_SCHEMA || s.file === ROUTE_SCHEMA) files.push({ path: `${EXPORT_LAYOUT.schemas}/${s.file}`, text: s.text });
    }
  }
  files.sort((a, b) => cmp(a.path, b.path));
  skipped.sort((a, b) => cmp(a.what, b.what));
  return { files, weightedBackends: exportedWbs, routes: exportedRoutes, skipped, notes: notes.sort() };
}

function weightedBackendDoc(c: Candidate, backends: Record<string, number>, form: "mapping" | "json"): ManifestDoc {
  const value: Record<string, JsonValue> = { kind: "WeightedBackend", name: c.name };
  if (c.match !== "owned") value.id = c.live.id;
  if (c.protect) value.protect = true;
  if (c.live.description !== "") value.description = c.live.description;
  if (Object.keys(c.user).length > 0) value.metadata = form === "json" ? canonicalJson(c.user) : sortedJson(c.user);
  value.backends = sortedJson(backends);
  return { value, comment: c.comment, sortedKeys: ["metadata", "backends"] };
}

/** Every client-settable SAML field, in the API's order, the IdP metadata by file. */
function samlValue(saml: SamlModule, idpFile: string): Record<string, JsonValue> {
  return {
    enabled: saml.enabled,
    options_passthrough: saml.options_passthrough,
    cookie_prefix: saml.cookie_prefix,
    inactivity_timeout: saml.inactivity_timeout,
    maximum_duration: saml.maximum_duration,
    idp_metadata_file: idpFile,
    force_authn: saml.force_authn,
    allow_idp_initiated: saml.allow_idp_initiated,
    authorized_groups: [...saml.authorized_groups],
    nameid_format: saml.nameid_format,
  };
}

/** Every client-settable circuit breaker field, in the API's order. */
function circuitBreakerValue(cb: CircuitBreakerModule): Record<string, JsonValue> {
  return {
    enabled: cb.enabled,
    tripped_duration: cb.tripped_duration,
    rolling_window: cb.rolling_window,
    num_buckets: cb.num_buckets,
    volume_threshold: cb.volume_threshold,
    error_threshold_percentage: cb.error_threshold_percentage,
  };
}
