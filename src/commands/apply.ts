/**
 * `edgeplan apply`: plan from the manifests (or read a saved plan and check that it is not stale), show the plan,
 * check that every risk is acknowledged and that a person said `yes` (or `--auto-approve`), run the changes
 * (src/apply/engine.ts), read again what was touched, and report what was done, whether the live side converged,
 * and the outputs for the IdP.
 *
 * Exit codes: 0 every change done and converged (or nothing to change); 1 an error before any write (invalid
 * manifests, API error while reading, unknown --ack rule, a risk not acknowledged, no approval, a stale saved plan,
 * a saved plan made for another API or account), or the lease was taken away while the changes ran (the run stopped
 * before its next write); 3 some changes failed or were skipped, the live side does not match after the run, or
 * the API stopped answering (no new change started); 4 a rollout is paused and waits for a person (a pause step or
 * an inconclusive analysis: `edgeplan rollout promote NAME`; 3 wins when both apply); 130 the run was
 * interrupted with Ctrl-C (SIGINT; 143 for SIGTERM): the requests in flight finished, nothing new started, and
 * running apply again finishes the job.
 */
import { resolve } from "node:path";
import { fetchTouched } from "../api/fetch-live.js";
import { liveWeightedBackend } from "../api/live-state.js";
import type { CommonCliOptions } from "../api/options.js";
import {
  buildDeclinedRefusal,
  buildNoTerminalRefusal,
  buildPolicyDenial,
  buildRiskRefusal,
  confirmRisks,
  parseAckRules,
  unacknowledgedRisks,
  APPROVAL_QUESTION,
} from "../apply/approval.js";
import { applyPlan } from "../apply/engine.js";
import { prepareRolloutRun, runRolloutCheck, settleRollbacks, type Checker, type HeldChange } from "../apply/rollout.js";
import { applyRound, checkRolloutFlags, haltMessage, idleRollouts, mergeOutcomes, pauseMessage, recordWrites, waitForRollouts, type Round } from "../apply/wait.js";
import { runRolloutAnalysis, type Analyzer } from "../apply/analysis.js";
import { analyzerWithSecrets, checkerWithSecrets } from "../apply/secrets.js";
import type { ApplyOutcome, ApplyReport, ChangeResult, Convergence } from "../model/apply-report.js";
import { buildApplyHeadline, buildConvergenceLine, pauseLine, renderApplyMarkdown } from "../render/apply-report.js";
import { checkPlanAgainstLive } from "../apply/live-check.js";
import { checkSavedPlanApi, checkSavedPlanEnvironment, fetchSavedPlanLive, loadSavedPlan, withSavedEnvironment } from "../apply/saved-plan.js";
import { buildStalePlanError, diffStale, expiredSteps } from "../apply/stale.js";
import { buildDisagreementError, buildSavedPlanLimits, checkPlan } from "../core/plan-check.js";
import { buildRisks } from "../core/risks.js";
import { deniedResults, withPolicies } from "../core/policies.js";
import { buildConvergenceFromPlan, buildConvergenceFromReplan, buildOutputsFromLive, buildTouchedAfterRun, mergeLive, settleHalted } from "../apply/verify.js";
import { buildEstimate } from "../core/estimate.js";
import { diffOutputs } from "../core/outputs.js";
import { buildPlan, planHasChanges, type PlanOptions } from "../core/plan.js";
import { completeCommands } from "../core/command-text.js";
import { EdgeplanError, EXIT, type Diagnostic } from "../model/errors.js";
import type { Change, Plan, SamlOutput } from "../model/plan.js";
import type { DesiredState, LiveState, LiveWeightedBackend } from "../model/state.js";
import type { CommandIO } from "./io.js";
import { showPlan, showPlanOnly, showReport, type ShowOptions } from "./apply-show.js";
import type { HtmlPlanPlace } from "../render/html.js";
import { PLAN_FORMATS, type PlanFormat } from "./output.js";
import { fetchForPlan, planEnvironment, planOptionsFrom, type PlanFlags } from "./plan.js";
import { startProgress } from "./progress.js";
import { withProjectFile } from "./project.js";
import { commandLine, freshPlanFile, stackWhere, typedStack, whereArgs, whereText } from "./hints.js";
import { loadManifests, openSession, type Session } from "./session.js";
import { wireStop } from "./stop.js";
import { claimModules, type HeldClaim } from "../apply/claim.js";
import { acquireLease, currentHolder, ExpiryWatch, formatMs, type HeldLease, type LeftLease } from "../apply/lease.js";
import type { LeaseHolder } from "../model/lease.js";
import { NoAnswerError } from "../api/errors.js";
import { describeGone, type GoneCause } from "../api/reachability.js";
import { parseTimeout, SETTING_PARSERS, type RateLimit } from "../model/syntax.js";

