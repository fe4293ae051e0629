/**
 * The order of a manifest kind's fields, read from its zod schema (src/model/manifest-schema.ts), the one list of
 * them: `edgeplan fmt` writes keys in this order, at the top level and in the nested settings (a module, a rollout).
 * Mappings of user data (metadata, backends) have no field order and keep the order they were written in. Pure.
 */
import type { z } from "zod";
import { KIND_SCHEMAS, type ManifestKind } from "./manifest-schema.js";

/** The keys of an object schema in order, and the order of the keys whose values are objects of fields. */
export interface FieldOrder {
  keys: readonly string[];
  nested: ReadonlyMap<string, FieldOrder>;
}

/** What this module reads of a zod schema's definition. */
interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  options?: readonly z.ZodType[];
  shape?: Record<string, z.ZodType>;
}

const defOf = (schema: z.ZodType): SchemaDef => (schema as unknown as { def: SchemaDef }).def;

/**
 * The field order of `schema`: an object's own, or that of the first object among an optional's inner schema or a
 * union's options (a module is its settings or `absent`); undefined for anything else (records, scalars).
 */
export function fieldOrderOf(schema: z.ZodType): FieldOrder | undefined {
  const def = defOf(schema);
  if (def.type === "object" && def.shape) {
    const nested = new Map<string, FieldOrder>();
    for (const [key, value] of Object.entries(def.shape)) {
      const order = fieldOrderOf(value);
      if (order) nested.set(key, order);
    }
    return { keys: Object.keys(def.shape), nested };
  }
  if ((def.type === "optional" || def.type === "nullable" || def.type === "default") && def.innerType) return fieldOrderOf(def.innerType);
  if (def.type === "union" && def.options) {
    for (const option of def.options) {
      const order = fieldOrderOf(option);
      if (order) return order;
    }
  }
  return undefined;
}

/** The field order of each manifest kind. */
export const MANIFEST_FIELD_ORDER: Readonly<Record<ManifestKind, FieldOrder>> = Object.fromEntries(
  Object.entries(KIND_SCHEMAS).map(([kind, schema]) => [kind, fieldOrderOf(schema) as FieldOrder]),
) as Record<ManifestKind, FieldOrder>;
