/**
 * The apply side of progressive rollouts: the health check (a GET, here at the I/O edge and never in a plan), and
 * the changes of one run: rollout steps that are due are written (after their check passes, stamped with the time
 * of the write), a step whose check fails becomes the write that halts its rollout, and steps that are not due or
 * halted are held back with every change that depends on them.
 */
import { request } from "undici";
import { buildRolloutHalt } from "../core/rollout.js";
import { stampRolloutTime } from "../kinds/weighted-backend-rollout.js";
import type { Change, WeightedBackendChange } from "../model/plan.js";
export type { HeldChange };
import type { RolloutCheck } from "../model/state.js";
import type { HeldChange } from "../model/apply-report.js";
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
      last = e.name === "TimeoutError" || e.code === "UND_ERR_HEADERS_TIMEOUT" ? `no answer within ${check.timeout_ms} ms` : (e.message ?? String(err)).includes(e.code ?? "\0") ? (e.message as string) : `${e.code ?? e.name ?? "error"}: ${e.message ?? String(err)}`;
    }
  }
  return { ok: false, reason: `check GET ${check.url} failed ${CHECK_ATTEMPTS} times: ${last}` };
}

/** What one run of apply sends, and what it holds back. */
export interface RolloutRun {
  /** The changes to run: every change that is not held, rollout steps stamped, failed checks turned into halts. */
  changes: Change[];
  held: HeldChange[];
  /** Rollouts halted by this run: address and the check's reason. */
  halted: Array<{ address: string; name: string; reason: string }>;
}

/**
 * Prepares one run: asks the check of every due rollout step that has one (in the plan's order), turns a failed
 * one into the halt of its rollout, stamps each step with `now()` (the time of the write, from which the next step's
 * interval counts), and holds back the steps that are waiting or halted, with the changes that depend on them.
 */
export async function prepareRolloutRun(changes: readonly Change[], checker: Checker, now: () => number, signal?: AbortSignal): Promise<RolloutRun> {
  const run: Change[] = [];
  const held = new Map<string, HeldChange>();
  const halted: RolloutRun["halted"] = [];
  for (const change of changes) {
    const r = change.kind === "weighted_backend" ? change.rollout : undefined;
    if (change.kind !== "weighted_backend" || change.action !== "rollout" || !r) {
      run.push(change);
      continue;
    }
    // A saved plan may be applied later than it was made: whether a step is due is decided now.
    if (r.status === "halted" || Date.parse(r.due_at) > now()) {
      const message = r.status === "halted" ? `halted: ${r.halted_reason ?? ""}` : `step ${r.step} of ${r.steps} is due at ${r.due_at}`;
      held.set(change.address, { address: change.address, status: r.status === "halted" ? "halted" : "waiting", message });
      continue;
    }
    const verdict = r.check && !signal?.aborted ? await checker(r.check, signal) : ({ ok: true } as const);
    // Ctrl-C while a check runs is no verdict on the rollout: the step is left for the next run, nothing halts.
    if (signal?.aborted) {
      held.set(change.address, { address: change.address, status: "waiting", message: `step ${r.step} of ${r.steps}: the run was interrupted` });
      continue;
    }
    if (!verdict.ok) {
      halted.push({ address: change.address, name: change.name, reason: verdict.reason });
      run.push(buildRolloutHalt(change, verdict.reason, now()));
      continue;
    }
    run.push(stamped(change, now()));
  }
  return { changes: holdDependents(run, held), held: [...held.values()], halted };
}

/** The step with the time of its write in the marker, and the next step due one interval after it. */
function stamped(change: WeightedBackendChange, at: number): WeightedBackendChange {
  const body = change.request.body;
  const r = change.rollout;
  if (!body || !r) return change;
  const rollout = { ...r, next_due_at: r.next_due_at === null ? null : new Date(at + r.interval_ms).toISOString() };
  return { ...change, rollout, request: { ...change.request, body: stampRolloutTime(body, new Date(at).toISOString()) } };
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
