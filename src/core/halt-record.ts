/**
 * The reason a rollout keeps in its owner marker when it halts or pauses, bounded. The marker lives in the object's
 * metadata, which the API caps at 4096 bytes, and anyone who can read the object reads it: the reason says which
 * check or metric stopped the rollout and why in a few words, never what was measured (a body may be a whole HTML
 * page, or hold a secret), never a URL's query or credentials (a token may ride there). Pure.
 */

/** Characters at most in a kept reason: with the rest of the marker, far below the 4096 bytes of metadata. */
export const HALT_REASON_MAX = 240;

/** Longest text value shown as itself in a reason: a word like `"down"` or `"degraded"`, not a body. */
const SHORT_TEXT_MAX = 24;

/**
 * A measured value as a reason may show it: a number or a boolean as written; a short single-word text quoted; any
 * other text, object or list by what it is (`a text of 6482 characters, not a number`), never its content.
 */
export function summarizeValue(value: unknown): string {
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (value === null) return "null";
  if (typeof value === "string") {
    if (value.length <= SHORT_TEXT_MAX && /^[\w.-]*$/.test(value)) return JSON.stringify(value);
    return `a text of ${value.length} characters, not a number`;
  }
  if (Array.isArray(value)) return `a list of ${value.length} items, not a number`;
  return "an object, not a number";
}

/** A URL in free text, up to its query or fragment; its userinfo apart. */
const URL_IN_TEXT = /\b([a-z][a-z0-9+.-]*:\/\/)([^\s/?#@"'<>]*@)?([^\s?#"'<>]*)([?#][^\s"'<>]*)?/gi;

/** Every URL in `text` without its query, fragment and credentials: `https://s.example.com/health?…`. */
export function withoutUrlSecrets(text: string): string {
  return text.replace(URL_IN_TEXT, (_m, scheme: string, _user: string | undefined, rest: string, query: string | undefined) => {
    return `${scheme}${rest}${query ? "?…" : ""}`;
  });
}

/**
 * The reason as the marker keeps it: URLs without query or credentials, control characters and runs of spaces as
 * one space, at most `HALT_REASON_MAX` characters (a longer one ends with `…`). Applied to every reason written,
 * whatever built it, so no path can put more into the marker.
 */
export function boundReason(reason: string): string {
  const flat = withoutUrlSecrets(reason)
    .replace(/[\p{Cc}\s]+/gu, " ")
    .trim();
  const chars = [...flat];
  return chars.length <= HALT_REASON_MAX ? flat : `${chars.slice(0, HALT_REASON_MAX - 1).join("")}…`;
}
