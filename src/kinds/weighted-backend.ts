/**
 * The weighted backend kind: owner markers in metadata, normalisation of both sides, field diffs, traffic shares
 * and the bodies of its writes. Pure.
 */
import { jsonEqual as equal } from "../model/json-equal.js";
import { canonicalJson } from "../model/canonical.js";
import { InternalError } from "../model/errors.js";
import type { FieldDiff, JsonValue, WeightChange, WeightedBackendBody, WeightedBackendChange, WeightedBackendValue } from "../model/plan.js";
import { MARKER_KEY, type LiveWeightedBackend, type OwnerMarker } from "../model/state.js";
import { buildFieldDiff, diffRecords } from "../core/diff.js";

export const WEIGHTED_BACKENDS_PATH = "/backends/weighted";

/** Live metadata as compared: parsed when it is a JSON object, else the raw text. */
export interface ParsedMetadata {
  /** The parsed object with sorted keys, or the raw text when it is not a JSON object. */
  value: JsonValue;
  /** The owner marker, when the metadata is a JSON object whose `edgeplan` key is a well-formed marker. */
  marker: OwnerMarker | null;
  /** The metadata without the marker key (null when the metadata is not a JSON object). */
  user: Record<string, JsonValue> | null;
}

/** Returns `value` with object keys sorted at every depth (so that JSON of it is canonical). */
export function sortedJson(value: unknown): JsonValue {
  // A plan sorts the metadata of every object on both sides: copying plain JSON directly is several times faster
  // than printing and parsing it. Anything else (a Date, NaN, a `__proto__` key, ...) takes the JSON round trip,
  // which defines the result; the copy gives the same for the values it accepts.
  const copy = sortedCopy(value);
  return copy !== NOT_PLAIN ? copy : (JSON.parse(canonicalJson(value) ?? "null") as JsonValue);
}

const NOT_PLAIN = Symbol("not plain JSON");

/** True when `value` is plain JSON whose object keys are sorted at every depth: what sortedJson would give. */
function isSortedPlain(value: unknown): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0);
  if (typeof value !== "object") return false;
  if (Array.isArray(value)) return value.every((v) => v !== undefined && isSortedPlain(v));
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  let previous: string | undefined;
  for (const key of Object.keys(value)) {
    if (key === "__proto__" || (previous !== undefined && !(previous < key))) return false;
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined || !isSortedPlain(v)) return false;
    previous = key;
  }
  return true;
}

/** A copy of plain JSON with object keys sorted; NOT_PLAIN as soon as something is not plain JSON. */
function sortedCopy(value: unknown): JsonValue | typeof NOT_PLAIN {
  if (value === null || typeof value === "string" || typeof value === "boolean") return value;
  if (typeof value === "number") return Number.isFinite(value) ? (value === 0 ? 0 : value) : NOT_PLAIN;
  if (typeof value !== "object") return NOT_PLAIN;
  if (Array.isArray(value)) {
    const out: JsonValue[] = new Array<JsonValue>(value.length);
    for (let i = 0; i < value.length; i++) {
      const v = value[i] as unknown;
      if (v === undefined) return NOT_PLAIN;
      const copy = sortedCopy(v);
      if (copy === NOT_PLAIN) return NOT_PLAIN;
      out[i] = copy;
    }
    return out;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return NOT_PLAIN;
  const out: Record<string, JsonValue> = {};
  for (const key of Object.keys(value).sort()) {
    if (key === "__proto__") return NOT_PLAIN;
    const v = (value as Record<string, unknown>)[key];
    if (v === undefined) continue;
    const copy = sortedCopy(v);
    if (copy === NOT_PLAIN) return NOT_PLAIN;
    out[key] = copy;
  }
  return out;
}

function isObject(v: unknown): v is Record<string, JsonValue> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/**
 * Parses live metadata. Text that is not JSON, or JSON that is not an object, belongs to a foreign object with no
 * marker; so does an `edgeplan` key that is not `{stack: string, name: string, protect?: true}`.
 */
export function parseLiveMetadata(text: string): ParsedMetadata {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { value: text, marker: null, user: null };
  }
  if (!isObject(parsed)) return { value: text, marker: null, user: null };
  // Metadata edgeplan wrote is canonical JSON already: its parse is used as it is, without a sorted copy.
  const value = (isSortedPlain(parsed) ? parsed : sortedJson(parsed)) as Record<string, JsonValue>;
  const { [MARKER_KEY]: raw, ...user } = value;
  return { value, marker: parseMarker(raw), user };
}

function parseMarker(raw: unknown): OwnerMarker | null {
  if (!isObject(raw)) return null;
  const { stack, name, protect } = raw;
  if (typeof stack !== "string" || typeof name !== "string" || stack === "" || name === "") return null;
  return protect === true ? { stack, name, protect: true } : { stack, name };
}

/** The owner marker edgeplan writes for a manifest object. */
export function buildMarker(stack: string, name: string, protect: boolean): OwnerMarker {
  return protect ? { stack, name, protect: true } : { stack, name };
}