export interface ApplyCommandOptions extends CommonCliOptions, PlanFlags {
  /** Manifest files or folders (default `.`): what is planned, or re-planned with `--refresh`. */
  paths: string[];
  /** A saved plan (`plan --out FILE`) to apply instead of planning now. */
  plan?: string;
  /** Apply without asking for `yes`. */
  autoApprove?: boolean;
  /** Risk rules acknowledged (`--ack RULE`, repeatable; commas allowed). */
  ack?: string[];
  /** Acknowledge every risk. */
  force?: boolean;
  /** With `--plan`: when the saved plan is stale, plan again from the manifests (and show, ask, check risks as usual). */
  refresh?: boolean;
  /**
   * How the plan (and the report after it) is shown on stdout. With `json` and `html`, stdout is one document written
   * at the end (the plan and the report, or the plan alone when nothing ran) and the plan goes to stderr as text.
   */
  format?: PlanFormat;
  /** Also write the report (or the plan, when nothing ran) as an HTML page to this file. */
  html?: string;
  /** No progress on stderr while the changes run (the report on stdout then lists the changes done too). */
  quiet?: boolean;
  /** The plan was just shown by a plan of the same manifests (the demo's first step): it is not shown again. */
  planShown?: boolean;
  /** Go on after the first run, step after step, until every rollout reached its manifest's weights. */
  wait?: boolean;
  /** How long `--wait` may go on (a duration; default 1h). */
  waitTimeout?: string;
  /** Names of weighted backends whose halted rollout starts again from the live weights. */
  retryRollout?: string[];
  /** Asks a rollout check (default: a GET, `runRolloutCheck`). */
  checker?: Checker;
  /** Takes the measurements of a rollout analysis (default: the providers' requests, `runRolloutAnalysis`). */
  analyzer?: Analyzer;
  /**
   * Called with the plan once it is made, under the lease and before anything is written; it throws to refuse the
   * plan (the GitHub Action refuses a plan that is not the one reviewed in the merged pull request).
   */
  review?: (plan: Plan) => void;
  /**
   * Aborting it stops the run as Ctrl-C does. When absent, the command handles SIGINT and SIGTERM itself while the
   * changes run (a second signal ends the process at once).
   */
  signal?: AbortSignal;
  /** How long to wait for another apply's lease on the stack (a duration; `0` fails at once). Default 5m. */
  lockTimeout?: string;
  /** How long this apply's lease stays valid without a renewal (renewed every third of it). Default 1m. */
  lockTtl?: string;
  /**
   * An open session to use instead of opening one (the agent's client of the account, whose rate budget the stacks of
   * the account share); the caller closes it.
   */
  session?: Session;
}

export interface ApplyCommandResult {
  exitCode: number;
  diagnostics: Diagnostic[];
  /** The plan that was shown (and applied, when approved). */
  plan?: Plan;
  hasChanges?: boolean;
  /** What was done as Markdown: done, failed, skipped, not started; converged or not; the outputs. */
  summaryMarkdown?: string;
  /** What was done in one line: the headline and the convergence sentence. */
  summary?: string;
}

/** What stopped a run whose lease was taken away (exit 1: it stopped before its next write). */
const LEASE_LOST = "lease-lost";
/** What stopped a run when the API stopped answering (exit 3: some changes failed or did not start). */
const API_GONE = "api-gone";

export const DEFAULT_LOCK_TIMEOUT = "5m";
export const DEFAULT_LOCK_TTL = "1m";
/** Longest `--lock-timeout` and `--lock-ttl` (one day). */
const LOCK_MAX_MS = 86_400_000;

/** The lease flags: `--lock-timeout` (default 5m; 0 fails at once) and `--lock-ttl` (default 1m). */
export function lockOptionsFrom(options: Pick<ApplyCommandOptions, "lockTimeout" | "lockTtl">): { timeoutMs: number; ttlMs: number } {
  return {
    timeoutMs: parseTimeout("--lock-timeout", options.lockTimeout ?? DEFAULT_LOCK_TIMEOUT, LOCK_MAX_MS, 0),
    ttlMs: parseTimeout("--lock-ttl", options.lockTtl ?? DEFAULT_LOCK_TTL, LOCK_MAX_MS, 1000),
  };
}

/**
 * A warning when renewing the lease (every third of `--lock-ttl`) alone takes more than half of what `--rate-limit`
 * allows: the apply's own requests would wait behind the renewals. A renewal is needed, so it is no error.
 */
export function lockBudgetWarning(ttlMs: number, limit: RateLimit | null): string | null {
  if (limit === null) return null;
  const renewals = Math.ceil((3 * limit.windowMs) / ttlMs);
  if (renewals * 2 <= limit.count) return null;
  const least = formatMs(Math.ceil((6 * limit.windowMs) / limit.count / 1000) * 1000);
  return (
    `warning: --lock-ttl ${formatMs(ttlMs)}: renewing the lease every ${formatMs(Math.round(ttlMs / 3))} takes ${renewals} of the ${limit.count} requests ` +
    `per ${formatMs(limit.windowMs)} that --rate-limit allows, and the apply's requests wait behind them; use --lock-ttl ${least} or more, or a higher --rate-limit`
  );
}

/** Exit code of a run interrupted by a signal: 128 + the signal's number, as shells report it. */
export const EXIT_INTERRUPTED: Readonly<Record<string, number>> = { SIGINT: 130, SIGTERM: 143 };

/**
 * Runs `apply`. Errors before any write (manifests, reads, refusals) are thrown as EdgeplanError subclasses (the
 * CLI prints them and exits 1); once changes ran, the result carries the exit code (0, 3, 4, or 130/143).
 */
