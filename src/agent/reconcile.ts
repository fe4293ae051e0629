/**
 * One reconciliation of one stack (docs/agent.md): today's plan, from a commit's snapshot, against the live state the
 * stacks of the account share this cycle; then, by the stack's mode, nothing more (detect, warn) or today's apply
 * under the stack's lease (correct), with the stack's policies and risks: a plan that a `deny` refuses, or whose
 * risks no person acknowledged for its digest, is not applied and waits. The loop (src/agent/agent.ts) decides when,
 * and keeps what this returns.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Listings } from "../api/fetch-live.js";
import { unacknowledgedRisks } from "../apply/approval.js";
import { idleRollouts } from "../apply/wait.js";
import { runApply, type ApplyCommandOptions } from "../commands/apply.js";
import { captureIO, type CommandIO } from "../commands/io.js";
import { fetchForPlan, planEnvironment, planOptionsFrom } from "../commands/plan.js";
import { withProjectFile, type ProjectFillable } from "../commands/project.js";
import { loadManifests, type Session } from "../commands/session.js";
import { buildPlanRecord } from "../core/plan-digest.js";
import { buildPlan, planHasChanges } from "../core/plan.js";
import { deniedResults } from "../core/policies.js";
import type { AckRecord, AgentStack, DriftEntry, ReconcileResult, RolloutEntry, WaitingEntry } from "../model/agent.js";
import { canonicalJson } from "../model/canonical.js";
import { EdgeplanError, EXIT, ManifestError } from "../model/errors.js";
import type { Change, Plan } from "../model/plan.js";
import { PROJECT_FILE } from "../model/project-schema.js";
import { renderText } from "../render/text.js";

/** Characters of a plan's digest that an acknowledgement must give at least (the page and messages show these). */
export const ACK_DIGEST_CHARS = 12;

/** What one reconciliation needs. */
export interface ReconcileInput {
  stack: AgentStack;
  /** The commit's snapshot: the repository's files at that commit, in a folder of the agent's own. */
  dir: string;
  /** The client of the stack's account (one rate budget for its stacks), as a session of this stack. */
  session: Session;
  /** The account's listings of this cycle, shared by its stacks. */
  listings: Listings;
  /** The acknowledgements of a plan of this stack (recorded with `agent ack`, or in the merged pull request). */
  acks: (question: PlanAcks) => Promise<AckRecord[]>;
  /** Aborted when the agent stops: the apply finishes the writes in flight, gives back its lease and ends. */
  signal: AbortSignal;
  /** The agent's environment (variables the manifests may read, EDGEPLAN_VAR_*). */
  env: Record<string, string | undefined>;
  lockTtl?: string;
}

/** The plan whose acknowledgements are asked for: its digest, environment, and the rules that wait. */
export interface PlanAcks {
  digest: string;
  environment: string | undefined;
  rules: string[];
}

/** The options a stack's plan and apply run with (the project file of its folder fills the rest). */
type StackOptions = ApplyCommandOptions & ProjectFillable;

/** What one reconciliation came to. */
export interface ReconcileOutcome {
  result: ReconcileResult;
  /** One line: what happened. */
  message: string;
  /** The CamelCase reason of the stack's conditions. */
  reason: string;
  /** A manifest or project error at a line of the commit: the stack is Stalled until a new commit. */
  stalled: boolean;
  digest: string | null;
  planText: string | null;
  report: string | null;
  drift: DriftEntry[];
  waiting: WaitingEntry[];
  rollouts: RolloutEntry[];
  /** When a rollout's next step is due (ms since the epoch): the loop comes back then. */
  nextStepAt: number | null;
  /** Changes the apply carried out, one line each (for notifications). */
  applied: string[];
}

/** Plans the stack and, in mode correct, applies the plan when nothing waits for a person. Never throws. */
export async function reconcileStack(input: ReconcileInput): Promise<ReconcileOutcome> {
  const io = captureIO(input.env, join(input.dir, input.stack.path));
  try {
    return await planAndApply(input, io);
  } catch (err) {
    return failure(err, io, input.stack.path);
  }
}

