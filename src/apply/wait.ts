/**
 * One round of apply (the rollout checks, then the engine), and `apply --wait`: rounds of due rollout steps, planned
 * again from the live side before each one, until every rollout reached its manifest's weights, one halted, the
 * run was interrupted, or the next step would be due after the deadline (`--wait-timeout`). Also what apply says of
 * rollouts: when nothing is due, and how a halted rollout goes on.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type { ApiClient } from "../api/client.js";
import { EdgeplanError } from "../model/errors.js";
import type { Change, Plan, WeightedBackendChange } from "../model/plan.js";
import { parseDuration } from "../model/syntax.js";
import type { ApplyOutcome } from "../model/apply-report.js";
import { applyPlan, type ApplyOptions } from "./engine.js";
import { promoteCommand } from "../core/rollout.js";
import type { Analyzer } from "./analysis.js";
import { pauseLine, rollbackFailedLine } from "../render/apply-report.js";
import { prepareRolloutRun, settleRollbacks, type Checker, type HeldChange, type RolloutRun } from "./rollout.js";

/** What one round did: the engine's outcome, the changes held back, the rollouts it halted or paused, the measurements. */
export interface Round {
  outcome: ApplyOutcome;
  held: HeldChange[];
  halted: RolloutRun["halted"];
  paused: RolloutRun["paused"];
  analysis: RolloutRun["analysis"];
}

export interface RoundOptions extends ApplyOptions {
  checker: Checker;
  analyzer: Analyzer;
  /** When this process wrote each rollout's last step, by address: a round records its writes here. */
  writtenAt: Map<string, number>;
  /** The clock (ms since the epoch): when a step is due, and the time written into the marker. */
  now(): number;
}

/** Asks the checks and takes the analyses of the due rollout steps, then runs the changes that are not held back. */
export async function applyRound(changes: readonly Change[], client: ApiClient, options: RoundOptions): Promise<Round> {
  const prepared = await prepareRolloutRun(changes, options.checker, options.now, options.signal, options);
  const outcome = await applyPlan(prepared.changes, client, options);
  recordWrites(outcome, options.writtenAt, options.now());
  const { held, paused, analysis } = prepared;
  return { outcome, held, halted: settleRollbacks(prepared, outcome), paused, analysis };
}

/** Records the time of every rollout write a run did (`initial_delay` of the next step's analysis counts from it). */
export function recordWrites(outcome: ApplyOutcome, writtenAt: Map<string, number>, at: number): void {
  for (const r of outcome.results) if (r.action === "rollout" && r.status === "done") writtenAt.set(r.address, at);
}

export interface WaitOptions {
  /** No step is waited for past this time (ms since the epoch). */
  deadline: number;
  now(): number;
  signal: AbortSignal;
  /** A new plan from the manifests and the live side as it is now. */
  replan(): Promise<Plan>;
  round(changes: Change[]): Promise<Round>;
}

export interface WaitResult {
  rounds: Round[];
  /** The last plan made: with no rollout change left once every rollout finished. */
  plan: Plan | null;
  /** Set when the next step would be due after the deadline: which step of which object, and when. */
  timedOut: string | null;
  /** When the wait was interrupted while it slept: each rollout's next step and when it is due, as held changes. */
  pending: HeldChange[];
}

/** Bound of the rounds of one `--wait` (each one writes a step or waits for one). */
const MAX_ROUNDS = 100_000;

const isOpenRollout = (c: Change): c is WeightedBackendChange =>
  c.kind === "weighted_backend" && c.action === "rollout" && c.rollout !== undefined && c.rollout.status !== "halted" && c.rollout.status !== "paused";

/**
 * Advances every rollout of the manifests step by step, sleeping until each step is due. Only rollout steps are
 * written here (the first round applied everything else). Ends after a round that halted or paused a rollout,
 * failed or was interrupted, or when the signal aborts while it sleeps.
 */
export async function waitForRollouts(options: WaitOptions): Promise<WaitResult> {
  const rounds: Round[] = [];
  let plan: Plan | null = null;
  for (let i = 0; i < MAX_ROUNDS && !options.signal.aborted; i++) {
    plan = await options.replan();
    const open = plan.changes.filter(isOpenRollout);
    if (open.length === 0) return { rounds, plan, timedOut: null, pending: [] };
    const next = open.reduce((a, b) => (Date.parse(a.rollout?.due_at ?? "") <= Date.parse(b.rollout?.due_at ?? "") ? a : b));
    const dueAt = Date.parse(next.rollout?.due_at ?? "");
    if (dueAt > options.deadline) {
      const r = next.rollout;
      return { rounds, plan, timedOut: `${next.address}: step ${r?.step} of ${r?.steps} is due at ${r?.due_at}, after the --wait-timeout`, pending: [] };
    }
    const wait = dueAt - options.now();
    if (wait > 0) {
      try {
        await sleep(wait, undefined, { signal: options.signal });
      } catch {
        return { rounds, plan: null, timedOut: null, pending: open.map(pendingStep) };
      }
      continue;
    }
    const addresses = new Set(open.map((c) => c.address));
    const due = open.map((c) => ({ ...c, depends_on: c.depends_on.filter((d) => addresses.has(d)) }));
    const round = await options.round(due);
    rounds.push(round);
    const { failed, skipped, not_started } = round.outcome.counts;
    if (round.halted.length > 0 || round.paused.length > 0 || failed + skipped + not_started > 0 || round.outcome.interrupted) break;
  }
  return { rounds, plan: null, timedOut: null, pending: [] };
}