export async function runApply(given: ApplyCommandOptions, io: CommandIO): Promise<ApplyCommandResult> {
  const start = await prepareApply(given, io);
  const { options, saved } = start;
  const session = given.session ?? (await openSession(options, io, start.desired));
  // The session's budget is the limit its client keeps (a flag, the project file, none for --local).
  const crowded = lockBudgetWarning(start.lock.ttlMs, session.budget.rateLimit);
  if (crowded) io.stderr(`${crowded}\n`);
  const unlockWhere = whereText(given, options.environment?.name, io.env);
  let lease: HeldLease | undefined;
  let claim: HeldClaim | null = null;
  try {
    // Before the lease, whose create is a write: a plan made elsewhere sends nothing here.
    if (saved) checkSavedPlanApi(saved, session.api, options.plan as string, start.newPlan(options.environment?.name, "new"));
    // The lease of the stack comes before anything is read for the plan (docs/reliability.md, section 6).
    const holder = currentHolder(io.env, options.environment?.name);
    const watch = new ExpiryWatch(Date.now);
    lease = await acquireLease(session.client, {
      ...start.lock,
      stack: saved?.stack ?? session.stack,
      holder,
      watch,
      onWait: (line) => io.stderr(`${line}\n`),
      unlockWhere,
      apiNow: () => session.clock.now(),
    });
    const chosen = await planUnderLease(given, start, io, session, lease);
    const { plan, fromManifests } = chosen;
    // A page of a plan made now says where and when; a saved plan's says its API (src/render/html.ts).
    const place = fromManifests ? { api_url: session.api.url, at: new Date(session.clock.now()).toISOString() } : undefined;
    // The commands the plan and the report name (`rollout promote NAME`, ...) reach this API and stack as printed.
    const stack = saved !== undefined && saved.stack !== session.stack ? saved.stack : typedStack(given, io.env);
    const shown = { ...options, where: stackWhere(given, options.environment?.name, io.env, stack) };
    const result: ApplyCommandResult = { exitCode: EXIT.ok, diagnostics: chosen.diagnostics ?? start.diagnostics, plan, hasChanges: planHasChanges(plan) };
    if (options.planShown !== true) showPlan(plan, start.format, shown, io);
    if (await nothingToSend(plan, result, { session, shown, io, place, format: start.format, wait: options.wait === true })) return result;
    try {
      claim = await beforeFirstWrite(plan, start, io, session, { holder, unlockWhere, watch });
    } catch (err) {
      await showPlanOnly(plan, start.format, shown, io, place);
      throw err;
    }
    const toRun = claim?.plan ?? plan;
    const known = claim && fromManifests ? { ...fromManifests, before: { ...fromManifests.before, weightedBackends: claim.listing } } : fromManifests;
    const run = await runChanges(toRun, session, shown, io, { fromManifests: known, waitMs: start.waitMs, lease, claim });
    await reportRun(toRun, run, { session, fromManifests: known, format: start.format, options: shown }, io, result);
    showWhyStopped(run, session, io);
    return result;
  } finally {
    await claim?.release();
    if (lease) showLeftLease(await lease.release(), saved?.stack ?? session.stack, io, unlockWhere);
    if (given.session === undefined) await session.close();
  }
}

/** What an apply knows before it opens its session: its options, the saved plan or the manifests, its flags. */
interface Prepared {
  options: ApplyCommandOptions;
  saved: Plan | undefined;
  /** The command that makes a new plan (for a refusal to quote), with the environment and a file tag. */
  newPlan: (env: string | undefined, tag: string) => string;
  format: PlanFormat;
  acks: ReturnType<typeof parseAckRules>;
  waitMs: ReturnType<typeof checkRolloutFlags>;
  lock: ReturnType<typeof lockOptionsFrom>;
  desired: DesiredState | undefined;
  diagnostics: Diagnostic[];
}

/** The options, flags and saved plan (checked against itself and its environment) or manifests: nothing is sent yet. */
async function prepareApply(given: ApplyCommandOptions, io: CommandIO): Promise<Prepared> {
  const { options, saved, newPlan } = await withSavedPlan(given, io);
  const { format, acks } = checkApplyFlags(options, io);
  const base = { options, saved, newPlan, format, acks, waitMs: checkRolloutFlags(options), lock: lockOptionsFrom(options) };
  if (!saved) {
    const loaded = await loadManifests(options.paths, io, options.environment ?? null);
    return { ...base, desired: loaded.desired, diagnostics: loaded.diagnostics };
  }
  // A file that disagrees with itself is refused before anything is sent, the lease included.
  const disagreements = checkPlan(saved);
  if (disagreements.length > 0) {
    const again = planCommand(given, io, options.environment?.name, options.plan as string, typedStackArgs(given, io));
    throw buildDisagreementError(options.plan as string, "itself", disagreements, "applied", again);
  }
  checkSavedPlanEnvironment(saved, options.environment?.name ?? null, options.plan as string, (env) => newPlan(env, env));
  return { ...base, desired: undefined, diagnostics: [] };
}

