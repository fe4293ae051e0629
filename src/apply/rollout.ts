/**
 * The apply side of progressive rollouts: the health check (a GET, here at the I/O edge and never in a plan), and
 * the changes of one run: rollout steps that are due are written as planned (after their check passes), a step
 * whose check fails becomes the write that halts its rollout, and steps that are not due, halted, or whose planned
 * time is too far past (docs/manifests.md, "Rollout timing") are held back with every change that depends on them.
 */
import { request } from "undici";
import { judgeAnalysis } from "../core/analysis.js";
import { boundReason } from "../core/halt-record.js";
import { buildRolloutHalt, buildRolloutPause, promoteCommand } from "../core/rollout.js";
import { parseRolloutState, stepGraceMs } from "../kinds/weighted-backend-rollout.js";
import { formatMs } from "./lease.js";
import type { Change, WeightedBackendChange } from "../model/plan.js";
export type { HeldChange };
import { isJsonObject } from "../model/canonical.js";
import { InternalError } from "../model/errors.js";
import { MARKER_KEY, type RolloutCheck, type RolloutState } from "../model/state.js";
import type { AnalysisRecord, ApplyOutcome, HeldChange, StoppedRollout } from "../model/apply-report.js";
import { parseLiveMetadata, sortedBackends } from "../kinds/weighted-backend.js";
import type { Analyzer } from "./analysis.js";
import { parseCheckUrl } from "../model/syntax.js";

/** A check's verdict: healthy, or why not (`HTTP 503 from https://...`). */
export type CheckResult = { ok: true } | { ok: false; reason: string };

/** Asks a check; the command passes `runRolloutCheck`, tests may pass their own. */
export type Checker = (check: RolloutCheck, signal?: AbortSignal) => Promise<CheckResult>;

/** Attempts of a check: the first and 2 retries. */
export const CHECK_ATTEMPTS = 3;
const RETRY_PAUSE_MS = 500;

/**
 * Asks a check: `GET url`, healthy when the status is `expect_status` (or any 2xx when none is given), within
 * `timeout_ms`. Another status, a timeout or a connection error is tried again twice, half a second apart; the
 * reason of the last attempt is returned. The URL is checked again here (https, or http to loopback), since a saved
 * plan is a file anyone may have edited. Redirects are not followed: a 3xx is another status.
 */
export async function runRolloutCheck(check: RolloutCheck, signal?: AbortSignal): Promise<CheckResult> {
  const allowed = parseCheckUrl(check.url);
  if ("error" in allowed) return { ok: false, reason: `check ${check.url}: ${allowed.error}` };
  let last = "";
  for (let attempt = 1; attempt <= CHECK_ATTEMPTS; attempt++) {
    if (attempt > 1) await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
    if (signal?.aborted) return { ok: false, reason: `check ${check.url}: interrupted` };
    try {
      const res = await request(allowed.url, {
        method: "GET",
        headersTimeout: check.timeout_ms,
        bodyTimeout: check.timeout_ms,
        signal: AbortSignal.any([AbortSignal.timeout(check.timeout_ms), ...(signal ? [signal] : [])]),
      });
      await res.body.dump();
      const healthy = check.expect_status === null ? res.statusCode >= 200 && res.statusCode < 300 : res.statusCode === check.expect_status;
      if (healthy) return { ok: true };
      last = `HTTP ${res.statusCode}, expected ${check.expect_status ?? "a 2xx status"}`;
    } catch (err) {
      const e = err as { name?: string; code?: string; message?: string };
      last =
        e.name === "TimeoutError" || e.code === "UND_ERR_HEADERS_TIMEOUT"
          ? `no answer within ${check.timeout_ms} ms`
          : (e.message ?? String(err)).includes(e.code ?? "\0")
            ? (e.message as string)
            : `${e.code ?? e.name ?? "error"}: ${e.message ?? String(err)}`;
    }
  }
  return { ok: false, reason: `check GET ${check.url} failed ${CHECK_ATTEMPTS} times: ${last}` };
}

/** What one run of apply sends, and what it holds back. */
export interface RolloutRun {
  /** The changes to run: every change that is not held, as planned; failed checks turned into halts. */
  changes: Change[];
  held: HeldChange[];
  /** Rollouts halted by this run: address and the reason (the check's, or the analysis'). */
  halted: StoppedRollout[];
  /** Rollouts paused by this run (an inconclusive analysis): address and the reason kept in the marker. */
  paused: StoppedRollout[];
  /** Every measurement taken, in the order of the changes and of the metrics. */
  analysis: AnalysisRecord[];
}

/** How a run takes the analyses of its steps. */
export interface AnalysisRun {
  analyzer: Analyzer;
  /**
   * When this process wrote each object's last rollout step (`apply --wait`), by address. The marker records the
   * time the step was planned for, which its write follows by its own check and measurements: `initial_delay`
   * counts from the later of the two.
   */
  writtenAt?: ReadonlyMap<string, number>;
}

