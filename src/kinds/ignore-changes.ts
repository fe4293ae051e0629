/**
 * `ignore_changes`: fields set on create and never updated afterwards, so that what another team or system sets
 * live is left alone. A weighted backend may ignore `description`, `metadata` (every user key), `metadata.KEY`,
 * `backends` (the whole map) or `backends.CHILD` (one weight); an edge route `saml.FIELD` and
 * `circuit_breaker.FIELD`. The owner marker is never ignorable: it is how edgeplan finds its objects. Each function
 * here takes the manifest's value and the live one and returns the value to send, with the ignored fields taken
 * from the live side, and the fields that differed. Pure.
 */
import { jsonEqual as equal } from "../model/json-equal.js";
import type { JsonValue, ModuleKind, ModuleSettings } from "../model/plan.js";
import { MARKER_KEY } from "../model/state.js";
import { WEIGHTED_BACKEND_FIELDS } from "../model/wire.js";
import { moduleSpec } from "./module.js";

type WeightedBackendField = (typeof WEIGHTED_BACKEND_FIELDS)[number];
/** The fields whose keys can be ignored one by one (`metadata.KEY`, `backends.CHILD`). */
const KEYED_FIELDS: readonly WeightedBackendField[] = ["metadata", "backends"];
const MODULE_KINDS: readonly ModuleKind[] = ["saml", "circuit_breaker"];

/** Fields of a manifest that are never ignorable, with why. */
const NEVER: Record<string, string> = {
  name: "the name is how edgeplan finds the object",
  id: "id chooses the object to adopt",
  protect: "protect is kept in the owner marker, which edgeplan must keep",
  [`metadata.${MARKER_KEY}`]: "the owner marker is how edgeplan finds its objects; it is never ignorable",
};

/** Why an entry of a WeightedBackend's `ignore_changes` is not valid, or undefined when it is. */
export function checkWeightedBackendIgnore(path: string): string | undefined {
  if (NEVER[path] !== undefined) return `${path} cannot be ignored: ${NEVER[path]}`;
  const [field, ...rest] = path.split(".") as [WeightedBackendField, ...string[]];
  if (WEIGHTED_BACKEND_FIELDS.includes(field) && rest.length === 0) return undefined;
  if (KEYED_FIELDS.includes(field) && rest.join(".") !== "") return undefined;
  return `${JSON.stringify(path)} cannot be ignored; a WeightedBackend ignores description, metadata, metadata.KEY, backends or backends.CHILD`;
}

/** Why an entry of an EdgeRoute's `ignore_changes` is not valid, or undefined when it is. */
export function checkModuleIgnore(path: string): string | undefined {
  const [kind, field, ...rest] = path.split(".");
  const known = MODULE_KINDS.find((k) => k === kind);
  if (known !== undefined && field !== undefined && rest.length === 0) {
    const fields = moduleSpec(known).fields;
    if (fields.includes(field)) return undefined;
    if (field === "idp_metadata_file") return `${path} cannot be ignored; ignore ${known}.idp_metadata, the XML it sends`;
    return `${path}: ${known} has no field ${field}; its fields are ${fields.join(", ")}`;
  }
  return `${JSON.stringify(path)} cannot be ignored; an EdgeRoute ignores saml.FIELD or circuit_breaker.FIELD (e.g. saml.authorized_groups)`;
}

/** A weighted backend as compared for `ignore_changes`: the user's metadata (no marker), children by resolved key. */
export interface WeightedBackendFields {
  description: string;
  metadata: Record<string, unknown>;
  backends: Record<string, number>;
}

/**
 * The manifest's fields with every ignored one taken from the live object, and the ignored fields that differ.
 * `childKey` turns a child as written (a name or an id) into the key the resolved maps use.
 */
export function applyWeightedBackendIgnore(
  desired: WeightedBackendFields,
  live: WeightedBackendFields,
  ignore: readonly string[],
  childKey: (written: string) => string,
): { value: WeightedBackendFields; ignored: string[] } {
  const value: WeightedBackendFields = { description: desired.description, metadata: { ...desired.metadata }, backends: { ...desired.backends } };
  const ignored: string[] = [];
  for (const path of ignore) {
    const [field, ...rest] = path.split(".") as [WeightedBackendField, ...string[]];
    if (rest.length === 0) {
      if (!equal(value[field] as JsonValue, live[field] as JsonValue)) ignored.push(path);
      if (field === "description") value.description = live.description;
      else if (field === "metadata") value.metadata = { ...live.metadata };
      else value.backends = { ...live.backends };
      continue;
    }
    const key = field === "backends" ? childKey(rest.join(".")) : rest.join(".");
    const target = value[field as "metadata" | "backends"] as Record<string, unknown>;
    if (takeLive(target, live[field as "metadata" | "backends"], key)) ignored.push(path);
  }
  return { value, ignored: [...new Set(ignored)] };
}

/** Module settings with every ignored field taken from the live module, and the ignored fields that differ. */
export function applyModuleIgnore(
  kind: ModuleKind,
  settings: ModuleSettings,
  live: ModuleSettings,
  ignore: readonly string[],
): { settings: ModuleSettings; ignored: string[] } {
  const out: ModuleSettings = { ...settings };
  const ignored: string[] = [];
  for (const path of ignore) {
    const [k, field] = path.split(".");
    if (k !== kind || field === undefined) continue;
    if (takeLive(out, live, field)) ignored.push(path);
  }
  return { settings: out, ignored };
}

/** Sets `target[key]` to the live value (or removes it when live has none); true when they differed. */
function takeLive(target: Record<string, unknown>, live: Readonly<Record<string, unknown>>, key: string): boolean {
  const had = Object.hasOwn(target, key);
  const differs = had !== Object.hasOwn(live, key) || !equal(target[key] as JsonValue, live[key] as JsonValue);
  if (Object.hasOwn(live, key)) target[key] = live[key];
  else delete target[key];
  return differs;
}