/** The plan applied, made under the lease: the saved one checked against the live side, or a new one of the manifests. */
function planUnderLease(given: ApplyCommandOptions, start: Prepared, io: CommandIO, session: Session, lease: HeldLease): Promise<ToApply> {
  const { options, saved } = start;
  if (saved)
    return fromSavedPlan(saved, options, io, session, planCommand(given, io, options.environment?.name, options.plan as string, stackArgs(saved, session, given, io)));
  const planOptions = {
    ...planOptionsFrom(options, session.stack),
    // The lease's answers told the API's clock: a step's interval is measured by it (src/api/api-clock.ts).
    now: session.clock.now(),
    retryRollouts: options.retryRollout ?? [],
    environment: planEnvironment(options.environment, session),
  };
  return planFromManifests(start.desired as DesiredState, planOptions, session, lease.listing.map(liveWeightedBackend));
}

/**
 * True (after saying so) when the plan sends nothing: no change, or only rollout steps that are not due (without
 * `--wait`); the result's exit code says whether a rollout waits at a gate or halted.
 */
async function nothingToSend(
  plan: Plan,
  result: ApplyCommandResult,
  c: { session: Session; shown: ShowOptions & { where: string }; io: CommandIO; place: HtmlPlanPlace | undefined; format: PlanFormat; wait: boolean },
): Promise<boolean> {
  if (!result.hasChanges) {
    await showPlanOnly(plan, c.format, c.shown, c.io, c.place);
    c.io.stderr("Nothing to apply: no change was sent.\n");
    return true;
  }
  const idle = idleRollouts(plan, c.session.clock.now());
  if (idle === null || c.wait) return false;
  await showPlanOnly(plan, c.format, c.shown, c.io, c.place);
  c.io.stderr(completeCommands(`${idle.lines.join("\n")}\nNothing is due: no change was sent.\n`, c.shown.where));
  result.exitCode = idle.halted ? EXIT.partial : idle.paused ? EXIT.paused : EXIT.ok;
  return true;
}

/**
 * The checks before the first write, in order: the policies' denials, the caller's review, the risks'
 * approval, then the account's claim lease for the modules the plan claims, takes over or forgets.
 */
async function beforeFirstWrite(
  plan: Plan,
  start: Prepared,
  io: CommandIO,
  session: Session,
  lease: { holder: LeaseHolder; unlockWhere: string | undefined; watch: ExpiryWatch },
): Promise<HeldClaim | null> {
  const { options, saved, lock } = start;
  const denied = deniedResults(plan);
  if (denied.length > 0) throw buildPolicyDenial(denied, "apply");
  options.review?.(plan);
  await approve(plan, start.acks, options, io);
  // Last before the first write: modules claimed, taken over or forgotten hold across the stacks of the account.
  return claimModules(session.client, plan, {
    holder: lease.holder,
    timeoutMs: lock.timeoutMs,
    ttlMs: lock.ttlMs,
    onWait: (line) => io.stderr(`${line}\n`),
    saved: saved ? (options.plan as string) : null,
    unlockWhere: lease.unlockWhere,
    watch: lease.watch,
  });
}

/**
 * After the report, on stderr: why a run stopped early (the lease taken away, the API gone), with what was done and
 * what was not; or, when some changes got no answer but the run went on, that cause, once for all of them.
 */
function showWhyStopped(run: RunResult, session: Session, io: CommandIO): void {
  const { counts, results } = run.outcome;
  const tally = `${counts.done} done, ${counts.failed} failed, ${counts.skipped} skipped, ${counts.not_started} not started, of ${results.length} changes`;
  if (run.interruptedBy === LEASE_LOST) {
    const notStarted = results.filter((r) => r.status === "not_started").map((r) => r.address);
    const shown = notStarted.length > 10 ? `${notStarted.slice(0, 10).join(", ")} and ${notStarted.length - 10} more` : notStarted.join(", ");
    io.stderr(`edgeplan: stopped before the next write: ${tally}${notStarted.length > 0 ? ` (not started: ${shown})` : ""}; run apply again once the stack is free\n`);
    return;
  }
  if (run.interruptedBy === API_GONE) {
    const unknown = counts.failed > 0 ? "; a failed change may or may not have been carried out: edgeplan plan shows which once the API is back" : "";
    io.stderr(`edgeplan: stopped: ${tally}${unknown}\n`);
    return;
  }
  const noAnswer = results.find((r) => r.error instanceof NoAnswerError);
  if (noAnswer?.error && session.reachability.cause() === null) io.stderr(`edgeplan: ${noAnswer.error.message}\n`);
}

/**
 * Says when this run's lease is left behind (the API did not answer its delete), how long it holds, and how to remove
 * it. Every command that takes the stack's lease (apply, state release, the rollout actions) says it so; `unlockWhere`
 * holds the flags that reach the same API (src/commands/hints.ts).
 */
export function showLeftLease(left: LeftLease | null, stack: string, io: CommandIO, unlockWhere = ""): void {
  if (left === null) return;
  const until = new Date(left.validUntil).toISOString().replace(/\.\d{3}Z$/, "Z");
  io.stderr(
    `edgeplan: the lease of stack "${stack}" is left behind (lease ${left.id}): it is valid until ${until} (${formatMs(left.ttlMs)} after its last renewal), ` +
      `and the next apply of the stack waits up to ${formatMs(left.ttlMs)} before taking it as expired; remove it now with: edgeplan unlock ${stack} --lease-id ${left.id}${unlockWhere}\n`,
  );
}

