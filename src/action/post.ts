/**
 * What the action posts on GitHub besides the log: the sticky comment of a pull request's plan, and the drift issue
 * of a plan outside pull requests. Neither fails the step when GitHub refuses it: the report is in the job summary.
 */
import * as core from "@actions/core";
import { COMMENT_MAX_CHARS, commentMarker, driftIssueTitle, driftMarker, renderComment, renderDrift, renderDriftResolved } from "../render/action.js";
import { createGitHub, statusOf, syncDriftIssue, upsertStickyComment, type DriftResult, type Octokit } from "./github.js";
import type { ActionRun } from "./run.js";

export type CommentResult = "created" | "updated" | "skipped" | "forbidden" | "failed";

/** What the drift check did: whether it found drift, and what became of the issue. */
export interface DriftReport {
  found: boolean;
  issue: DriftResult["action"] | "forbidden" | "failed";
  number?: number;
}

/** A run's report as the posts need it. */
export interface PostedReport {
  markdown: string;
  summaryLine: string;
  hasChanges: boolean;
}

/** A client for the run's token, or undefined (with a notice saying why the post is skipped). */
async function github(run: ActionRun, what: string): Promise<{ octokit: Octokit; repo: { owner: string; repo: string } } | undefined> {
  const token = run.secrets.githubToken;
  const repo = run.ctx.repository;
  if (token && repo) return { octokit: await createGitHub(run.ctx.apiUrl, token), repo };
  const why = !token ? "the github-token input is empty" : "GITHUB_REPOSITORY is not set";
  core.notice(`no ${what}: ${why}; the plan is in the job summary`, { title: "edgeplan" });
  return undefined;
}

/** Says why GitHub refused a post; returns `forbidden` for a read-only token (a fork's), else `failed`. */
function refused(err: unknown, what: string, redact: (text: string) => string): "forbidden" | "failed" {
  if (statusOf(err) === 403) {
    core.notice(`the plan could not be posted as ${what}: the token is read-only (as it is for pull requests from forks); the plan is in the job summary`, {
      title: "edgeplan",
    });
    return "forbidden";
  }
  core.warning(redact(`the plan could not be posted as ${what}: ${(err as Error).message}; the plan is in the job summary`), { title: "edgeplan" });
  return "failed";
}

/** On a pull request's plan (unless the comment input is false): the one comment of the stack, created or edited. */
export async function postPlanComment(run: ActionRun, markdown: string, max: number = COMMENT_MAX_CHARS): Promise<CommentResult> {
  if (run.command !== "plan" || !run.pr || !run.inputs.comment) return "skipped";
  const client = await github(run, "pull-request comment");
  if (!client) return "skipped";
  const marker = commentMarker(run.stack);
  const body = renderComment({ marker, title: run.title, markdown, headSha: run.pr.headSha, runUrl: run.ctx.runUrl, max });
  try {
    const issue = { ...client.repo, number: run.pr.number };
    return (await upsertStickyComment(client.octokit, issue, marker, run.secrets.redact(body))).action;
  } catch (err) {
    // The plan itself succeeded and is in the summary: a comment that could not be written does not fail the step.
    return refused(err, "a pull-request comment", run.secrets.redact);
  }
}

/**
 * With the drift-issue input, on a plan outside a pull request: drift opens the stack's issue or comments on it
 * (and the step fails, so that drift is seen); a plan without changes closes an open one.
 */
export async function postDrift(run: ActionRun, report: PostedReport): Promise<DriftReport | undefined> {
  if (run.command !== "plan" || run.pr || !run.inputs.driftIssue) return undefined;
  const found = report.hasChanges;
  if (found) core.error(run.secrets.redact(`drift in stack ${run.stack}: ${report.summaryLine}`), { title: "edgeplan drift" });
  const client = await github(run, "drift issue");
  if (!client) return { found, issue: "failed" };
  const runUrl = run.ctx.runUrl;
  const drift = (issue: boolean): string =>
    run.secrets.redact(renderDrift({ stack: run.stack, summary: report.summaryLine, markdown: report.markdown, issue, ...(runUrl ? { runUrl } : {}) }));
  try {
    const result = await syncDriftIssue(client.octokit, client.repo, {
      marker: driftMarker(run.stack),
      title: driftIssueTitle(run.stack),
      issueBody: drift(true),
      commentBody: drift(false),
      resolvedBody: renderDriftResolved(run.stack, runUrl),
      hasDrift: found,
    });
    if (result.number !== undefined) core.info(`edgeplan: drift issue #${result.number} ${result.action}`);
    return { found, issue: result.action, ...(result.number !== undefined ? { number: result.number } : {}) };
  } catch (err) {
    return { found, issue: refused(err, "the drift issue", run.secrets.redact) };
  }
}