/** The full metadata of a managed object: the user's mapping plus the marker, keys sorted. */
export function buildMetadata(user: Record<string, unknown>, marker: OwnerMarker): Record<string, JsonValue> {
  return sortedJson({ ...user, [MARKER_KEY]: marker }) as Record<string, JsonValue>;
}

/** Sorts a backends map by key. */
export function sortedBackends(backends: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key of Object.keys(backends).sort()) out[key] = backends[key] as number;
  return out;
}

/** The live object as compared (`parsed`: its metadata already parsed, to save parsing it again). */
export function buildLiveValue(live: LiveWeightedBackend, parsed?: ParsedMetadata): WeightedBackendValue {
  return {
    description: live.description,
    metadata: (parsed ?? parseLiveMetadata(live.metadata)).value,
    backends: sortedBackends(live.backends),
  };
}

/** Whether a backends map sends traffic anywhere (at least one weight above 0). */
export function hasTraffic(backends: Readonly<Record<string, number>>): boolean {
  return Object.values(backends).some((w) => w > 0);
}

/** A weight's share of the total in percent, one decimal; 0 when the total is 0. */
export function shareOf(weight: number, total: number): number {
  return total > 0 ? Math.round((weight / total) * 1000) / 10 : 0;
}

/** Exact share in percent (for risk thresholds, which must not depend on rounding). */
export function exactShareOf(weight: number, total: number): number {
  return total > 0 ? (weight / total) * 100 : 0;
}

function totalOf(backends: Readonly<Record<string, number>> | null): number {
  return backends ? Object.values(backends).reduce((s, w) => s + w, 0) : 0;
}

/**
 * Every child of either side with weights and shares before and after, sorted by key. `names` gives the name of a
 * child id; `pending` holds keys that are names of objects created by the same plan (their own names).
 */
export function buildWeights(
  before: Readonly<Record<string, number>> | null,
  after: Readonly<Record<string, number>> | null,
  names: Pick<ReadonlyMap<string, string>, "get">,
  pending: ReadonlySet<string>,
): WeightChange[] {
  const keys = [...new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})])].sort();
  const tb = totalOf(before);
  const ta = totalOf(after);
  return keys.map((child) => {
    const b = before && Object.hasOwn(before, child) ? (before[child] as number) : null;
    const a = after && Object.hasOwn(after, child) ? (after[child] as number) : null;
    return {
      child,
      name: pending.has(child) ? child : (names.get(child) ?? null),
      known_after_apply: pending.has(child),
      before: b,
      after: a,
      share_before: b === null ? null : shareOf(b, tb),
      share_after: a === null ? null : shareOf(a, ta),
      changed: b !== a,
    };
  });
}

/** Field diffs of description and metadata (children are compared in `buildWeights`). */
export function diffWeightedBackend(before: WeightedBackendValue, after: WeightedBackendValue): FieldDiff[] {
  const diffs: FieldDiff[] = [];
  if (before.description !== after.description) diffs.push(buildFieldDiff("description", before.description, after.description));
  if (isObject(before.metadata) && isObject(after.metadata)) {
    diffs.push(...diffRecords(before.metadata, after.metadata, "metadata."));
  } else if (!equal(before.metadata, after.metadata)) {
    diffs.push(buildFieldDiff("metadata", before.metadata, after.metadata));
  }
  return diffs;
}

/** The full body of a create or update: a PATCH always carries every field (an absent `backends` empties the map). */
export function buildWeightedBackendBody(value: WeightedBackendValue): WeightedBackendBody {
  return {
    description: value.description,
    metadata: canonicalJson(value.metadata),
    backends: sortedBackends(value.backends),
  };
}

/**
 * The body to send for a change, with every reference by name replaced by the id that the create of that name
 * returned. `idsByAddress` maps the address of each create already applied to its new id. Throws InternalError when
 * a reference has no id yet (the applier ran a change before one it depends on).
 */
export function resolveWeightedBackendBody(
  change: WeightedBackendChange,
  idsByAddress: ReadonlyMap<string, string> | Readonly<Record<string, string>>,
): WeightedBackendBody {
  const body = change.request.body;
  if (!body) throw new InternalError(`${change.address}: a ${change.action} sends no body`);
  const lookup = (address: string): string | undefined =>
    idsByAddress instanceof Map ? idsByAddress.get(address) : (idsByAddress as Record<string, string>)[address];
  const backends: Record<string, number> = {};
  for (const [key, weight] of Object.entries(body.backends)) {
    const address = change.refs[key];
    if (address === undefined) {
      backends[key] = weight;
      continue;
    }
    const id = lookup(address);
    if (id === undefined) {
      throw new InternalError(`${change.address}: child ${key} has no id yet; ${address} must be applied first`);
    }
    backends[id] = weight;
  }
  return { description: body.description, metadata: body.metadata, backends: sortedBackends(backends) };
}