/**
 * Every risk acknowledged (by a flag, or on a terminal by a person asked about each, `--auto-approve` or not: it
 * approves the plan, not its risks), then a person's `yes` (or `--auto-approve`); throws the refusal otherwise.
 */
async function approve(plan: Plan, acks: ReturnType<typeof parseAckRules>, options: ApplyCommandOptions, io: CommandIO): Promise<void> {
  const risks = unacknowledgedRisks(plan, acks, options.force === true);
  if (risks.length > 0 && !io.stdinIsTTY) throw buildRiskRefusal(risks);
  if (risks.length > 0) await confirmRisks(risks, (question) => io.prompt(question));
  if (options.autoApprove === true) return;
  if (!io.stdinIsTTY) throw buildNoTerminalRefusal();
  const answer = await io.prompt(APPROVAL_QUESTION);
  if (answer.trim() !== "yes") throw buildDeclinedRefusal(answer);
}

/**
 * After the run: the convergence check (the last `--wait` plan tells it when there is one), the report, a halted
 * rollout's message on stderr, and the result's summaries and exit code.
 */
async function reportRun(
  plan: Plan,
  run: RunResult,
  ctx: { session: Session; fromManifests: FromManifests | undefined; format: PlanFormat; options: ApplyCommandOptions & { where: string } },
  io: CommandIO,
  result: ApplyCommandResult,
): Promise<void> {
  const { outcome, interruptedBy } = run;
  const { convergence, outputs } =
    outcome.interrupted || interruptedBy !== undefined
      ? { convergence: { checked: false, converged: false, remaining: [] } as Convergence, outputs: [] as SamlOutput[] }
      : run.finalPlan
        ? { convergence: buildConvergenceFromReplan(run.finalPlan), outputs: run.finalPlan.outputs }
        : await checkConvergence({ ...plan, changes: [...run.ran, ...heldChanges(plan, run.held)] }, outcome, ctx.session, ctx.fromManifests);
  const report: ApplyReport = {
    stack: plan.stack,
    outcome,
    convergence: settleHalted(convergence, run.halted),
    outputs,
    changedOutputs: diffOutputs(plan.outputs, outputs),
    against: ctx.fromManifests ? "manifests" : "plan",
    held: run.held,
  };
  if (interruptedBy?.startsWith("SIG")) report.interruptedBy = interruptedBy;
  if (plan.targeted) report.targeted = true;
  if (run.halted.length > 0) report.halted = run.halted;
  if (run.paused.length > 0) report.paused = run.paused;
  if (run.analysis.length > 0) report.analysis = run.analysis;
  if (run.timedOut) report.timedOut = run.timedOut;
  await showReport(report, plan, ctx.format, ctx.options, io);
  for (const h of run.halted) io.stderr(`edgeplan: ${completeCommands(haltMessage(h), ctx.options.where)}\n`);
  for (const p of run.paused) io.stderr(`edgeplan: ${completeCommands(pauseMessage(p), ctx.options.where)}\n`);
  result.summaryMarkdown = renderApplyMarkdown(report);
  const firstPause = run.paused[0];
  result.summary = firstPause
    ? `${buildApplyHeadline(report)} ${firstPause.address} is paused: ${pauseLine(firstPause.reason, firstPause.name)}.`
    : `${buildApplyHeadline(report)} ${buildConvergenceLine(report).replace(/:$/, ".")}`;
  const paused = run.paused.length > 0 || (report.convergence.paused ?? []).length > 0 || run.held.some((h) => h.status === "paused");
  result.exitCode = exitCodeOf(outcome, report.convergence, interruptedBy, { stopped: run.halted.length > 0 || run.timedOut !== null, paused });
}

/**
 * The saved plan of `--plan`, read first: it names the environment of the project file it is applied in
 * (`withSavedEnvironment`); then the options with the project file's settings. `newPlan(env, tag)` is the command
 * that makes a plan here, in `env`, into a new file named with `tag`, which a refusal suggests.
 */
async function withSavedPlan(
  given: ApplyCommandOptions,
  io: CommandIO,
): Promise<{ options: ApplyCommandOptions; saved: Plan | undefined; newPlan: (env: string | undefined, tag: string) => string }> {
  const file = given.plan;
  const newPlan = (env: string | undefined, tag: string): string => planCommand(given, io, env, freshPlanFile(io.cwd, file ?? "plan.json", tag), typedStackArgs(given, io));
  if (file === undefined) return { options: await withProjectFile(given, io), saved: undefined, newPlan };
  const saved = await loadSavedPlan(resolve(io.cwd, file), file, undefined, planCommand(given, io, given.env, file, typedStackArgs(given, io)));
  const options = await withProjectFile(
    withSavedEnvironment(given, saved, file, io.env, (env) => newPlan(env, env)),
    io,
  );
  return { options, saved, newPlan };
}

