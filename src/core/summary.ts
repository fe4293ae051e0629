/** The summary line's counts of a plan: changes by kind and action, and the orphans kept. Pure. */
import type { Change, Orphan, PlanSummary } from "../model/plan.js";

/** The summary of a plan: its changes counted by kind and action, and the orphans it keeps. */
export function buildSummary(changes: readonly Pick<Change, "kind" | "action">[], orphans: readonly Pick<Orphan, "action">[]): PlanSummary {
  const kindOf = (c: Pick<Change, "kind">): "wb" | "module" | "inventory" => (c.kind === "weighted_backend" ? "wb" : c.kind === "inventory" ? "inventory" : "module");
  const count = (kind: "wb" | "module", action: string): number => changes.filter((c) => kindOf(c) === kind && c.action === action).length;
  return {
    create: count("wb", "create"),
    update: count("wb", "update"),
    delete: count("wb", "delete"),
    adopt: count("wb", "adopt"),
    takeover: count("wb", "takeover"),
    rename: count("wb", "rename"),
    rollout: count("wb", "rollout"),
    module_replace: count("module", "replace"),
    module_delete: count("module", "delete"),
    orphans_kept: orphans.filter((o) => o.action === "keep").length,
    total: changes.length,
  };
}