/** The analyzer of a run whose plan holds no analysis (a test's): asked anyway, it is a bug. */
const NO_ANALYSIS: AnalysisRun = { analyzer: () => Promise.reject(new InternalError("a rollout analysis was due, but this run has no analyzer")) };

/** The rollout state of the live object's marker, before this change. */
function liveRolloutState(change: WeightedBackendChange): RolloutState | undefined {
  const metadata = change.before?.metadata;
  const marker = isJsonObject(metadata) ? metadata[MARKER_KEY] : undefined;
  return isJsonObject(marker) ? parseRolloutState(marker.rollout) : undefined;
}

/**
 * The time a rollout change's write records as its step's (the marker's rollout state, as the plan wrote it), or
 * null when the write ends the rollout (no state kept, nothing counts from it) or records a halt.
 */
export function recordedStepTime(change: WeightedBackendChange): number | null {
  const body = change.request.body;
  if (body === null) return null;
  const state = parseLiveMetadata(body.metadata).marker?.rollout;
  return state === undefined || state.halted !== undefined ? null : Date.parse(state.at);
}

/** What the gate of a due step came to: the change to send (as planned, a halt or a pause), or hold it back. */
type Gate = { send: Change; halted?: StoppedRollout; paused?: StoppedRollout } | { hold: string };

/**
 * The gate of one due step: its check, then its analysis (skipped both when a person promoted the step before it,
 * `promoted` equal to the live `step`). A failed check or analysis makes the halt that rolls back; an inconclusive
 * analysis the pause; an interrupted one holds the step for the next run.
 */
async function gateStep(
  change: WeightedBackendChange,
  probes: { checker: Checker } & AnalysisRun,
  now: () => number,
  records: AnalysisRecord[],
  signal?: AbortSignal,
): Promise<Gate> {
  const r = change.rollout as NonNullable<WeightedBackendChange["rollout"]>;
  const stop = { address: change.address, name: change.name };
  const back = { ...stop, weights: r.from };
  // A halt recorded whose rollback was not written: the verdict is in the marker already, the rollback goes.
  if (r.phase === "halt") return { send: change, halted: { ...back, reason: r.halted_reason ?? "" } };
  const live = liveRolloutState(change);
  if (live?.promoted !== undefined && live.promoted === live.step) return { send: change };
  const interrupted = { hold: `step ${r.step} of ${r.steps}: the run was interrupted` };
  const verdict = r.check && !signal?.aborted ? await probes.checker(r.check, signal) : ({ ok: true } as const);
  // Ctrl-C while a check runs is no verdict on the rollout: the step is left for the next run, nothing halts.
  if (signal?.aborted) return interrupted;
  const halt = (why: string): Gate => {
    const reason = boundReason(why);
    return { send: buildRolloutHalt(change, reason, now()), halted: { ...back, reason } };
  };
  if (!verdict.ok) return halt(verdict.reason);
  if (!r.analysis) return { send: change };
  const since = Math.max(live ? Date.parse(live.at) : now(), probes.writtenAt?.get(change.address) ?? 0);
  const measured = await probes.analyzer(r.analysis, { since, now, ...(signal ? { signal } : {}) });
  if (signal?.aborted) return interrupted;
  for (const m of measured.flat()) records.push({ address: change.address, step: r.step, steps: r.steps, ...m });
  const outcome = judgeAnalysis(r.analysis, measured);
  if (outcome.kind === "rollback") return halt(outcome.reason);
  if (outcome.kind === "pause") return { send: buildRolloutPause(change, outcome.reason), paused: { ...stop, reason: boundReason(outcome.reason) } };
  return { send: change };
}

/**
 * Prepares one run: holds back the steps that are waiting or halted, and those whose recorded time is more than
 * their grace past (a saved plan applied late: written now, the next step would come early), with the changes that
 * depend on them; asks the check and takes the analysis of every other due step that has them (in the plan's
 * order), turning a failed one into the halt of its rollout and an inconclusive analysis into its pause. Every step
 * that goes is sent exactly as planned.
 */
export async function prepareRolloutRun(
  changes: readonly Change[],
  checker: Checker,
  now: () => number,
  signal?: AbortSignal,
  analysis: AnalysisRun = NO_ANALYSIS,
): Promise<RolloutRun> {
  const run: Change[] = [];
  const held = new Map<string, HeldChange>();
  const prepared: Omit<RolloutRun, "changes" | "held"> = { halted: [], paused: [], analysis: [] };
  for (const change of changes) {
    const r = change.kind === "weighted_backend" ? change.rollout : undefined;
    if (change.kind !== "weighted_backend" || change.action !== "rollout" || !r) {
      run.push(change);
      continue;
    }
    const hold = holdReason(change, now());
    if (hold !== null) {
      held.set(change.address, { address: change.address, ...hold });
      continue;
    }
    const gate = await gateStep(change, { checker, ...analysis }, now, prepared.analysis, signal);
    if ("hold" in gate) {
      held.set(change.address, { address: change.address, status: "waiting", message: gate.hold });
      continue;
    }
    if (gate.halted) prepared.halted.push(gate.halted);
    if (gate.paused) prepared.paused.push(gate.paused);
    run.push(gate.send);
  }
  return { changes: holdDependents(run, held), held: [...held.values()], ...prepared };
}

