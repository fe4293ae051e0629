/**
 * What a stack owns (`edgeplan state list`), as text or JSON. Reads the StackState only. Pure.
 */
import type { StackState } from "../core/state-list.js";
import { StackStateDocumentSchema } from "../model/state-schema.js";

/** The text of `state list`, ending with a newline: one line per object, then where the bookkeeping lives. */
export function renderStackStateText(state: StackState): string {
  const out = [`Stack "${state.stack}" owns:`];
  const { weighted_backends: wbs, modules } = state;
  out.push(`  weighted backends (${wbs.length}):`);
  if (wbs.length === 0) out.push("    none");
  for (const w of wbs) out.push(`    ${w.address} ${w.id}${w.protected ? " (protected)" : ""}`);
  out.push(`  route modules (${modules.length}):`);
  if (modules.length === 0) out.push("    none");
  for (const m of modules) out.push(`    ${m.address}${m.protected ? " (protected)" : ""}`);
  out.push(`Inventory objects (the modules it owns): ${state.inventory.length > 0 ? state.inventory.join(", ") : "none"}`);
  out.push(`Lease objects (an apply running): ${state.leases.length > 0 ? state.leases.join(", ") : "none"}`);
  return `${out.join("\n")}\n`;
}

/**
 * The JSON of `state list`: one document, `{format_version, kind: "state", ...}`, its keys in the order of its schema
 * (src/model/state-schema.ts), two-space indented, ending with a newline.
 */
export function renderStackStateJson(state: StackState): string {
  return `${JSON.stringify(StackStateDocumentSchema.parse({ format_version: 1, kind: "state", ...state }), null, 2)}\n`;
}