/** Checks the flags that need nothing read first: the format, the `--ack` rules, `--plan` beside a scope. */
function checkApplyFlags(options: ApplyCommandOptions, io: CommandIO): { format: PlanFormat; acks: ReturnType<typeof parseAckRules> } {
  const format = options.format ?? "text";
  if (!PLAN_FORMATS.includes(format)) throw new EdgeplanError(`--format: expected one of ${PLAN_FORMATS.join(", ")}, got "${format}"`);
  const acks = parseAckRules(
    options.ack ?? [],
    (options.policies ?? []).map((p) => p.name),
  );
  if (options.plan !== undefined && (options.target?.length || options.exclude?.length)) {
    throw new EdgeplanError(
      "--target and --exclude cannot be combined with --plan: a saved plan applies the targets it was made with; make a targeted plan with: edgeplan plan --target ADDRESS --out FILE",
    );
  }
  if (options.refresh === true && options.plan === undefined) {
    io.stderr("--refresh has an effect only with --plan FILE; planning from the manifests as usual\n");
  }
  return { format, acks };
}

/** From manifests, what the convergence check needs besides the plan: the desired state, the live state read before and the plan options. */
interface FromManifests {
  desired: DesiredState;
  before: LiveState;
  planOptions: PlanOptions;
}

/** What apply runs; `fromManifests` when it was planned from manifests (not a saved plan applied as it is). */
interface ToApply {
  plan: Plan;
  fromManifests?: FromManifests;
  /** The diagnostics of manifests loaded to plan again (`--refresh`). */
  diagnostics?: Diagnostic[];
}

/** Reads the live side the options' scope reaches and plans. */
async function planFromManifests(desired: DesiredState, planOptions: PlanOptions, session: Session, leaseListing?: LiveWeightedBackend[]): Promise<ToApply> {
  const { desired: scoped, live: before, routes } = await fetchForPlan(session.client, desired, planOptions, undefined, leaseListing);
  const plan = buildPlan(scoped, before, { ...planOptions, budget: session.budget }, routes);
  return { plan, fromManifests: { desired: scoped, before, planOptions } };
}

/**
 * A saved plan, read again where it touches the live side: when something it touches changed since, refused
 * (StalePlanError naming each object), or with `--refresh` planned again from the manifests; when its changes do not
 * agree with the live side (an object it does not own, a `before` that is not the object, a protected delete),
 * refused naming each change. Otherwise applied as it is, with its risks recomputed from its changes.
 */
async function fromSavedPlan(saved: Plan, options: ApplyCommandOptions, io: CommandIO, session: Session, again: string): Promise<ToApply> {
  if (saved.stack !== session.stack) {
    io.stderr(`the saved plan is for stack "${saved.stack}"; it is applied to that stack (not "${session.stack}")\n`);
  }
  if (!planHasChanges(saved)) return { plan: withPolicies(saved, options.policies, options.environment ?? null) };
  const file = options.plan as string;
  const { live, stackObjects } = await fetchSavedPlanLive(session.client, saved);
  // A rollout step is timed by the API's clock, which the reads just made told.
  const stale = [...diffStale(saved, live), ...expiredSteps(saved, session.clock.now())];
  if (stale.length > 0) {
    if (!options.refresh) throw buildStalePlanError(file, stale, again);
    io.stderr(`the saved plan ${options.plan} is stale (${stale.map((s) => s.address).join(", ")}); --refresh: planning again from the manifests\n`);
    const loaded = await loadManifests(options.paths, io, options.environment ?? null);
    const planOptions = { ...refreshedPlanOptions(saved, options), environment: planEnvironment(options.environment, session) };
    return { ...(await planFromManifests(loaded.desired, planOptions, session)), diagnostics: loaded.diagnostics };
  }
  const disagreements = checkPlanAgainstLive(saved, live);
  if (disagreements.length > 0) throw buildDisagreementError(file, "the live side", disagreements, "applied", again);
  // The guards are the plan's changes', never the file's: the risks are computed again, with thresholds no looser
  // than the defaults unless given now, and so are the policies' results, by the project's policies as they are now.
  const given = {
    maxShift: options.maxShift === undefined ? undefined : SETTING_PARSERS.maxShift(options.maxShift),
    maxDeletes: options.maxDeletes === undefined ? undefined : SETTING_PARSERS.maxDeletes(options.maxDeletes),
  };
  const limits = buildSavedPlanLimits(saved, given, stackObjects);
  const plan: Plan = withPolicies(
    { ...saved, options: { ...saved.options, max_shift: limits.maxShift, max_deletes: limits.maxDeletes }, risks: buildRisks(saved.changes, limits) },
    options.policies,
    options.environment ?? null,
  );
  // The check after a saved plan reads by id, and the outputs' modules too: the estimate follows that.
  return { plan: { ...plan, estimate: buildEstimate(plan, { budget: session.budget, outputRoutes: true }) } };
}

/**
 * The command that plans again where this apply runs (`given`'s paths and the flags that say where, `env` the
 * environment), into `out`.
 */
function planCommand(given: ApplyCommandOptions, io: CommandIO, env: string | undefined, out: string, more: string[] = []): string {
  return commandLine(["plan", ...given.paths, ...more, ...whereArgs({ ...given, env }, io.env), "--out", out]);
}

/** `--stack NAME` as typed (not the shell's EDGEPLAN_STACK, which the command line reads as the flag), or nothing. */
function typedStackArgs(given: ApplyCommandOptions, io: CommandIO): string[] {
  const stack = typedStack(given, io.env);
  return stack === undefined ? [] : ["--stack", stack];
}

