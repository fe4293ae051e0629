/**
 * The GitHub Action: one run. It reads the inputs and the GitHub context, runs the same plan or apply as the CLI
 * (injected, so this file stays a thin adapter), and reports the result the GitHub ways through the Actions
 * toolkit: masks and annotations in the log, step outputs, the job summary, a sticky pull-request comment and the
 * drift issue. The Markdown comes from src/render/action.ts.
 */
import { randomUUID } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import * as core from "@actions/core";
import type { CommandIO } from "../commands/io.js";
import { errorOutcome, EXIT, type Diagnostic } from "../model/errors.js";
import { actionTitle, boundDiagnostic, defaultSummaryLine, outputBlock, renderFailure, renderJobSummary } from "../render/action.js";
import type { ActionRun, Secrets } from "./action-run.js";
import { isPullRequestEvent, loadGitHubContext, resolveCommand, type GitHubContext } from "./context.js";
import type { PlanRecord } from "../core/plan-digest.js";
import type { Plan } from "../model/plan.js";
import { postApplyComment, postDrift, postPlanComment, refreshAcknowledgements, type CommentResult, type DriftReport } from "./post.js";
import { loadMergeReview, reviewAcks, reviewCheck, reviewTargets, rolloutsOnlyCheck, UnreviewedPlanError, type MergeReview } from "./review.js";
import { readActionInputs, readInput, type ActionInputs, type InputDefaults, type OutputName } from "./inputs.js";

export type { InputDefaults } from "./inputs.js";
export type { ActionRun } from "./action-run.js";
import { MIN_VARIABLE_CHARS, Redactor, VAR_PREFIX, type RedactFunction } from "../model/redact.js";

/** What the action asks of `plan`: the CLI's flags, with the API key in the environment of `io`. */
export interface PlanRunOptions {
  paths: string[];
  stack: string;
  /** `--env`: the project file's environment. */
  env?: string;
  /** The variable holding the key: the action hands it its api-key input. */
  apiKeyEnv: string;
  apiUrl?: string;
  /** How a message names `apiUrl`: the action's input. */
  apiUrlSource?: string;
  prune: boolean;
  format: "text";
  color: false;
  /** Save the plan (JSON) here: the `plan-file` output. */
  out: string;
  /** Exit code 2 when the plan has changes. */
  detailedExitcode: true;
}

/** What the action asks of `apply`: no prompt, the acknowledged risks from the `ack` input. */
export interface ApplyRunOptions {
  paths: string[];
  stack: string;
  env?: string;
  apiKeyEnv: string;
  apiUrl?: string;
  apiUrlSource?: string;
  prune: boolean;
  ack: string[];
  autoApprove: true;
  color: false;
  /** Only these addresses (the reviewed plan's, on a merge); absent: everything. */
  target?: string[];
  /** Refuses a plan that is not the reviewed one (see review.ts). */
  review?: (plan: Plan) => void;
  /** Rollouts: go on step after step (`--wait`), for at most `waitTimeout`. */
  wait?: boolean;
  waitTimeout?: string;
  /** How long to wait for another apply's lease (`--lock-timeout`). */
  lockTimeout?: string;
}

/** What plan and apply return to the action. */
export interface RunResult {
  /** The CLI's exit code (docs/cli.md, "Commands"). */
  exitCode: number;
  /** Manifest problems, with file, line and column. */
  diagnostics: Diagnostic[];
  /** The plan (or what apply did) as Markdown, for the comment and the job summary. */
  markdown?: string;
  hasChanges?: boolean;
  /** One line, e.g. `Plan: 1 to create, 2 to update, 0 to delete.` */
  summary?: string;
  /** A plan's record (what it would change), kept in the pull request's comment for the apply on merge. */
  record?: PlanRecord;
  /** The plan's risk rules, each listed in the comment with its acknowledgement. */
  risks?: string[];
  /** The modules whose inventory entry the plan writes with no change of their own (reviewedEntries). */
  entries?: string[];
}

export type PlanRunner = (options: PlanRunOptions, io: CommandIO) => Promise<RunResult>;
export type ApplyRunner = (options: ApplyRunOptions, io: CommandIO) => Promise<RunResult>;

export interface ActionRunners {
  plan: PlanRunner;
  apply: ApplyRunner;
}

export interface ActionOptions {
  /** Comment size limit (GitHub's by default; tests lower it). */
  commentMaxChars?: number;
  /** What the inputs left empty take (the project file's settings). */
  defaults?: InputDefaults;
}

