/**
 * Manifest names for live weighted backends that carry no usable owner marker: derived from the description, else
 * from the id, and made unique. Pure.
 */
import { NAME_MAX, NAME_PATTERN } from "../model/state.js";

/** True when `name` may be the `name` of a WeightedBackend manifest. */
export function isValidName(name: string): boolean {
  return name.length <= NAME_MAX && NAME_PATTERN.test(name);
}

/**
 * `text` as a manifest name: accents dropped, lower case, every run of other characters one `-`, no `-` at either
 * end, at most NAME_MAX characters. Returns "" when nothing usable is left (e.g. a description in another script).
 */
export function slugify(text: string): string {
  const slug = text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return trimName(slug, NAME_MAX);
}

/** A name from a backend id: `bkdwd_2rFM...` becomes `bkdwd-2rfm...`. */
export function nameFromId(id: string): string {
  return slugify(id);
}

function trimName(name: string, max: number): string {
  return name.length <= max ? name : name.slice(0, max).replace(/-+$/, "");
}

/**
 * Hands out unique names. Names are claimed in the caller's order, so the same input gives the same names:
 * the first object to ask for a base name gets it, later ones get `<base>-2`, `<base>-3`, ... (cut so that the
 * whole name stays within NAME_MAX).
 */
export class NameAllocator {
  private readonly taken = new Set<string>();

  /** Whether `name` is already claimed. */
  has(name: string): boolean {
    return this.taken.has(name);
  }

  /** Claims `name` exactly; false when it is already claimed. */
  claim(name: string): boolean {
    if (this.taken.has(name)) return false;
    this.taken.add(name);
    return true;
  }

  /** Claims `base` if free, else the first free `<base>-N` (N from 2). `base` must be a valid name. */
  allocate(base: string): string {
    if (this.claim(base)) return base;
    for (let n = 2; ; n++) {
      const suffix = `-${n}`;
      const candidate = `${trimName(base, NAME_MAX - suffix.length)}${suffix}`;
      if (this.claim(candidate)) return candidate;
    }
  }
}
