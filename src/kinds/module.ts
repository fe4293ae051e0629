/**
 * What the two route modules (SAML, circuit breaker) have in common: a fixed set of client-settable fields with API
 * defaults, replaced as a whole by PUT. Each module kind describes itself with a `ModuleKindSpec`. Pure.
 */
import type { JsonValue, ModuleKind, ModuleSettings } from "../model/plan.js";

export interface ModuleKindSpec {
  kind: ModuleKind;
  /** How a person calls it in a sentence. */
  label: string;
  /** Client-settable fields, in the order the API documents them. */
  fields: readonly string[];
  /** Values the API stores for a field a PUT leaves out. */
  defaults: Readonly<Record<string, JsonValue>>;
}

/**
 * The settings of a module as compared and sent: exactly the client-settable fields, in documented order, with
 * the API's defaults for any field the input lacks (so leaving a default out never shows a perpetual change).
 * Works on a desired module's settings and on a live module (whose generated fields are dropped).
 */
export function normaliseModuleSettings(spec: ModuleKindSpec, input: object): ModuleSettings {
  const source = input as Record<string, unknown>;
  const out: ModuleSettings = {};
  for (const field of spec.fields) {
    const value = source[field] !== undefined ? source[field] : spec.defaults[field];
    if (value !== undefined) out[field] = structuredCloneJson(value);
  }
  return out;
}

function structuredCloneJson(value: unknown): JsonValue {
  return Array.isArray(value) ? (value.map(structuredCloneJson) as JsonValue) : (value as JsonValue);
}

/** Path of a module of a route, relative to the API base URL. */
export function modulePath(edge: string, route: string, kind: ModuleKind): string {
  return `/edges/https/${edge}/routes/${route}/${kind}`;
}