/** What one run did, for callers that report it further (the exit code is what the process ends with). */
export interface ActionOutcome {
  exitCode: number;
  command: "plan" | "apply";
  outputs: Record<OutputName, string>;
  comment?: CommentResult;
  drift?: DriftReport;
}

/** The command's result as the action reports it. */
interface Finished {
  result: RunResult;
  failure: string | undefined;
  planFile: string | undefined;
  diagnostics: Diagnostic[];
  hasChanges: boolean;
  markdown: string;
  summaryLine: string;
}

/**
 * Runs the action once. Secrets (the API key from `api-key` or EDGEPLAN_API_KEY, the GitHub token) are masked
 * before anything else is printed and redacted from every comment, summary, output and log line.
 *
 * Exit code: a plan that succeeds is 0 whether or not it has changes (the `exitcode` output says 2 then), unless
 * `drift-issue` reports drift; invalid manifests, API errors, a refused apply are 1; an apply with failed changes is 3.
 */
export async function runAction(io: CommandIO, runners: ActionRunners, options: ActionOptions = {}): Promise<ActionOutcome> {
  const defaults = options.defaults ?? {};
  const secrets = maskSecrets(io, defaults.apiKeyEnv);
  const run = startRun(io, secrets, defaults);
  if ("exitCode" in run) return run;
  if (run.ctx.commentedPullRequest !== undefined) return acknowledgeRun(run, run.ctx.commentedPullRequest);
  const { review, finished } = await reviewAndRun(io, run, runners);
  annotate(finished, run);
  await writeJobSummary(run, finished);
  const report = {
    markdown: finished.markdown.trim() || finished.summaryLine,
    summaryLine: finished.summaryLine,
    hasChanges: finished.hasChanges,
    ...(finished.result.record ? { record: finished.result.record, risks: finished.result.risks ?? [], entries: finished.result.entries ?? [] } : {}),
  };
  const comment =
    run.command === "apply" ? await postApplyComment(run, review, report.markdown, options.commentMaxChars) : await postPlanComment(run, report, options.commentMaxChars);
  // A failed plan says nothing about drift: the issue is left as it is.
  const failed = finished.result.exitCode === EXIT.error;
  const drift = failed ? undefined : await postDrift(run, report);
  const outputs = outputsOf(finished);
  setOutputs(outputs, secrets.redact);
  if (!failed && run.command === "plan") core.notice(secrets.redact(finished.summaryLine), { title: "edgeplan" });
  return { exitCode: exitCodeOf(run, finished, drift), command: run.command, outputs, comment, drift };
}

/** On an apply for a push: the merged pull request's review first (a failure to read it is the run's failure). */
async function reviewAndRun(io: CommandIO, run: ActionRun, runners: ActionRunners): Promise<{ review: MergeReview | undefined; finished: Finished }> {
  let review: MergeReview | undefined;
  try {
    review = await loadMergeReview(run);
  } catch (err) {
    const message = run.secrets.redact(errorOutcome(err).message);
    return { review, finished: finish(run, { exitCode: EXIT.error, diagnostics: [] }, message, undefined, io.cwd) };
  }
  return { review, finished: await runCommand(io, run, runners, review) };
}

/** A comment on a pull request: its sticky comment shows the acknowledgements; nothing is planned or applied. */
async function acknowledgeRun(run: ActionRun, number: number): Promise<ActionOutcome> {
  const comment = await refreshAcknowledgements(run, number);
  const summary = `The acknowledgements of pull request #${number} for stack ${run.stack} are ${comment === "updated" ? "updated in its comment" : "unchanged"}.`;
  const outputs = { "has-changes": "false", exitcode: String(EXIT.ok), "plan-file": "", summary };
  setOutputs(outputs, run.secrets.redact);
  return { exitCode: EXIT.ok, command: run.command, outputs, comment };
}

/**
 * Reads the two secrets and masks them, with the values of the `EDGEPLAN_VAR_*` variables: the first bytes of the
 * log, before any line could contain them. The two join the redactor of `io` (its own when it has none), which plan
 * and apply share. The api-key input wins, as `--api-key-file` does in the CLI; else the key is in `keyVariable`
 * (the project file's `api_key_env`, which the workflow maps from a secret), never in EDGEPLAN_API_KEY in its
 * place: that could be another environment's key.
 */