/**
 * The rollouts a run halted, as its writes came out: a halt whose write failed has no weights written back but
 * `rollback_failed`, with the weights traffic is still at (those before the write). The next plan writes it again
 * when the halt was recorded (`buildHaltMark`), else judges the step again.
 */
export function settleRollbacks(run: Pick<RolloutRun, "changes" | "halted">, outcome: ApplyOutcome): StoppedRollout[] {
  const results = new Map(outcome.results.map((r) => [r.address, r]));
  const sent = new Map(run.changes.map((c) => [c.address, c]));
  return run.halted.map((h) => {
    const result = results.get(h.address);
    if (result?.status === "done") return h;
    const change = sent.get(h.address);
    const still = change?.kind === "weighted_backend" && change.before ? sortedBackends(change.before.backends) : {};
    const { weights: _written, ...rest } = h;
    return { ...rest, rollback_failed: { message: result?.message ?? "the write was not sent", weights: still } };
  });
}

/** Why a rollout change is held back at `at`, or null when it goes. */
function holdReason(change: WeightedBackendChange, at: number): Omit<HeldChange, "address"> | null {
  const r = change.rollout as NonNullable<WeightedBackendChange["rollout"]>;
  if (r.status === "halted") return { status: "halted", message: `halted: ${r.halted_reason ?? ""}` };
  if (r.status === "paused") return { status: "paused", message: `paused: ${r.paused_reason ?? ""}; run "${promoteCommand(change.name)}" to go on` };
  // A saved plan may be applied later than it was made: whether a step is due is decided now.
  if (Date.parse(r.due_at) > at) return { status: "waiting", message: `step ${r.step} of ${r.steps} is due at ${r.due_at}` };
  const deadline = stepDeadline(change);
  if (deadline !== null && at > deadline.until) {
    return {
      status: "waiting",
      message:
        `step ${r.step} of ${r.steps} was planned for ${new Date(deadline.recorded).toISOString()}, more than ${formatMs(deadline.until - deadline.recorded)} ago; ` +
        "plan again: the next step counts its interval from the time this write records",
    };
  }
  return null;
}

/** A rollout step a plan writes, and until when (the API's time, ms) it may be written. */
export interface StepDeadline {
  address: string;
  step: number;
  steps: number;
  /** The time the step's write records (the plan's). */
  recorded: number;
  /** The recorded time plus the step's grace: written later, the next step would come early. */
  until: number;
}

/**
 * The deadline of a rollout step the change writes (its recorded time plus its grace, `stepGraceMs`), or null when
 * the change writes no step that records a time (a halt, a pause). Plan says it when it saves a
 * plan; apply of a saved plan refuses it as stale past it; a run holds back a step past it.
 */
export function stepDeadline(change: Change): StepDeadline | null {
  if (change.kind !== "weighted_backend" || change.action !== "rollout" || !change.rollout) return null;
  const r = change.rollout;
  if (r.status === "halted" || r.status === "paused") return null;
  const recorded = recordedStepTime(change);
  if (recorded === null || Number.isNaN(recorded)) return null;
  return { address: change.address, step: r.step, steps: r.steps, recorded, until: recorded + stepGraceMs(r.interval_ms) };
}

/** The deadlines of the rollout steps a plan writes, in the plan's order. */
export function stepDeadlines(changes: readonly Change[]): StepDeadline[] {
  return changes.flatMap((c) => stepDeadline(c) ?? []);
}

/** The changes without those that depend, directly or not, on a held one (each of them held too, saying why). */
function holdDependents(changes: Change[], held: Map<string, HeldChange>): Change[] {
  let kept = changes;
  for (let grew = true; grew; ) {
    grew = false;
    const next: Change[] = [];
    for (const c of kept) {
      const on = c.depends_on.find((d) => held.has(d));
      if (on === undefined) {
        next.push(c);
        continue;
      }
      held.set(c.address, { address: c.address, status: "waiting", message: `waits for ${on}, which is held back` });
      grew = true;
    }
    kept = next;
  }
  return kept;
}

/** A time as a person reads it against a clock: `16:42:10 UTC`, with the date when it is not `now`'s day. */
export function utcTimeText(ms: number, now: number): string {
  const iso = new Date(ms).toISOString();
  const sameDay = iso.slice(0, 10) === new Date(now).toISOString().slice(0, 10);
  return `${sameDay ? "" : `${iso.slice(0, 10)} `}${iso.slice(11, 19)} UTC`;
}

/** A span in whole seconds as a countdown reads: `45s`, `1m 0s`, `2h 5m`. */
export function spanText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** What plan says of a step it saves: `rollout step 2 of 4 of weighted_backend.api, to apply before 16:42:10 UTC (in 1m 0s)`. */
export function describeStepDeadline(d: StepDeadline, now: number): string {
  return `rollout step ${d.step} of ${d.steps} of ${d.address}, to apply before ${utcTimeText(d.until, now)} (in ${spanText(d.until - now)})`;
}
