/** Canonical JSON: object keys sorted at every depth, no spacing. Same value, same bytes. And the orderings and
 * shape checks that every part of the plan shares. Pure. */
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import type { JsonValue } from "./plan.js";

/** Canonical JSON of a value. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

/** sha256 (hex) of the canonical JSON of a value: the same value, the same digest. */
export function digestOf(value: unknown): string {
  return bytesToHex(sha256(utf8ToBytes(canonicalJson(value))));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (isJsonObject(value)) {
    // A null prototype, so that a `__proto__` key is kept as data instead of being dropped.
    const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
    for (const key of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[key];
      if (v !== undefined) out[key] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/** Code-unit order of two strings (the order of ids, names and addresses in every output). */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** True for a JSON object (not null, not an array). */
export function isJsonObject(v: unknown): v is Record<string, JsonValue> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
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
export function isSortedPlain(value: unknown): boolean {
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
