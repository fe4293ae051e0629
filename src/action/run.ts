/**
 * The GitHub Action: one run of `edgeplan action`. It reads the inputs and the GitHub context, runs the same plan or
 * apply as the CLI (injected, so this file stays a thin adapter), and reports the result the GitHub ways: workflow
 * commands in the log, a sticky pull-request comment, the job summary and step outputs.
 */
import { existsSync, rmSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import type { CommandIO } from "../commands/io.js";
import { EdgeplanError, EXIT, ManifestError, UnsafePlanError, formatDiagnostic, type Diagnostic } from "../model/errors.js";
import { buildCommentBody, commentMarker, COMMENT_MAX_CHARS, startsWithHeading } from "./comment.js";
import { isPullRequestEvent, loadGitHubContext, resolveCommand, type GitHubContext } from "./context.js";
import { GitHubApiError, GitHubClient, upsertStickyComment } from "./github.js";
import { inputEnvName, readActionInputs, type ActionInputs, type OutputName } from "./inputs.js";
import { writeOutputs, writeSummary } from "./outputs.js";
import { createRedactor, type Redactor } from "./redact.js";
import {
  addMaskCommands,
  annotation,
  diagnosticAnnotation,
  repoRelativePath,
  resumeCommands,
  stopCommands,
} from "./workflow-commands.js";

/** What the action asks of `plan`: the CLI's flags, with the API key in the environment of `io`. */
export interface PlanRunOptions {
  paths: string[];
  stack: string;
  apiUrl?: string;
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
  apiUrl?: string;
  prune: boolean;
  ack: string[];
  autoApprove: true;
  color: false;
}

/** What plan and apply return to the action. */
export interface RunResult {
  /** The CLI's exit code (README, "Commands and exit codes"). */
  exitCode: number;
  /** Manifest problems, with file, line and column. */
  diagnostics: Diagnostic[];
  /** The plan (or what apply did) as Markdown, for the comment and the job summary. */
  markdown?: string;
  hasChanges?: boolean;
  /** One line, e.g. `Plan: 1 to create, 2 to update, 0 to delete.` */
  summary?: string;
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
}

/** What one run did, for callers that report it further (the exit code is what the CLI ends with). */
export interface ActionOutcome {
  exitCode: number;
  command: "plan" | "apply";
  outputs: Record<OutputName, string>;
  comment?: "created" | "updated" | "skipped" | "forbidden" | "failed";
}

/**
 * Runs the action once. Secrets (the API key from `api-key` or EDGEPLAN_API_KEY, the GitHub token) are masked
 * before anything else is printed and redacted from every comment, summary, output and log line.
 *
 * Exit code: a plan that succeeds is 0 whether or not it has changes (the `exitcode` output says 2 then); invalid
 * manifests, API errors, a refused apply are 1; an apply with failed changes is 3.
 */
export async function runAction(io: CommandIO, runners: ActionRunners, options: ActionOptions = {}): Promise<ActionOutcome> {
  const env = io.env;
  const apiKey = env[inputEnvName("api-key")]?.trim() || env.EDGEPLAN_API_KEY?.trim() || undefined;
  const githubToken = env[inputEnvName("github-token")]?.trim() || undefined;
  // First bytes of the log: the runner must know the secrets before any line could contain them.
  for (const secret of [apiKey, githubToken]) if (secret) io.stdout(addMaskCommands(secret));
  const redact = createRedactor([apiKey, githubToken]);
  const log = (text: string): void => io.stdout(redact(text));
  const warn = (text: string): void => io.stderr(redact(text));

  const outputs: Record<OutputName, string> = { "has-changes": "false", exitcode: String(EXIT.error), "plan-file": "", summary: "" };
  let inputs: ActionInputs;
  let ctx: GitHubContext;
  try {
    inputs = readActionInputs(env);
    ctx = loadGitHubContext(env, io.cwd);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    log(annotation("error", message));
    warn(`edgeplan: ${message}\n`);
    outputs.summary = `edgeplan could not start: ${message}`;
    writeOutputsTo(loadContextQuietly(env, io.cwd)?.outputPath, outputs, redact, warn);
    return { exitCode: EXIT.error, command: "plan", outputs };
  }

  const command = resolveCommand(inputs.command, ctx);
  const stack = inputs.stack ?? (env.EDGEPLAN_STACK || "default");
  const title = `edgeplan ${command}: stack \`${stack}\``;
  const pr = isPullRequestEvent(ctx.eventName) ? ctx.pullRequest : undefined;
  warn(`edgeplan action: ${command} of stack "${stack}"${pr ? ` for pull request #${pr.number}` : ""} (event ${ctx.eventName || "none"})\n`);

  let result: RunResult;
  let failure: string | undefined;
  let planFile: string | undefined;
  if (!apiKey) {
    failure =
      "no API key: set the action's api-key input from a secret (api-key: ${{ secrets.EDGEPLAN_API_KEY }})" +
      (pr?.isFork ? "; this pull request comes from a fork, and GitHub gives no secrets to workflows of forks" : "");
    result = { exitCode: EXIT.error, diagnostics: [] };
  } else {
    const child = childIO(io, redact, apiKey, stack, inputs.apiUrl);
    const token = `edgeplan-${randomUUID()}`;
    log(`::group::edgeplan ${command}\n`);
    // The command's output quotes manifest values a pull request controls: no workflow command may hide in it.
    log(stopCommands(token));
    try {
      if (command === "plan") {
        planFile = join(ctx.tempDir ?? tmpdir(), `edgeplan-plan-${stack.replace(/[^A-Za-z0-9._-]/g, "_")}.json`);
        rmSync(planFile, { force: true });
        const planOptions: PlanRunOptions = {
          paths: inputs.paths,
          stack,
          prune: inputs.prune,
          format: "text",
          color: false,
          out: planFile,
          detailedExitcode: true,
        };
        if (inputs.apiUrl) planOptions.apiUrl = inputs.apiUrl;
        result = await runners.plan(planOptions, child);
      } else {
        const applyOptions: ApplyRunOptions = {
          paths: inputs.paths,
          stack,
          prune: inputs.prune,
          ack: inputs.ack,
          autoApprove: true,
          color: false,
        };
        if (inputs.apiUrl) applyOptions.apiUrl = inputs.apiUrl;
        result = await runners.apply(applyOptions, child);
      }
    } catch (err) {
      result = {
        exitCode: err instanceof EdgeplanError ? err.exitCode : EXIT.error,
        diagnostics: err instanceof ManifestError ? err.diagnostics : [],
      };
      if (!(err instanceof ManifestError)) {
        failure = err instanceof EdgeplanError ? err.message : `internal error: ${err instanceof Error ? err.message : String(err)}`;
      }
      if (err instanceof UnsafePlanError && /--ack /.test(err.message)) {
        failure += "\nIn the action, name the rules in the ack input (for example `ack: traffic-shift`).";
      }
    } finally {
      log(resumeCommands(token));
      log("::endgroup::\n");
    }
    if (result.exitCode === EXIT.error && !failure && !result.diagnostics.some((d) => d.severity === "error")) {
      failure = lastLine(child.captured.err) ?? `edgeplan ${command} failed`;
    }
    result.markdown ??= child.captured.out.trim() ? "```text\n" + child.captured.out.trimEnd() + "\n```" : undefined;
  }

  // Annotations come after the resume line, so that the runner reads them.
  // Diagnostics name files relative to the working directory; GitHub wants them relative to the repository root.
  const diagnostics = result.diagnostics.map((d) => ({
    ...d,
    pos: { ...d.pos, file: repoRelativePath(resolve(io.cwd, d.pos.file), ctx.workspace) },
  }));
  for (const d of diagnostics) log(diagnosticAnnotation(d, ctx.workspace));
  if (failure) {
    log(annotation("error", failure));
    warn(`edgeplan: ${failure}\n`);
  }

  const failed = result.exitCode === EXIT.error;
  const hasChanges = !failed && (result.hasChanges ?? (command === "plan" && result.exitCode === EXIT.changes));
  // A refused apply still shows its plan (the risks it names): keep it under the failure.
  const markdown = failed
    ? [failureMarkdown(command, diagnostics, failure), result.markdown?.trim()].filter(Boolean).join("\n\n")
    : (result.markdown ?? "");
  const summaryLine = result.summary ?? defaultSummaryLine(command, stack, result, hasChanges, failure);
  outputs["has-changes"] = String(hasChanges);
  outputs.exitcode = String(result.exitCode);
  outputs["plan-file"] = !failed && planFile && existsSync(planFile) ? planFile : "";
  outputs.summary = summaryLine;

  if (ctx.summaryPath) {
    try {
      const body = markdown.trim() || summaryLine;
      writeSummary(ctx.summaryPath, redact(`${startsWithHeading(body) ? "" : `### ${title}\n\n`}${body}\n`));
    } catch (err) {
      log(annotation("warning", `the job summary could not be written: ${(err as Error).message}`));
    }
  }

  let comment: ActionOutcome["comment"];
  if (command === "plan" && pr && inputs.comment) {
    comment = await postComment({
      ctx,
      pr,
      token: githubToken,
      marker: commentMarker(stack),
      body: redact(
        buildCommentBody({
          marker: commentMarker(stack),
          title,
          markdown: markdown.trim() || summaryLine,
          footer: [pr.headSha ? `Commit ${pr.headSha.slice(0, 7)}` : undefined, ctx.runUrl ? `[workflow run](${ctx.runUrl})` : undefined]
            .filter(Boolean)
            .join(" · "),
          ...(ctx.runUrl ? { runUrl: ctx.runUrl } : {}),
          max: options.commentMaxChars ?? COMMENT_MAX_CHARS,
        }),
      ),
      log,
    });
  } else {
    comment = "skipped";
  }

  writeOutputsTo(ctx.outputPath, outputs, redact, warn);
  if (!failed && command === "plan") log(annotation("notice", summaryLine));
  const exitCode = command === "plan" && result.exitCode === EXIT.changes ? EXIT.ok : result.exitCode;
  return { exitCode, command, outputs, comment };
}

/** The CommandIO plan and apply run with: the API key in its environment, output redacted and recorded. */
function childIO(
  io: CommandIO,
  redact: Redactor,
  apiKey: string,
  stack: string,
  apiUrl: string | undefined,
): CommandIO & { captured: { out: string; err: string } } {
  const env: Record<string, string | undefined> = {};
  // The inputs (the GitHub token among them) are the action's business, not the command's.
  for (const [name, value] of Object.entries(io.env)) if (!name.startsWith("INPUT_")) env[name] = value;
  env.EDGEPLAN_API_KEY = apiKey;
  env.EDGEPLAN_STACK = stack;
  if (apiUrl) env.EDGEPLAN_API_URL = apiUrl;
  const captured = { out: "", err: "" };
  return {
    captured,
    stdout(text) {
      const safe = redact(text);
      captured.out += safe;
      io.stdout(safe);
    },
    stderr(text) {
      const safe = redact(text);
      captured.err += safe;
      io.stderr(safe);
    },
    env,
    cwd: io.cwd,
    stdoutIsTTY: false,
    stdinIsTTY: false,
    prompt: async () => "",
  };
}

async function postComment(args: {
  ctx: GitHubContext;
  pr: { number: number };
  token: string | undefined;
  marker: string;
  body: string;
  log: (text: string) => void;
}): Promise<ActionOutcome["comment"]> {
  const { ctx, pr, token, log } = args;
  if (!token || !ctx.repository) {
    log(annotation("notice", `no pull-request comment: ${!token ? "the github-token input is empty" : "GITHUB_REPOSITORY is not set"}; the plan is in the job summary`));
    return "skipped";
  }
  const client = new GitHubClient({ apiUrl: ctx.apiUrl, token });
  try {
    const issue = { owner: ctx.repository.owner, repo: ctx.repository.repo, number: pr.number };
    const done = await upsertStickyComment(client, issue, args.marker, args.body);
    return done.action;
  } catch (err) {
    if (err instanceof GitHubApiError && err.status === 403) {
      log(
        annotation(
          "notice",
          "the plan could not be posted as a pull-request comment: the token is read-only (as it is for pull requests from forks); the plan is in the job summary",
        ),
      );
      return "forbidden";
    }
    // The plan itself succeeded and is in the summary: a comment that could not be written does not fail the step.
    log(annotation("warning", `the plan could not be posted as a pull-request comment: ${(err as Error).message}; the plan is in the job summary`));
    return "failed";
  } finally {
    await client.close();
  }
}

function failureMarkdown(command: string, diagnostics: Diagnostic[], failure: string | undefined): string {
  const errors = diagnostics.filter((d) => d.severity === "error");
  const lines = [`**The ${command} failed.**`, ""];
  if (errors.length > 0) {
    lines.push(`${errors.length} ${errors.length === 1 ? "error" : "errors"} in the manifests; nothing was sent to the API:`, "");
    lines.push("```text", ...diagnostics.map(formatDiagnostic), "```");
  }
  if (failure) lines.push("```text", failure, "```");
  return lines.join("\n");
}

function defaultSummaryLine(
  command: "plan" | "apply",
  stack: string,
  result: RunResult,
  hasChanges: boolean,
  failure: string | undefined,
): string {
  const errors = result.diagnostics.filter((d) => d.severity === "error").length;
  if (result.exitCode === EXIT.error) {
    if (errors > 0) return `The ${command} of stack ${stack} failed: ${errors} ${errors === 1 ? "error" : "errors"} in the manifests.`;
    return `The ${command} of stack ${stack} failed: ${failure ?? "see the log"}`;
  }
  if (command === "plan") {
    return hasChanges ? `The plan of stack ${stack} has changes.` : `No changes in stack ${stack}: live state matches the manifests.`;
  }
  if (result.exitCode === EXIT.partial) return `The apply of stack ${stack} finished with some changes failed.`;
  return hasChanges ? `The apply of stack ${stack} converged.` : `No changes in stack ${stack}: nothing to apply.`;
}

function lastLine(text: string): string | undefined {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean)
    .pop();
}

function loadContextQuietly(env: Record<string, string | undefined>, cwd: string): GitHubContext | undefined {
  try {
    return loadGitHubContext(env, cwd);
  } catch {
    return env.GITHUB_OUTPUT ? { eventName: "", apiUrl: "", workspace: cwd, outputPath: env.GITHUB_OUTPUT } : undefined;
  }
}

function writeOutputsTo(
  path: string | undefined,
  outputs: Record<OutputName, string>,
  redact: Redactor,
  warn: (text: string) => void,
): void {
  const safe = Object.fromEntries(Object.entries(outputs).map(([k, v]) => [k, redact(v)]));
  if (path) {
    writeOutputs(path, safe);
    return;
  }
  // Outside GitHub there is no outputs file: show the values so a local run can be checked.
  for (const [name, value] of Object.entries(safe)) warn(`output ${name}=${value}\n`);
}