/** `--stack NAME` when a plan made here would not take the saved plan's stack without it, or `--stack` was typed. */
function stackArgs(saved: Plan, session: Session, given: ApplyCommandOptions, io: CommandIO): string[] {
  return typedStackArgs(given, io).length > 0 || saved.stack !== session.stack ? ["--stack", saved.stack] : [];
}

/**
 * The exit code after a run: interrupted 130 (143 for SIGTERM); any change failed, skipped or not started, a
 * rollout halted or timed out, or a convergence check that found differences, 3; a rollout that waits for a person,
 * 4; else 0. A check that could not read the objects again does not turn
 * a run whose every write the API accepted into a failure (the report says it was not checked).
 */
function exitCodeOf(outcome: ApplyOutcome, convergence: Convergence, interruptedBy: string | undefined, rollouts: { stopped: boolean; paused: boolean }): number {
  if (interruptedBy === LEASE_LOST) return EXIT.error;
  if (interruptedBy === API_GONE) return EXIT.partial;
  if (outcome.interrupted || interruptedBy !== undefined) return EXIT_INTERRUPTED[interruptedBy ?? "SIGINT"] ?? EXIT_INTERRUPTED.SIGINT ?? 130;
  const { failed, skipped, not_started } = outcome.counts;
  if (failed + skipped + not_started > 0 || rollouts.stopped) return EXIT.partial;
  if (convergence.checked && !convergence.converged) return EXIT.partial;
  return rollouts.paused ? EXIT.paused : EXIT.ok;
}

/** The options of a re-plan of a stale saved plan: the saved plan's, with the flags given now on top. */
function refreshedPlanOptions(saved: Plan, options: ApplyCommandOptions): PlanOptions {
  const planOptions = planOptionsFrom(
    {
      prune: saved.options.prune || options.prune === true,
      takeover: saved.options.takeover || options.takeover === true,
      maxShift: options.maxShift ?? saved.options.max_shift,
      maxDeletes: options.maxDeletes ?? saved.options.max_deletes,
      target: saved.options.targets,
      exclude: saved.options.excludes,
      ...(options.policies ? { policies: options.policies } : {}),
    },
    saved.stack,
  );
  return planOptions;
}

interface RunResult {
  outcome: ApplyOutcome;
  interruptedBy: string | undefined;
  /** The changes sent (as planned; failed checks as halts, inconclusive analyses as pauses), and those held back. */
  ran: Change[];
  held: HeldChange[];
  halted: Round["halted"];
  paused: Round["paused"];
  analysis: Round["analysis"];
  timedOut: string | null;
  /** With `--wait`: the plan made after the last step, which tells convergence. */
  finalPlan: Plan | null;
}

/**
 * Runs the plan's changes with progress on stderr (none with `--quiet`): rollout checks first, steps not due held
 * back; then with `--wait` the rollouts' next steps as they fall due, one line each. SIGINT/SIGTERM (or
 * `options.signal`) stop it gracefully.
 */