/** A rollout's next step, as a wait interrupted before it was due leaves it. */
function pendingStep(c: WeightedBackendChange): HeldChange {
  const r = c.rollout;
  const written = r && r.step > 1 ? `step ${r.step - 1} of ${r.steps} is written; ` : "";
  return { address: c.address, status: "waiting", message: `${written}step ${r?.step} of ${r?.steps} is due at ${r?.due_at}; run apply --wait again to go on` };
}

/** The outcomes of several rounds as one: every result in order, counts summed, interrupted if the last one was. */
export function mergeOutcomes(outcomes: readonly ApplyOutcome[]): ApplyOutcome {
  const counts = { done: 0, failed: 0, skipped: 0, not_started: 0 };
  for (const o of outcomes) for (const k of Object.keys(counts) as Array<keyof typeof counts>) counts[k] += o.counts[k];
  return {
    results: outcomes.flatMap((o) => o.results),
    createdIds: Object.assign({}, ...outcomes.map((o) => o.createdIds)) as Record<string, string>,
    interrupted: outcomes.some((o) => o.interrupted),
    counts,
  };
}

/**
 * When every change of the plan is a rollout step that is not due yet, a halted rollout or a paused one: a line for
 * each (when the step is due, or why the rollout stopped and how to go on), and whether one is halted or paused.
 * Else null.
 */
export function idleRollouts(plan: Plan, now: number): { lines: string[]; halted: boolean; paused: boolean } | null {
  const lines: string[] = [];
  let halted = false;
  let paused = false;
  for (const c of plan.changes) {
    const r = c.kind === "weighted_backend" ? c.rollout : undefined;
    if (c.kind !== "weighted_backend" || !r || (r.status !== "halted" && r.status !== "paused" && Date.parse(r.due_at) <= now)) return null;
    if (r.status === "halted") {
      halted = true;
      lines.push(`${c.address}: the rollout is halted (${r.halted_reason ?? ""}); change the manifest, or run apply --retry-rollout ${c.name}, to start it again`);
    } else if (r.status === "paused") {
      paused = true;
      lines.push(`${c.address}: the rollout is paused before step ${r.step} of ${r.steps} (${r.paused_reason ?? ""}); run "${promoteCommand(c.name)}" to go on`);
    } else {
      lines.push(`${c.address}: rollout step ${r.step} of ${r.steps} is due at ${r.due_at}`);
    }
  }
  return { lines, halted, paused };
}

/** What a halted rollout says on stderr: which check or analysis failed, what was done, how to go on. */
export function haltMessage(h: Round["halted"][number]): string {
  const what = h.reason.startsWith("analysis ") ? "the analysis" : "the check";
  if (h.rollback_failed) return `${h.address}: the rollout is halted (${h.reason}), but ${rollbackFailedLine(h.rollback_failed)}`;
  return (
    `${h.address}: the rollout is halted: ${h.reason}. The weights it started from were written back. ` +
    `Fix what ${what} reports, then change the manifest or run apply --retry-rollout ${h.name} to start it again.`
  );
}

/**
 * What a paused rollout says on stderr: why, and the two ways on
 * (`paused: inconclusive (error-rate: no data); run "edgeplan rollout promote web" to go on or ...`).
 */
export function pauseMessage(p: Round["paused"][number]): string {
  return `${p.address}: paused: ${pauseLine(p.reason, p.name)}`;
}

/** Checks --wait, --wait-timeout and --retry-rollout; returns the wait timeout in milliseconds. */
export function checkRolloutFlags(options: { plan?: string; wait?: boolean; waitTimeout?: string; retryRollout?: string[] }): number {
  if (options.plan !== undefined && (options.wait === true || (options.retryRollout ?? []).length > 0)) {
    throw new EdgeplanError("--wait and --retry-rollout plan again from the manifests after each step; leave out --plan FILE");
  }
  const text = options.waitTimeout ?? DEFAULT_WAIT_TIMEOUT;
  const ms = parseDuration(text);
  if (ms === undefined) throw new EdgeplanError(`--wait-timeout: expected a duration such as 30m or 2h, got "${text}"`);
  return ms;
}

/** How long `apply --wait` goes on at most, unless --wait-timeout says otherwise. */
export const DEFAULT_WAIT_TIMEOUT = "1h";
