/**
 * What the two route modules (SAML, circuit breaker) have in common: a fixed set of client-settable fields with API
 * defaults, replaced as a whole by PUT. Each module kind describes itself with a `ModuleKindSpec`; this file
 * normalises both sides (the manifest's settings and the live module) and builds the change of one module. Pure.
 */
import { jsonEqual as equal } from "../model/json-equal.js";
import type { FieldDiff, JsonValue, ModuleChange, ModuleKind, ModuleSettings } from "../model/plan.js";
import { moduleAddress } from "../model/plan.js";
import { modulePath } from "../model/paths.js";
import { formatPos, type ModuleIntent } from "../model/state.js";
import { CIRCUIT_BREAKER } from "./circuit-breaker.js";
import { diffRecords } from "./diff.js";
import { SAML } from "./saml.js";

export interface ModuleKindSpec<T extends ModuleSettings = ModuleSettings> {
  kind: ModuleKind;
  /** How a person calls it in a sentence. */
  label: string;
  /** Client-settable fields, in the order the API documents them (the keys of the kind's zod schema). */
  fields: readonly (keyof T & string)[];
  /** Values the API stores for a field a PUT leaves out. */
  defaults: Readonly<Partial<T>>;
}

/** The spec of each module kind, for code that holds a module kind as data. */
export function moduleSpec(kind: ModuleKind): ModuleKindSpec {
  return kind === "saml" ? SAML : CIRCUIT_BREAKER;
}

/**
 * The settings of a module as compared and sent: exactly the client-settable fields, in documented order, with
 * the API's defaults for any field the input lacks (so leaving a default out never shows a perpetual change).
 * Works on a manifest's settings (extra keys such as `idp_metadata_file` are dropped) and on a live module (whose
 * generated fields are dropped).
 */
export function normaliseModuleSettings<T extends ModuleSettings>(spec: ModuleKindSpec<T>, input: object): T {
  const source = input as Record<string, unknown>;
  const defaults = spec.defaults as Readonly<Record<string, JsonValue | undefined>>;
  const out: ModuleSettings = {};
  for (const field of spec.fields) {
    const value = source[field] !== undefined ? source[field] : defaults[field];
    if (value !== undefined) out[field] = copyJson(value);
  }
  return out as T;
}

function copyJson(value: unknown): JsonValue {
  return Array.isArray(value) ? (value.map(copyJson) as JsonValue) : (value as JsonValue);
}

/** The field diffs a module change shows: every field an `add` when `before` is null, a `remove` when `after` is. */
export function diffModule(spec: ModuleKindSpec, before: ModuleSettings | null, after: ModuleSettings | null): FieldDiff[] {
  return diffRecords(before ?? {}, after ?? {}, "", spec.fields);
}

/**
 * The change of one module of a route, or null when there is nothing to do: a module the manifests want present
 * is replaced (PUT of the whole module) when it is unset live or any client-settable field differs (IdP metadata
 * compared as the exact string); a module they want absent is deleted when it exists; an unmanaged module is not
 * looked at.
 */
export function buildModuleChange(
  spec: ModuleKindSpec,
  edge: string,
  route: string,
  intent: ModuleIntent<object>,
  live: object | null,
  fingerprint: () => string,
): ModuleChange | null {
  if (intent.state === "unmanaged") return null;
  const before = live === null ? null : normaliseModuleSettings(spec, live);
  // Built only for a change: the source position of a module that needs none is never read.
  const common = () => ({
    kind: spec.kind,
    address: moduleAddress(edge, route, spec.kind),
    edge,
    route,
    fingerprint: fingerprint(),
    source: formatPos(intent.source),
    depends_on: [],
  });
  const path = modulePath(edge, route, spec.kind);
  if (intent.state === "absent") {
    if (before === null) return null;
    return { ...buildModuleDelete(spec, edge, route, live as object, fingerprint()), source: formatPos(intent.source), notes: [`the manifest says ${spec.kind}: absent`] };
  }
  const after = normaliseModuleSettings(spec, intent.settings);
  if (before !== null && equal(before, after)) return null;
  return {
    ...common(),
    action: "replace",
    before,
    after,
    diffs: diffModule(spec, before, after),
    request: { method: "PUT", path, body: after },
    notes: [],
  };
}

/**
 * The delete of a module that exists live (`live`), with no source and no notes: an `absent` in a manifest adds
 * its position, an orphan of the stack's inventory its reason.
 */
export function buildModuleDelete(spec: ModuleKindSpec, edge: string, route: string, live: object, fingerprint: string): ModuleChange {
  const before = normaliseModuleSettings(spec, live);
  return {
    kind: spec.kind,
    address: moduleAddress(edge, route, spec.kind),
    edge,
    route,
    fingerprint,
    source: null,
    depends_on: [],
    action: "delete",
    before,
    after: null,
    diffs: diffModule(spec, before, null),
    request: { method: "DELETE", path: modulePath(edge, route, spec.kind), body: null },
    notes: [],
  };
}