async function runChanges(
  plan: Plan,
  session: Session,
  options: ApplyCommandOptions & { where: string },
  io: CommandIO,
  ctx: { fromManifests: FromManifests | undefined; waitMs: number; lease: HeldLease; claim: HeldClaim | null },
): Promise<RunResult> {
  const { concurrency } = session;
  const { claim } = ctx;
  const stop = wireStop(io, options.signal, [
    { signal: ctx.lease.lost, by: LEASE_LOST, line: (reason) => (reason as Error).message },
    ...(claim ? [{ signal: claim.lost, by: LEASE_LOST, line: (reason: unknown) => (reason as Error).message }] : []),
    { signal: session.reachability.gone, by: API_GONE, line: (reason) => describeGone(reason as GoneCause) },
  ]);
  const beforeStart = ctx.lease.confirm;
  // The plan's own changes run under the claim lease too, when there is one: no write once either lease is gone.
  const firstStart = claim
    ? async (): Promise<void> => {
        await Promise.all([ctx.lease.confirm(), claim.confirm()]);
      }
    : beforeStart;
  const quiet = options.quiet === true;
  const rollouts = {
    // The variables' values go into the checks' and the metrics' requests here, and nowhere else (src/apply/secrets.ts).
    checker: checkerWithSecrets(options.checker ?? runRolloutCheck, io.env),
    analyzer: analyzerWithSecrets(options.analyzer ?? runRolloutAnalysis, io.env),
    writtenAt: new Map<string, number>(),
    now: () => session.clock.now(),
  };
  try {
    const prepared = await prepareRolloutRun(plan.changes, rollouts.checker, rollouts.now, stop.signal, rollouts);
    const n = prepared.changes.length;
    // With --wait and nothing due yet, the steps to come are the news, said as they are written.
    if (!quiet && (n > 0 || options.wait !== true)) io.stderr(`Applying ${n} ${n === 1 ? "change" : "changes"} to stack "${plan.stack}" (at most ${concurrency} at once)\n`);
    // With --wait, a step not due yet is waited for, not held back: its line comes once it is written.
    const told = options.wait === true ? prepared.held.filter((h) => h.status !== "waiting") : prepared.held;
    if (!quiet) for (const h of told) io.stderr(`${h.address}: held back: ${completeCommands(h.message, options.where)}\n`);
    const progress = quiet ? undefined : startProgress(io, { total: n, estimate: plan.estimate, budget: session.budget, client: session.client, stopping: stop.signal });
    let outcome: ApplyOutcome;
    try {
      outcome = await applyPlan(prepared.changes, session.client, {
        stack: plan.stack,
        concurrency,
        signal: stop.signal,
        beforeStart: firstStart,
        ...(progress ? { onProgress: (line: string) => progress.line(line), onResult: (r: ChangeResult) => progress.result(r) } : {}),
      });
    } finally {
      progress?.stop();
      // The claims are written: the --wait steps that may follow claim nothing.
      await claim?.release();
    }
    recordWrites(outcome, rollouts.writtenAt, rollouts.now());
    const first: Round = { outcome, held: prepared.held, halted: settleRollbacks(prepared, outcome), paused: prepared.paused, analysis: prepared.analysis };
    const result: RunResult = { ...first, interruptedBy: stop.by(), ran: prepared.changes, timedOut: null, finalPlan: null };
    const { fromManifests } = ctx;
    const { failed, skipped, not_started } = outcome.counts;
    const stopped = first.halted.length > 0 || first.paused.length > 0;
    if (!options.wait || !fromManifests || stopped || stop.signal.aborted || failed + skipped + not_started > 0) return result;
    const roundOptions = {
      stack: plan.stack,
      concurrency,
      signal: stop.signal,
      beforeStart,
      ...rollouts,
      ...(quiet ? {} : { onProgress: (line: string) => io.stderr(`${completeCommands(line, options.where)}\n`) }),
    };
    const waited = await waitForRollouts({
      deadline: rollouts.now() + ctx.waitMs,
      now: rollouts.now,
      signal: stop.signal,
      replan: async () => {
        const planOptions = { ...fromManifests.planOptions, now: rollouts.now(), retryRollouts: [] };
        const { desired, live, routes } = await fetchForPlan(session.client, fromManifests.desired, planOptions);
        return buildPlan(desired, live, planOptions, routes);
      },
      round: (changes) => applyRound(changes, session.client, roundOptions),
    });
    const last = waited.rounds.at(-1);
    return {
      outcome: mergeOutcomes([outcome, ...waited.rounds.map((r) => r.outcome)]),
      interruptedBy: stop.by(),
      ran: prepared.changes,
      held: waited.plan ? [] : waited.pending.length > 0 ? waited.pending : (last?.held ?? first.held),
      halted: waited.rounds.flatMap((r) => r.halted),
      paused: waited.rounds.flatMap((r) => r.paused),
      analysis: [...first.analysis, ...waited.rounds.flatMap((r) => r.analysis)],
      timedOut: waited.timedOut,
      finalPlan: waited.plan,
    };
  } finally {
    stop.dispose();
  }
}

/** The planned changes that were held back, for the convergence check of a saved plan. */
function heldChanges(plan: Plan, held: readonly HeldChange[]): Change[] {
  const addresses = new Set(held.map((h) => h.address));
  return plan.changes.filter((c) => addresses.has(c.address));
}

/**
 * How many weighted backends the account holds after the run, as far as this run knows: those read before it, plus
 * its creates, minus its deletes. It lets the convergence check list them all instead of reading every touched one
 * by id when that takes fewer requests (a 1,000-change run reads back in 10 pages, not 1,000 GETs).
 */
function countAfterRun(before: LiveState, plan: Plan, outcome: ApplyOutcome): number {
  const done = new Set(outcome.results.filter((r) => r.status === "done").map((r) => r.address));
  let count = before.weightedBackends.length;
  for (const change of plan.changes) {
    if (change.kind !== "weighted_backend" || !done.has(change.address)) continue;
    if (change.action === "create") count++;
    else if (change.action === "delete") count--;
  }
  return count;
}

/**
 * Reads again what the run touched and tells whether the live side converged, with the outputs as they are now.
 * From manifests: merge into the live state read before and plan again. From a saved plan: compare with its
 * `after` values. A failed read is reported as "not checked", never thrown: the changes already ran.
 */
async function checkConvergence(
  plan: Plan,
  outcome: ApplyOutcome,
  session: Session,
  fromManifests: FromManifests | undefined,
): Promise<{ convergence: Convergence; outputs: SamlOutput[] }> {
  try {
    if (fromManifests) {
      const touched = buildTouchedAfterRun(plan, outcome);
      const reread = await fetchTouched(session.client, touched, { accountWeightedBackends: countAfterRun(fromManifests.before, plan, outcome) });
      const merged = mergeLive(fromManifests.before, touched, reread);
      const replan = buildPlan(fromManifests.desired, merged, fromManifests.planOptions);
      return { convergence: buildConvergenceFromReplan(replan), outputs: replan.outputs };
    }
    const touched = buildTouchedAfterRun(plan, outcome, plan.outputs);
    const reread = await fetchTouched(session.client, touched);
    return { convergence: buildConvergenceFromPlan(plan, outcome, reread), outputs: buildOutputsFromLive(plan.outputs, reread.routes) };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { convergence: { checked: false, converged: false, remaining: [], error: `the check could not run: ${message}` }, outputs: plan.outputs };
  }
}
