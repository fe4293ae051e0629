/**
 * Traffic diagrams: a Mermaid flowchart for each weighted backend whose split changes, drawn in the Markdown plan
 * (GitHub renders ```mermaid blocks in comments and job summaries). The weighted backend is on the left, each child
 * on the right, each arrow labelled with the child's share before and after; children that come or go are marked.
 * Every value from the plan (names, ids) is written as Mermaid entity codes outside a small safe set, so no value can
 * end a label, start a Markdown string, inject HTML or close the fence. Reads the Plan only. Pure.
 */
import type { Change, WeightChange, WeightedBackendChange } from "../model/plan.js";
import { sameWeights, shareOf } from "../kinds/weighted-backend.js";

/** The longest label drawn (characters); longer names are cut with an ellipsis. */
export const MAX_LABEL = 60;

/** Weighted backend changes whose split moves: created, deleted, or with a child added, removed or re-weighted. */
export function trafficChanges(changes: readonly Change[]): WeightedBackendChange[] {
  return changes.filter((c): c is WeightedBackendChange => c.kind === "weighted_backend" && splitMoves(c));
}

function splitMoves(change: WeightedBackendChange): boolean {
  if (change.weights.length === 0) return false;
  return change.action === "create" || change.action === "delete" || change.weights.some((w) => w.changed || w.share_before !== w.share_after);
}

/** A child's name as drawn: its name when it has one (a weighted backend of the stack), else its id. */
export function childName(w: WeightChange): string {
  return w.name ?? w.child;
}

/**
 * A child's share before and after: `90% → 60%`, `added: 10%`, `removed: 90%`, `25%` when it stays; for a weighted
 * backend that is created or deleted, its share alone (`90%`, `was 90%`). A rollout step that is not the last adds
 * where the rollout ends: `90% → 60%, final 0%`.
 */
export function shareMove(w: WeightChange, change: WeightedBackendChange): string {
  const final = finalShare(change, w.child);
  const move = stepMove(w, change.action);
  return final === null ? move : `${move}, final ${final}%`;
}

function stepMove(w: WeightChange, action: WeightedBackendChange["action"]): string {
  if (action === "create") return `${w.share_after ?? 0}%`;
  if (action === "delete") return `was ${w.share_before ?? 0}%`;
  if (w.share_before === null) return `added: ${w.share_after ?? 0}%`;
  if (w.share_after === null) return `removed: ${w.share_before}%`;
  return w.share_before === w.share_after ? `${w.share_after}%` : `${w.share_before}% → ${w.share_after}%`;
}

/** A child's share once the rollout ends (`rollout.final`), when this change is a step before the last; else null. */
export function finalShare(change: WeightedBackendChange, child: string): number | null {
  const final = change.rollout?.final;
  if (final === undefined || sameWeights(final, change.after?.backends ?? {})) return null;
  return shareOf(
    final[child] ?? 0,
    Object.values(final).reduce((s, x) => s + x, 0),
  );
}

/** ` (added)`, ` (removed)`, or nothing: how a child that comes or goes is marked (not in a create or delete). */
export function childTag(w: WeightChange, action: WeightedBackendChange["action"]): string {
  if (action === "create" || action === "delete") return "";
  return w.before === null ? "added" : w.after === null ? "removed" : "";
}

/** The lines of one Mermaid flowchart (without the fence) for a weighted backend change. */
export function renderMermaid(change: WeightedBackendChange): string[] {
  const lines = ["flowchart LR"];
  const title = change.action === "create" ? `${change.name} (created)` : change.action === "delete" ? `${change.name} (deleted)` : change.name;
  lines.push(`  wb["${label(title)}"]`);
  const used = new Set<string>();
  change.weights.forEach((w, i) => {
    const node = `c${i}`;
    const tag = childTag(w, change.action);
    const sub = w.name !== null && !w.known_after_apply ? `<br/>${label(w.child)}` : "";
    lines.push(`  ${node}["${label(childName(w) + (tag ? ` (${tag})` : ""))}${sub}"]`);
    const arrow = tag === "removed" ? "-.->" : tag === "added" ? "==>" : "-->";
    lines.push(`  wb ${arrow}|"${label(shareMove(w, change))}"| ${node}`);
    if (tag) lines.push(`  class ${node} ${tag}`);
    if (tag) used.add(tag);
  });
  if (used.has("removed")) lines.push("  classDef removed stroke-dasharray: 5 5,opacity:0.7");
  if (used.has("added")) lines.push("  classDef added stroke-width:3px");
  return lines;
}

/** Characters written as they are; every other one becomes a Mermaid entity code (`#34;`). */
const SAFE = /[A-Za-z0-9 _.,:/()%→-]/u;

/** A value safe inside a quoted Mermaid label, cut to MAX_LABEL characters. */
export function label(text: string): string {
  const chars = [...text];
  const cut = chars.length > MAX_LABEL ? [...chars.slice(0, MAX_LABEL - 1), "…"] : chars;
  return cut.map((ch) => (SAFE.test(ch) ? ch : `#${ch.codePointAt(0)};`)).join("");
}
