/**
 * What a reconciliation's outcome makes of a stack's status (conditions as Flux's kstatus has them, revisions, drift,
 * what waits), which event it is for the notifiers, and whether the history keeps it. Pure.
 */
import type { AgentEvent, AgentStack, Condition, ConditionType, Revision, StackStatus } from "../model/agent.js";
import type { ReconcileOutcome } from "./reconcile.js";

/** The status of a stack the agent has not reconciled yet. */
export function initialStatus(stack: AgentStack, suspended: boolean, now: string): StackStatus {
  return {
    name: stack.name,
    source: stack.source,
    mode: stack.mode,
    suspended,
    conditions: [
      { type: "Ready", status: "Unknown", reason: "Progressing", message: "not reconciled yet", since: now },
      { type: "Reconciling", status: "False", reason: "Waiting", message: "waiting for the first fetch of its source", since: now },
      { type: "Stalled", status: "False", reason: "Progressing", message: "", since: now },
    ],
    last_applied_revision: null,
    last_attempted_revision: null,
    drift: [],
    drift_since: null,
    waiting: [],
    rollouts: [],
    last_reconciled_at: null,
    failures: 0,
  };
}

/** `status` with one condition set; its `since` moves only when its status or reason changes. */
export function withCondition(status: StackStatus, type: ConditionType, value: Condition["status"], reason: string, message: string, now: string): StackStatus {
  const previous = status.conditions.find((c) => c.type === type);
  const since = previous && previous.status === value && previous.reason === reason ? previous.since : now;
  const next: Condition = { type, status: value, reason, message, since };
  const conditions = (["Ready", "Reconciling", "Stalled"] as const).map((t) => (t === type ? next : (status.conditions.find((c) => c.type === t) ?? next)));
  return { ...status, conditions };
}

/** The stack's status after a reconciliation of `revision` came to `outcome`. */
export function statusAfter(previous: StackStatus, outcome: ReconcileOutcome, revision: Revision | null, now: string): StackStatus {
  const ok = outcome.result === "applied" || outcome.result === "in_sync";
  let status: StackStatus = {
    ...previous,
    last_attempted_revision: revision,
    last_applied_revision: ok ? revision : previous.last_applied_revision,
    drift: outcome.result === "drift" || outcome.result === "waiting" ? outcome.drift : [],
    waiting: outcome.waiting,
    rollouts: outcome.rollouts,
    last_reconciled_at: now,
    failures: outcome.result === "failed" ? previous.failures + 1 : 0,
  };
  status.drift_since = status.drift.length === 0 ? null : (previous.drift_since ?? now);
  status = withCondition(status, "Ready", ok ? "True" : "False", outcome.reason, outcome.message, now);
  status = withCondition(status, "Reconciling", "False", outcome.reason, "", now);
  return withCondition(status, "Stalled", outcome.stalled ? "True" : "False", outcome.stalled ? outcome.reason : "Progressing", outcome.stalled ? outcome.message : "", now);
}

/**
 * The event a reconciliation is for the notifiers, or null for none: a correction of what changed on the live side
 * (the same revision as the last applied) is `drift_corrected`; a success after failures is `recovered`; in mode
 * detect, drift is only recorded.
 */
export function eventOf(previous: StackStatus, outcome: ReconcileOutcome, revision: Revision | null, mode: AgentStack["mode"]): AgentEvent | null {
  const wasFailing = previous.failures > 0 || previous.conditions.some((c) => c.type === "Stalled" && c.status === "True");
  switch (outcome.result) {
    case "applied":
      if (wasFailing) return "recovered";
      return previous.last_applied_revision !== null && previous.last_applied_revision.sha === revision?.sha ? "drift_corrected" : "applied";
    case "in_sync":
      return wasFailing ? "recovered" : null;
    case "drift":
      return mode === "warn" ? "drift_detected" : null;
    case "waiting":
      return "waiting";
    case "failed":
    case "stalled":
      return "failed";
  }
}

/** Whether the history keeps this reconciliation: not one that repeats the last in-sync entry of the same revision. */
export function worthKeeping(
  last: { result: string; revision: Revision | null; digest: string | null } | undefined,
  outcome: ReconcileOutcome,
  revision: Revision | null,
): boolean {
  if (outcome.result !== "in_sync" || last === undefined) return true;
  return !(last.result === "in_sync" && last.revision?.sha === revision?.sha && last.digest === outcome.digest);
}
