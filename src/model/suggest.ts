/**
 * "Did you mean ...?" suggestions for misspelt field names, kinds, names and enum values. Pure.
 */

/** Levenshtein edit distance (insertions, deletions, substitutions), with an early exit above `limit`. */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (a === b) return 0;
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      const v = Math.min((prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1, (prev[j - 1] ?? 0) + cost);
      cur.push(v);
      if (v < rowMin) rowMin = v;
    }
    if (rowMin > limit) return limit + 1;
    prev = cur;
  }
  return prev[b.length] ?? 0;
}

/**
 * The candidate closest to `input`, or undefined when none is close enough to be a plausible typo. A candidate that
 * differs only in letter case always qualifies; otherwise the distance may be at most a third of the candidate's
 * length (at least 1, at most 3), so that short words do not suggest unrelated ones. Ties go to the earlier candidate.
 */
export function closest(input: string, candidates: Iterable<string>): string | undefined {
  const lower = input.toLowerCase();
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    if (c === input) continue;
    if (c.toLowerCase() === lower) return c;
    const limit = Math.min(3, Math.max(1, Math.floor(c.length / 3)));
    const d = editDistance(lower, c.toLowerCase(), limit);
    if (d <= limit && d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best;
}

/** `"; did you mean X?"` when a close candidate exists, else `fallback` (already starting with `"; "` or empty). */
export function didYouMean(input: string, candidates: Iterable<string>, fallback = ""): string {
  const c = closest(input, candidates);
  return c === undefined ? fallback : `; did you mean ${c}?`;
}
