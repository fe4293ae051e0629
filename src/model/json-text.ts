/**
 * Checks of JSON text made before it is parsed: the server's request bodies and the saved plans apply reads both
 * come from outside, and a parser (or the code that walks its result) recurses once per level. Pure.
 */

/**
 * True when `text` nests objects and arrays deeper than `max` (strings are skipped, escapes honoured). One loop, no
 * recursion, so any depth of input is measured; the text need not be valid JSON.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
      continue;
    }
    if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      if (++depth > max) return true;
    } else if (c === 125 || c === 93) depth--;
  }
  return false;
}
