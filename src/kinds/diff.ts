/**
 * Field-level differences of normalised objects, and short line diffs of long text (IdP metadata XML). Pure.
 */
import { jsonEqual as equal } from "../model/json-equal.js";
import type { FieldDiff, JsonValue } from "../model/plan.js";

/** Lines of context around each changed run in a line diff. */
const CONTEXT = 3;
/** A line diff longer than this is cut, saying how much was left out. */
const MAX_DIFF_LINES = 40;
/** Lines shown of a long text that is added or removed as a whole. */
const MAX_WHOLE_LINES = 6;
/** Longer lines are cut (XML often comes as one long line). */
const MAX_LINE_WIDTH = 160;
/** Above this many cells the middle of a diff is shown as removed-then-added instead of aligned. */
const MAX_LCS_CELLS = 2_000_000;

/** True for strings shown as a line diff rather than `before -> after`. */
export function isLongText(value: JsonValue): value is string {
  return typeof value === "string" && (value.includes("\n") || value.length > 120);
}

/**
 * Diffs two flat records key by key, comparing values with deep equality. Keys come in `order` first (the order a
 * kind documents its fields in), then the other keys of either side, sorted. Paths are `prefix + key`. Long text
 * gets a short line diff in `lines`.
 */
export function diffRecords(
  before: Readonly<Record<string, JsonValue>>,
  after: Readonly<Record<string, JsonValue>>,
  prefix = "",
  order: readonly string[] = [],
): FieldDiff[] {
  const all = new Set([...Object.keys(before), ...Object.keys(after)]);
  const keys = [...order.filter((k) => all.has(k)), ...[...all].filter((k) => !order.includes(k)).sort()];
  const diffs: FieldDiff[] = [];
  for (const key of keys) {
    const has = { before: Object.hasOwn(before, key), after: Object.hasOwn(after, key) };
    const b = has.before ? (before[key] as JsonValue) : null;
    const a = has.after ? (after[key] as JsonValue) : null;
    if (has.before && has.after && equal(b, a)) continue;
    diffs.push(buildFieldDiff(prefix + key, has.before ? b : undefined, has.after ? a : undefined));
  }
  return diffs;
}

/** One field diff; `undefined` means the field is absent on that side. */
export function buildFieldDiff(path: string, before: JsonValue | undefined, after: JsonValue | undefined): FieldDiff {
  const op = before === undefined ? "add" : after === undefined ? "remove" : "change";
  let lines: string[] | null = null;
  if (op === "change" && (isLongText(before ?? null) || isLongText(after ?? null))) {
    lines = buildLineDiff(textOf(before ?? null), textOf(after ?? null));
  } else if (op === "add" && isLongText(after ?? null)) {
    lines = buildWholeText("+ ", after as string);
  } else if (op === "remove" && isLongText(before ?? null)) {
    lines = buildWholeText("- ", before as string);
  }
  return { path, op, before: before ?? null, after: after ?? null, lines };
}

function textOf(value: JsonValue): string {
  return typeof value === "string" ? value : JSON.stringify(value);
}