function maskSecrets(io: CommandIO, keyVariable = ACTION_KEY_VARIABLE): Secrets {
  const { env } = io;
  const apiKey = readInput("api-key") ?? (env[keyVariable]?.trim() || undefined);
  const githubToken = readInput("github-token");
  // As the redactor, not a value too short to be a secret: the runner would hide every `1` of the log.
  const variables = Object.entries(env).flatMap(([name, value]) => (name.startsWith(VAR_PREFIX) && value && value.trim().length >= MIN_VARIABLE_CHARS ? [value] : []));
  for (const secret of [apiKey, githubToken, ...variables]) {
    // The runner matches masks line by line: each line of a multi-line secret is masked on its own.
    for (const line of secret?.split(/\r?\n/) ?? []) if (line.trim()) core.setSecret(line);
  }
  // The variables' values join it once the manifests name them (src/commands/session.ts).
  const redactor = (io.redactor ?? new Redactor()).add([apiKey, githubToken]);
  return { apiKey, keyVariable, githubToken, redactor, redact: redactor.fn };
}

/** Reads the inputs and the context; on a wrong one, reports it and returns the outcome of a run that could not start. */
function startRun(io: CommandIO, secrets: Secrets, defaults: InputDefaults): ActionRun | ActionOutcome {
  let inputs: ActionInputs;
  let ctx: GitHubContext;
  try {
    inputs = readActionInputs(defaults);
    ctx = loadGitHubContext(io.env, io.cwd);
  } catch (err) {
    const message = secrets.redact(errorOutcome(err).message);
    core.error(message, { title: "edgeplan" });
    io.stderr(`edgeplan: ${message}\n`);
    const outputs = { "has-changes": "false", exitcode: String(EXIT.error), "plan-file": "", summary: `edgeplan could not start: ${message}` };
    setOutputs(outputs, secrets.redact);
    return { exitCode: EXIT.error, command: "plan", outputs };
  }
  const command = resolveCommand(inputs.command, ctx);
  const stack = inputs.stack ?? (io.env.EDGEPLAN_STACK || defaults.stack || "default");
  const pr = isPullRequestEvent(ctx.eventName) ? ctx.pullRequest : undefined;
  const what =
    ctx.commentedPullRequest !== undefined ? `acknowledgements of stack "${stack}" for pull request #${ctx.commentedPullRequest}` : `${command} of stack "${stack}"`;
  const environment = defaults.environment;
  const where = environment === undefined ? "" : ` in environment ${environment}`;
  io.stderr(`edgeplan action: ${what}${where}${pr ? ` for pull request #${pr.number}` : ""} (event ${ctx.eventName || "none"})\n`);
  const run: ActionRun = { command, stack, title: actionTitle(command, stack, environment), inputs, ctx, pr, secrets };
  if (environment !== undefined) run.environment = environment;
  return run;
}

/** Runs plan or apply in a log group, with the API key handed over; the error of a failed run becomes its result. */
async function runCommand(io: CommandIO, run: ActionRun, runners: ActionRunners, review: MergeReview | undefined): Promise<Finished> {
  const { apiKey } = run.secrets;
  if (!apiKey) return finish(run, { exitCode: EXIT.error, diagnostics: [] }, noKeyMessage(run), undefined, io.cwd);
  const child = childIO(io, run.secrets.redactor, apiKey, run);
  const planFile = run.command === "plan" ? planFilePath(run) : undefined;
  const token = `edgeplan-${randomUUID()}`;
  core.startGroup(`edgeplan ${run.command}`);
  // The command's output quotes manifest values a pull request controls: no workflow command may hide in it.
  core.info(`::stop-commands::${token}`);
  let result: RunResult;
  let failure: string | undefined;
  try {
    result = planFile ? await runners.plan(planOptions(run, planFile), child) : await runners.apply(applyOptions(run, review), child);
  } catch (err) {
    ({ result, failure } = failedResult(err, review?.issue.number));
  } finally {
    core.info(`::${token}::`);
    core.endGroup();
  }
  if (result.exitCode === EXIT.error && !failure && !result.diagnostics.some((d) => d.severity === "error")) {
    failure = lastLine(child.captured.err) ?? `edgeplan ${run.command} failed`;
  }
  result.markdown ??= outputBlock(child.captured.out);
  return finish(run, result, failure, planFile, io.cwd);
}

/** Why a run has no API key, and the line of the workflow that gives it one. */
function noKeyMessage(run: ActionRun): string {
  const variable = run.secrets.keyVariable;
  const where =
    variable === ACTION_KEY_VARIABLE
      ? "set the action's api-key input from a secret (api-key: ${{ secrets.EDGEPLAN_API_KEY }})"
      : `${variable} (the project file's api_key_env) is not set: map it from a secret in the step's env ` +
        `(env: ${variable}: \${{ secrets.${variable} }}), or set the action's api-key input`;
  const fork = run.pr?.isFork ? "; this pull request comes from a fork, and GitHub gives no secrets to workflows of forks" : "";
  return `no API key: ${where}${fork}`;
}

/** The result of a command that threw: its exit code and diagnostics, and what to say (manifest errors say themselves). */
function failedResult(err: unknown, merged: number | undefined): { result: RunResult; failure: string | undefined } {
  const outcome = errorOutcome(err);
  const result: RunResult = { exitCode: outcome.exitCode, diagnostics: outcome.diagnostics };
  // The plan at merge that was not reviewed is shown under the reason, as a refused apply shows its plan.
  if (err instanceof UnreviewedPlanError) result.markdown = err.planMarkdown;
  if (outcome.diagnostics.length > 0) return { result, failure: undefined };
  const rules = outcome.unacknowledged;
  let hint = "";
  if (rules.length > 0 && merged !== undefined) {
    hint = `\nA person who may merge acknowledges each rule with a comment in pull request #${merged} (\`/edgeplan ack ${rules.join(" ")}\`), then re-runs this job.`;
  } else if (rules.length > 0) hint = `\nIn the action, name the rules in the ack input (for example \`ack: ${rules.join(", ")}\`).`;
  return { result, failure: `${outcome.message}${hint}` };
}

/**
 * Where plan and apply find the key the action read (maskSecrets): the api-key input, else the variable the
 * project file's `api_key_env` names, handed over under this one name.
 */
const ACTION_KEY_VARIABLE = "EDGEPLAN_API_KEY";

/** The api-url input, as a refusal names it (it must match the environment's api_url when the file gives one). */
const API_URL_INPUT = "the action's api-url input";

function planFilePath(run: ActionRun): string {
  const name = run.environment === undefined ? run.stack : `${run.environment}-${run.stack}`;
  const path = join(run.ctx.tempDir ?? tmpdir(), `edgeplan-plan-${name.replace(/[^A-Za-z0-9._-]/g, "_")}.json`);
  rmSync(path, { force: true });
  return path;
}

function planOptions(run: ActionRun, out: string): PlanRunOptions {
  const { paths, prune, apiUrl } = run.inputs;
  const options: PlanRunOptions = { paths, stack: run.stack, apiKeyEnv: ACTION_KEY_VARIABLE, prune, format: "text", color: false, out, detailedExitcode: true };
  if (apiUrl) Object.assign(options, { apiUrl, apiUrlSource: API_URL_INPUT });
  if (run.environment !== undefined) options.env = run.environment;
  return options;
}

function applyOptions(run: ActionRun, review: MergeReview | undefined): ApplyRunOptions {
  const { paths, prune, ack, apiUrl, wait, waitTimeout, lockTimeout } = run.inputs;
  const options: ApplyRunOptions = { paths, stack: run.stack, apiKeyEnv: ACTION_KEY_VARIABLE, prune, ack: reviewAcks(review, ack), autoApprove: true, color: false };
  if (apiUrl) Object.assign(options, { apiUrl, apiUrlSource: API_URL_INPUT });
  if (run.environment !== undefined) options.env = run.environment;
  if (run.inputs.rolloutsOnly) options.review = rolloutsOnlyCheck(run);
  else if (review) {
    options.review = reviewCheck(review, run);
    const target = reviewTargets(review, run);
    if (target.length > 0) options.target = target;
  }
  if (wait) options.wait = true;
  if (waitTimeout) options.waitTimeout = waitTimeout;
  if (lockTimeout) options.lockTimeout = lockTimeout;
  return options;
}

/** What the report needs of a finished command: paths relative to the repository, the Markdown, the summary line. */
function finish(run: ActionRun, result: RunResult, failure: string | undefined, planFile: string | undefined, cwd: string): Finished {
  // Diagnostics name files relative to the working directory; GitHub wants them relative to the repository root.
  const diagnostics = result.diagnostics.map((d) => boundDiagnostic({ ...d, pos: { ...d.pos, file: repoRelativePath(resolve(cwd, d.pos.file), run.ctx.workspace) } }));
  const failed = result.exitCode === EXIT.error;
  const hasChanges = !failed && (result.hasChanges ?? (run.command === "plan" && result.exitCode === EXIT.changes));
  // A refused apply still shows its plan (the risks it names): keep it under the failure.
  const markdown = failed ? renderFailure(run.command, diagnostics, failure, result.markdown) : (result.markdown ?? "");
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  const summaryLine = result.summary ?? defaultSummaryLine({ command: run.command, stack: run.stack, exitCode: result.exitCode, hasChanges, errors }, failure);
  return { result, failure, planFile, diagnostics, hasChanges, markdown, summaryLine };
}

/** Annotations: each manifest problem on its line, and the failure. */
function annotate(finished: Finished, run: ActionRun): void {
  const { redact } = run.secrets;
  for (const d of finished.diagnostics) {
    const where = { title: "edgeplan", file: d.pos.file, startLine: d.pos.line, startColumn: d.pos.col };
    if (d.severity === "warning") core.warning(redact(d.message), where);
    else core.error(redact(d.message), where);
  }
  if (finished.failure) core.error(redact(finished.failure), { title: "edgeplan" });
}

/** The job summary holds the whole report (a comment may have to cut it). */
async function writeJobSummary(run: ActionRun, finished: Finished): Promise<void> {
  if (!run.ctx.summaryPath) return;
  const text = renderJobSummary(run.title, finished.markdown.trim() || finished.summaryLine);
  try {
    await core.summary.emptyBuffer().addRaw(run.secrets.redact(text)).write();
  } catch (err) {
    core.warning(`the job summary could not be written: ${(err as Error).message}`, { title: "edgeplan" });
  }
}

function outputsOf(finished: Finished): Record<OutputName, string> {
  const failed = finished.result.exitCode === EXIT.error;
  return {
    "has-changes": String(finished.hasChanges),
    exitcode: String(finished.result.exitCode),
    "plan-file": !failed && finished.planFile && existsSync(finished.planFile) ? finished.planFile : "",
    summary: finished.summaryLine,
  };
}

function setOutputs(outputs: Record<OutputName, string>, redact: RedactFunction): void {
  for (const [name, value] of Object.entries(outputs)) core.setOutput(name, redact(value));
}

/** A plan with changes succeeds, unless it reports drift; every other run ends with the command's own code. */
function exitCodeOf(run: ActionRun, finished: Finished, drift: DriftReport | undefined): number {
  const code = finished.result.exitCode;
  if (run.command !== "plan" || code !== EXIT.changes) return code;
  return drift?.found ? EXIT.changes : EXIT.ok;
}

/** The CommandIO plan and apply run with: the API key in its environment, output redacted and recorded. */
function childIO(io: CommandIO, redactor: Redactor, apiKey: string, run: ActionRun): CommandIO & { captured: { out: string; err: string } } {
  const env: Record<string, string | undefined> = {};
  // The inputs (the GitHub token among them) are the action's business, not the command's.
  for (const [name, value] of Object.entries(io.env)) if (!name.startsWith("INPUT_")) env[name] = value;
  env[ACTION_KEY_VARIABLE] = apiKey;
  env.EDGEPLAN_STACK = run.stack;
  if (run.inputs.apiUrl) env.EDGEPLAN_API_URL = run.inputs.apiUrl;
  const captured = { out: "", err: "" };
  const tee = (stream: "out" | "err", write: (text: string) => void) => (text: string) => {
    const safe = redactor.redact(text);
    captured[stream] += safe;
    write(safe);
  };
  return {
    captured,
    redactor,
    stdout: tee("out", (t) => io.stdout(t)),
    stderr: tee("err", (t) => io.stderr(t)),
    env,
    cwd: io.cwd,
    stdoutIsTTY: false,
    stdinIsTTY: false,
    prompt: async () => "",
  };
}

function lastLine(text: string): string | undefined {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .pop();
}

/** `file` relative to `root` when it lies inside it, with `/` separators; otherwise unchanged but for separators. */
export function repoRelativePath(file: string, root: string): string {
  const norm = (p: string): string => p.replace(/\\/g, "/");
  const f = norm(file);
  const r = norm(root).replace(/\/+$/, "");
  if (r && f.startsWith(`${r}/`)) return f.slice(r.length + 1);
  return f.replace(/^\.\//, "");
}