async function planAndApply(input: ReconcileInput, io: CommandIO & { out: string; err: string }): Promise<ReconcileOutcome> {
  const { stack, session } = input;
  const options = await withProjectFile(commandOptions(input, io.cwd), io);
  checkApiUrl(options.apiUrl, session);
  const loaded = await loadManifests(options.paths, io, options.environment ?? null);
  const planOptions = { ...planOptionsFrom(options, stack.name), environment: planEnvironment(options.environment, session) };
  const { desired, live, routes } = await fetchForPlan(session.client, loaded.desired, planOptions, input.listings);
  const now = session.clock.now();
  const plan = buildPlan(desired, live, { ...planOptions, now, budget: session.budget }, routes);
  const digest = buildPlanRecord(plan).digest;
  const planText = io.redactor ? io.redactor.redact(renderText(plan, { color: false })) : renderText(plan, { color: false });
  const base = { digest, planText, report: null, drift: driftOf(plan.changes), waiting: [], rollouts: [], nextStepAt: null, applied: [], stalled: false };
  if (!planHasChanges(plan)) return { ...base, result: "in_sync", reason: "ReconciliationSucceeded", message: "the live state matches the manifests" };
  const idle = idleRollouts(plan, now);
  if (idle !== null) return rolloutsOnly(plan, idle, base);
  if (stack.mode !== "correct") {
    const n = plan.changes.length;
    return { ...base, result: "drift", reason: "DriftDetected", message: `${n} ${n === 1 ? "change" : "changes"} not applied (mode ${stack.mode})` };
  }
  const waiting = await waitingFor(plan, digest, input);
  if (waiting.length > 0) {
    const rules = waiting.map((w) => w.rule).join(", ");
    return { ...base, waiting, result: "waiting", reason: "WaitingForPerson", message: `waits for a person: ${rules} (plan ${digest.slice(0, ACK_DIGEST_CHARS)})` };
  }
  return applyPlan(input, options, digest, plan, base, io);
}

/**
 * The key goes only where the agent's configuration (or, without an `api_url` there, the environment the agent read
 * when it opened the account) says: a commit that names another API for the stack is refused, not followed.
 */
function checkApiUrl(fromProject: string | undefined, session: Session): void {
  if (fromProject === undefined || sameUrl(fromProject, session.api.url)) return;
  throw new ManifestError(
    [],
    `the project file names the API ${fromProject} for this stack, but the agent reconciles it at ${session.api.url}; nothing was sent (change api_url in the agent's configuration to move the stack)`,
  );
}

function sameUrl(a: string, b: string): boolean {
  const norm = (u: string) => {
    try {
      return new URL(u).href.replace(/\/+$/, "");
    } catch {
      return u;
    }
  };
  return norm(a) === norm(b);
}

/** The command options of the stack's plan and apply: its folder, environment, stack, prune. */
function commandOptions(input: ReconcileInput, cwd: string): StackOptions {
  const { stack } = input;
  const config = existsSync(join(cwd, PROJECT_FILE)) ? PROJECT_FILE : undefined;
  return {
    paths: [] as string[],
    ...(config ? { config } : {}),
    ...(stack.env ? { env: stack.env } : {}),
    stack: stack.name,
    prune: stack.prune,
  };
}

/** A plan that only waits for rollout steps (not due yet, paused at a gate, or halted). */
function rolloutsOnly(plan: Plan, idle: NonNullable<ReturnType<typeof idleRollouts>>, base: Omit<ReconcileOutcome, "result" | "reason" | "message">): ReconcileOutcome {
  const rollouts = rolloutEntries(plan);
  const due = plan.changes.flatMap((c) => (c.kind === "weighted_backend" && c.rollout?.status === "due" ? [Date.parse(c.rollout.due_at)] : []));
  const nextStepAt = due.length > 0 ? Math.min(...due) : null;
  const message = idle.lines.join("; ");
  if (idle.paused || idle.halted) {
    const waiting = plan.changes.flatMap((c): WaitingEntry[] =>
      c.kind === "weighted_backend" && (c.rollout?.status === "paused" || c.rollout?.status === "halted")
        ? [
            {
              rule: `rollout ${c.rollout.status}`,
              level: "ack",
              message: idle.lines.find((l) => l.startsWith(c.address)) ?? c.address,
              digest: base.digest ?? "",
              command: c.rollout.status === "paused" ? `edgeplan rollout promote ${c.name}` : `edgeplan rollout retry ${c.name}`,
            },
          ]
        : [],
    );
    return { ...base, rollouts, nextStepAt, waiting, result: "waiting", reason: "WaitingForPerson", message };
  }
  return { ...base, rollouts, nextStepAt, drift: [], result: "in_sync", reason: "RolloutProgressing", message };
}

/** The rollouts of the plan, one line each. */
function rolloutEntries(plan: Plan): RolloutEntry[] {
  return plan.changes.flatMap((c) =>
    c.kind === "weighted_backend" && c.rollout ? [{ address: c.address, summary: `step ${c.rollout.step} of ${c.rollout.steps}, ${c.rollout.status}` }] : [],
  );
}

