/**
 * Where the rollouts of a stack stand (`edgeplan rollout status`), as text or JSON. Reads the statuses only. Pure.
 */
import type { RolloutStatus } from "../model/rollout-schema.js";
import { RolloutStatusDocumentSchema } from "../model/rollout-schema.js";
import { sameWeights, shareOf } from "../kinds/weighted-backend.js";
import { completeCommands } from "../core/command-text.js";
import { promoteCommand } from "../core/rollout.js";

/** `bkdhr_1 9000 (90%), bkdhr_2 1000 (10%)` */
function weightsText(w: Readonly<Record<string, number>>): string {
  const total = Object.values(w).reduce((s, x) => s + x, 0);
  const children = Object.entries(w);
  return children.length === 0 ? "no children" : children.map(([child, weight]) => `${child} ${weight} (${shareOf(weight, total)}%)`).join(", ");
}

/**
 * A halted rollout: the step it stopped at, why, and where traffic is: back at the weights it started from (the halt
 * writes them), or still at the step's when that write failed (the next apply writes it again).
 */
function halted(r: RolloutStatus): string {
  const at = `halted at step ${r.step}${r.steps === null ? "" : ` of ${r.steps}`}: ${r.halted ?? ""}`;
  return sameWeights(r.weights, r.from)
    ? `${at}; rolled back to the weights it started from`
    : `${at}; not rolled back yet: traffic is still at the step's weights (the next apply writes the starting weights)`;
}

/** What one rollout does next, after the step it wrote. */
function standing(r: RolloutStatus): string {
  const written = `step ${r.step}${r.steps === null ? "" : ` of ${r.steps}`} written`;
  switch (r.status) {
    case "due":
      return `${written}; the next step is due now (the next apply takes it)`;
    case "waiting":
      return `${written}; the next step is due at ${r.next_due_at ?? ""}`;
    case "paused":
      return `${written}; paused: ${r.paused ?? ""}; run "${promoteCommand(r.name)}" to go on`;
    case "halted":
      return `${halted(r)}; change the manifest, or run "edgeplan rollout retry ${r.name}", to start it again`;
    case "unknown":
      return `${written}; no manifest of it was read (or it names another target): how many steps and when the next is due are not known`;
  }
}

/**
 * The text of `rollout status`, ending with a newline: each rollout, its weights now, where it started and ends.
 * `where` (the flags that reach the same API and stack) completes the commands it quotes.
 */
export function renderRolloutStatusText(stack: string, rollouts: readonly RolloutStatus[], where = ""): string {
  if (rollouts.length === 0) return `Stack "${stack}" has no rollout under way or halted.\n`;
  const out = [`Rollouts of stack "${stack}" (${rollouts.length}):`];
  for (const r of rollouts) {
    out.push(`  ${r.address} (${r.id}): ${completeCommands(standing(r), where)}`);
    out.push(`    weights now: ${weightsText(r.weights)}`);
    out.push(`    started from: ${weightsText(r.from)}`);
    out.push(`    final: ${r.final === null ? "not known without the manifest" : weightsText(r.final)} (target ${r.target})`);
    out.push(`    last step written at ${r.step_at}`);
    if (r.promoted !== null) out.push(`    promoted past step ${r.promoted}: the step after it is taken with no pause or check before it`);
  }
  return `${out.join("\n")}\n`;
}

/**
 * The JSON of `rollout status`: one document, `{format_version, kind: "rollout_status", stack, rollouts}`, its keys
 * in the order of its schema (src/model/rollout-schema.ts), two-space indented, ending with a newline.
 */
export function renderRolloutStatusJson(stack: string, rollouts: readonly RolloutStatus[]): string {
  return `${JSON.stringify(RolloutStatusDocumentSchema.parse({ format_version: 1, kind: "rollout_status", stack, rollouts }), null, 2)}\n`;
}
