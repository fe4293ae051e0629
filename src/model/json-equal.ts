import equal from "fast-deep-equal";
import { canonicalJson } from "./canonical.js";

/**
 * Deep equality of JSON values (normalised desired and live objects). fast-deep-equal calls an object's own
 * `valueOf`/`toString` when they differ from Object.prototype's, so user metadata with a key named `valueOf` or
 * `toString` makes it throw; such values are compared by their canonical JSON instead, which is exact for JSON.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  try {
    return equal(a, b);
  } catch {
    return canonicalJson(a) === canonicalJson(b);
  }
}