function splitLines(text: string): string[] {
  const lines = text.split("\n").map((l) => (l.endsWith("\r") ? l.slice(0, -1) : l));
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

function cut(line: string): string {
  return line.length > MAX_LINE_WIDTH ? `${line.slice(0, MAX_LINE_WIDTH)}…` : line;
}

/** The first lines of a text added or removed as a whole, and how many lines it has. */
export function buildWholeText(marker: "+ " | "- ", text: string): string[] {
  const lines = splitLines(text);
  const shown = lines.slice(0, MAX_WHOLE_LINES).map((l) => marker + cut(l));
  if (lines.length > MAX_WHOLE_LINES) shown.push(`… ${lines.length - MAX_WHOLE_LINES} more lines (${lines.length} in all)`);
  return shown;
}

type Op = { kind: " " | "-" | "+"; text: string; b: number; a: number };

/**
 * A unified line diff of two texts with a few lines of context, hunks headed `@@ -b,n +a,m @@`, each line cut to a
 * readable width, and the whole cut after a few dozen lines (saying how many were left out).
 */
export function buildLineDiff(before: string, after: string): string[] {
  const ops = alignLines(splitLines(before), splitLines(after));
  const changed = ops.map((o, i) => (o.kind === " " ? -1 : i)).filter((i) => i >= 0);
  if (changed.length === 0) {
    // Same lines, different bytes (line endings or a final newline).
    return ["  (the texts differ only in line endings or the final newline)"];
  }
  // Group changed lines into hunks whose context windows touch.
  const hunks: Array<[number, number]> = [];
  for (const i of changed) {
    const start = Math.max(0, i - CONTEXT);
    const end = Math.min(ops.length - 1, i + CONTEXT);
    const last = hunks[hunks.length - 1];
    if (last && start <= last[1] + 1) last[1] = end;
    else hunks.push([start, end]);
  }
  const out: string[] = [];
  for (const [start, end] of hunks) {
    const slice = ops.slice(start, end + 1);
    const bLines = slice.filter((o) => o.kind !== "+");
    const aLines = slice.filter((o) => o.kind !== "-");
    const bStart = bLines[0] ? bLines[0].b + 1 : (slice[0]?.b ?? 0);
    const aStart = aLines[0] ? aLines[0].a + 1 : (slice[0]?.a ?? 0);
    out.push(`@@ -${bStart},${bLines.length} +${aStart},${aLines.length} @@`);
    for (const o of slice) out.push(`${o.kind} ${cut(o.text)}`);
  }
  if (out.length > MAX_DIFF_LINES) {
    const left = out.length - MAX_DIFF_LINES;
    return [...out.slice(0, MAX_DIFF_LINES), `… ${left} more diff lines`];
  }
  return out;
}

/** Aligns two line arrays: common prefix and suffix, then a longest common subsequence of the middle. */
function alignLines(b: string[], a: string[]): Op[] {
  let pre = 0;
  while (pre < b.length && pre < a.length && b[pre] === a[pre]) pre++;
  let suf = 0;
  while (suf < b.length - pre && suf < a.length - pre && b[b.length - 1 - suf] === a[a.length - 1 - suf]) suf++;
  const ops: Op[] = [];
  for (let i = 0; i < pre; i++) ops.push({ kind: " ", text: b[i] as string, b: i, a: i });
  const bm = b.slice(pre, b.length - suf);
  const am = a.slice(pre, a.length - suf);
  const n = bm.length;
  const m = am.length;
  if (n * m > MAX_LCS_CELLS) {
    for (let i = 0; i < n; i++) ops.push({ kind: "-", text: bm[i] as string, b: pre + i, a: pre });
    for (let j = 0; j < m; j++) ops.push({ kind: "+", text: am[j] as string, b: pre + n, a: pre + j });
  } else {
    // lcs[i][j]: length of the LCS of bm[i..] and am[j..], in one flat array.
    const w = m + 1;
    const lcs = new Uint32Array((n + 1) * w);
    for (let i = n - 1; i >= 0; i--) {
      for (let j = m - 1; j >= 0; j--) {
        lcs[i * w + j] = bm[i] === am[j] ? (lcs[(i + 1) * w + j + 1] as number) + 1 : Math.max(lcs[(i + 1) * w + j] as number, lcs[i * w + j + 1] as number);
      }
    }
    let i = 0;
    let j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && bm[i] === am[j]) {
        ops.push({ kind: " ", text: bm[i] as string, b: pre + i, a: pre + j });
        i++;
        j++;
      } else if (i < n && (j >= m || (lcs[(i + 1) * w + j] as number) >= (lcs[i * w + j + 1] as number))) {
        // Removed lines before added ones, as unified diffs show them.
        ops.push({ kind: "-", text: bm[i] as string, b: pre + i, a: pre + j });
        i++;
      } else {
        ops.push({ kind: "+", text: am[j] as string, b: pre + i, a: pre + j });
        j++;
      }
    }
  }
  for (let k = 0; k < suf; k++) {
    const bi = b.length - suf + k;
    const ai = a.length - suf + k;
    ops.push({ kind: " ", text: b[bi] as string, b: bi, a: ai });
  }
  return ops;
}