/** What waits for a person: each `deny` policy that fails, and each risk no acknowledgement for this digest covers. */
async function waitingFor(plan: Plan, digest: string, input: ReconcileInput): Promise<WaitingEntry[]> {
  const short = digest.slice(0, ACK_DIGEST_CHARS);
  const denied = deniedResults(plan).map(
    (d): WaitingEntry => ({ rule: d.rule, level: "deny", message: d.address ? `${d.address}: ${d.message}` : d.message, digest, command: "" }),
  );
  const rules = [...new Set(plan.risks.map((r) => r.rule))];
  const acked = rules.length === 0 ? [] : (await input.acks({ digest, environment: plan.environment?.name, rules })).map((a) => a.rule);
  const risks = unacknowledgedRisks(plan, acked, false).map(
    (r): WaitingEntry => ({ rule: r.rule, level: "ack", message: r.message, digest, command: `edgeplan agent ack ${input.stack.name} ${r.rule} --digest ${short}` }),
  );
  return [...denied, ...risks];
}

/**
 * Today's apply of the stack, under its lease, with the acknowledged rules; the plan it makes under the lease must be
 * the one acknowledged (same digest) when any rule was, else it refuses and the next reconciliation plans again.
 */
async function applyPlan(
  input: ReconcileInput,
  options: StackOptions,
  digest: string,
  plan: Plan,
  base: Omit<ReconcileOutcome, "result" | "reason" | "message">,
  io: CommandIO & { out: string; err: string },
): Promise<ReconcileOutcome> {
  const ack = plan.risks.map((r) => r.rule);
  const result = await runApply(
    {
      ...options,
      ...(options.environment?.name ? { env: options.environment.name } : {}),
      autoApprove: true,
      ack,
      quiet: true,
      signal: input.signal,
      session: input.session,
      lockTimeout: "2m",
      ...(input.lockTtl ? { lockTtl: input.lockTtl } : {}),
      review: (now) => {
        const again = buildPlanRecord(now).digest;
        if (ack.length > 0 && again !== digest) {
          throw new EdgeplanError(
            `the plan changed since its risks were acknowledged (plan ${again.slice(0, ACK_DIGEST_CHARS)}, acknowledged ${digest.slice(0, ACK_DIGEST_CHARS)}); nothing was written`,
          );
        }
      },
    },
    io,
  );
  const report = [io.out, io.err].filter(Boolean).join("\n") || null;
  const applied = result.exitCode === EXIT.ok && result.plan ? driftOf(result.plan.changes).map((d) => `${d.address}: ${d.action}`) : [];
  if (result.exitCode === EXIT.ok) {
    const nothing = result.hasChanges === false;
    return {
      ...base,
      report,
      applied,
      result: nothing ? "in_sync" : "applied",
      reason: "ReconciliationSucceeded",
      message: result.summary ?? (nothing ? "nothing to apply" : "applied"),
    };
  }
  const message = result.summary ?? lastLine(io.err) ?? `apply exited ${result.exitCode}`;
  return { ...base, report, applied, result: "failed", reason: result.exitCode === EXIT.paused ? "RolloutPaused" : "ApplyFailed", message };
}

/**
 * A reconciliation that ended in an error: a manifest error stalls the stack (until a new commit), each problem at
 * its `file:line:col` from the repository's root; anything else is retried.
 */
function failure(err: unknown, io: CommandIO & { err: string }, folder: string): ReconcileOutcome {
  const stalled = err instanceof ManifestError;
  const atLines = io.err
    .trim()
    .split("\n")
    .filter((l) => /^\S+:\d+:\d+: /.test(l))
    .map((l) => (folder === "." ? l : `${folder}/${l}`));
  const detail = stalled ? atLines.join("\n") || (err as Error).message : err instanceof Error ? err.message : String(err);
  return {
    result: stalled ? "stalled" : "failed",
    reason: stalled ? "ManifestError" : err instanceof EdgeplanError ? "ReconciliationFailed" : "InternalError",
    message: detail,
    stalled,
    digest: null,
    planText: null,
    report: io.err || null,
    drift: [],
    waiting: [],
    rollouts: [],
    nextStepAt: null,
    applied: [],
  };
}

/** The plan's changes as drift entries: address, action, and the fields that differ. */
function driftOf(changes: readonly Change[]): DriftEntry[] {
  return changes.filter((c) => c.kind !== "inventory").map((c) => ({ address: c.address, action: c.action, detail: fieldsOf(c) }));
}

function fieldsOf(c: Change): string {
  const before = (c.before ?? {}) as Record<string, unknown>;
  const after = (c.after ?? {}) as Record<string, unknown>;
  if (c.before === null) return "missing on the live side";
  if (c.after === null) return "not in the manifests";
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => canonicalJson(before[k] ?? null) !== canonicalJson(after[k] ?? null));
  return keys.length > 0 ? `differs in ${keys.sort().join(", ")}` : "differs";
}

function lastLine(text: string): string | undefined {
  return text.trim().split("\n").filter(Boolean).pop();
}
