/**
 * What `edgeplan agent status` prints, as `flux get kustomizations` does: one aligned line per stack, or one stack's
 * conditions, revisions, drift, what waits and its last reconciliations. No colour. Pure.
 */
import type { Condition, HistoryEntry, Revision, StackStatus } from "../model/agent.js";

/** The condition of `type`, if the status has it. */
export function conditionOf(status: StackStatus, type: Condition["type"]): Condition | undefined {
  return status.conditions.find((c) => c.type === type);
}

/** The message a stack's line shows: Stalled's while stalled, else Ready's. */
export function headlineOf(status: StackStatus): string {
  const stalled = conditionOf(status, "Stalled");
  const line = stalled?.status === "True" ? stalled.message : (conditionOf(status, "Ready")?.message ?? "");
  return line.split("\n")[0] ?? "";
}

export function shortSha(r: Revision | null): string {
  return r ? r.sha.slice(0, 12) : "-";
}

/** Aligned columns, two spaces apart, with the last column as it is. */
function columns(rows: string[][]): string {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length))) ?? [];
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/**
 * Text for a terminal, with every control character but the line feed written as `\xHH`: a commit's subject or
 * author, or an error message, holding an escape sequence is shown, never obeyed by the terminal.
 */
function printable(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is escaped
  return text.replace(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

export function renderAgentStatusTable(stacks: StackStatus[]): string {
  if (stacks.length === 0) return "No stacks.\n";
  const rows = [["NAME", "MODE", "REVISION", "READY", "SUSPENDED", "MESSAGE"]];
  for (const s of stacks)
    rows.push([s.name, s.mode, shortSha(s.last_applied_revision), conditionOf(s, "Ready")?.status ?? "Unknown", s.suspended ? "True" : "False", headlineOf(s)]);
  return `${printable(columns(rows))}\n`;
}

function revisionLine(r: Revision | null): string {
  return r ? `${shortSha(r)} "${r.subject}" by ${r.author} (${r.at})` : "none";
}

export function renderAgentStackText(status: StackStatus, history: HistoryEntry[]): string {
  const lines = [`Stack ${status.name} (source ${status.source}, mode ${status.mode}${status.suspended ? ", suspended" : ""})`, "", "Conditions:"];
  for (const c of status.conditions) lines.push(`  ${c.type}=${c.status} ${c.reason} since ${c.since}${c.message ? `: ${c.message.split("\n").join("\n    ")}` : ""}`);
  lines.push("", `Last applied revision:   ${revisionLine(status.last_applied_revision)}`, `Last attempted revision: ${revisionLine(status.last_attempted_revision)}`);
  if (status.drift.length > 0) {
    lines.push("", `Drift (since ${status.drift_since ?? "?"}):`, ...status.drift.map((d) => `  ${d.address}: ${d.action} (${d.detail})`));
  }
  if (status.waiting.length > 0) {
    lines.push("", "Waiting for a person:");
    for (const w of status.waiting) lines.push(`  ${w.rule} (${w.level}): ${w.message}`, `    ${w.command || "a deny policy: only a new commit lifts it"}`);
  }
  if (status.rollouts.length > 0) lines.push("", "Rollouts:", ...status.rollouts.map((r) => `  ${r.address}: ${r.summary}`));
  if (history.length > 0) {
    lines.push("", "History (newest first):");
    for (const h of history)
      lines.push(`  ${h.finished_at}  ${h.trigger.padEnd(8)}  ${shortSha(h.revision).padEnd(12)}  ${h.result.padEnd(8)}  ${(h.message.split("\n")[0] ?? "").slice(0, 160)}`);
  }
  return `${printable(lines.join("\n"))}\n`;
}
