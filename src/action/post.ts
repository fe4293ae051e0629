/**
 * What the action posts on GitHub besides the log: the sticky comment of a pull request's plan (with the record of
 * the plan and its acknowledgements), the result of a merge's apply in that comment, and the drift issue of a plan
 * outside pull requests. Neither fails the step when GitHub refuses it: the report is in the job summary.
 */
import * as core from "@actions/core";
import type { PlanRecord } from "../core/plan-digest.js";
import {
  COMMENT_MAX_CHARS,
  commentMarker,
  driftIssueTitle,
  driftMarker,
  renderComment,
  renderDrift,
  renderDriftResolved,
  replaceAcknowledgements,
} from "../render/action.js";
import type { ActionRun } from "./action-run.js";
import { createGitHub, findStickyComment, listIssueComments, statusOf, syncDriftIssue, writeStickyComment, type DriftResult, type Octokit } from "./github.js";
import { acknowledgementsOf, reviewAcknowledgements, reviewPlanComment, type MergeReview } from "./review.js";

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
  /** What a plan would change, recorded in the comment for the apply on merge; undefined when the plan failed. */
  record?: PlanRecord;
  risks?: string[];
  /** The modules whose inventory entry the plan writes with no change of their own. */
  entries?: string[];
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

/**
 * On a pull request's plan (unless the comment input is false): the one comment of the stack, created or edited,
 * with the record of the plan and each risk's acknowledgement (or what acknowledges it).
 */
export async function postPlanComment(run: ActionRun, report: PostedReport, max: number = COMMENT_MAX_CHARS): Promise<CommentResult> {
  if (run.command !== "plan" || !run.pr || !run.inputs.comment) return "skipped";
  const client = await github(run, "pull-request comment");
  if (!client) return "skipped";
  const marker = commentMarker(run.stack, run.environment);
  try {
    const issue = { ...client.repo, number: run.pr.number };
    const comments = await listIssueComments(client.octokit, issue);
    const plan = report.record && { record: report.record, risks: report.risks ?? [], entries: report.entries ?? [] };
    const preamble = plan ? await reviewPlanComment(client.octokit, client.repo, comments, run, plan) : undefined;
    const body = renderComment({ marker, title: run.title, markdown: report.markdown, preamble, headSha: run.pr.headSha, runUrl: run.ctx.runUrl, max });
    const existing = findStickyComment(comments, marker, run.inputs.commentAuthor);
    return (await writeStickyComment(client.octokit, issue, existing?.id, run.secrets.redact(body))).action;
  } catch (err) {
    // The plan itself succeeded and is in the summary: a comment that could not be written does not fail the step.
    return refused(err, "a pull-request comment", run.secrets.redact);
  }
}

/**
 * After an apply on merge: the merged pull request's comment shows what the apply did (or why it wrote nothing, with
 * the plan at merge), under the record of the reviewed plan, kept as it was so that a re-run compares with it.
 */
export async function postApplyComment(run: ActionRun, review: MergeReview | undefined, markdown: string, max: number = COMMENT_MAX_CHARS): Promise<CommentResult> {
  if (!review) return "skipped";
  const reviewed = review.reviewed;
  const rules = reviewed?.rules ?? [];
  const acks = acknowledgementsOf(rules, review.commands, reviewed?.digest);
  const preamble = [reviewed?.line, acks].filter(Boolean).join("\n") || undefined;
  const body = renderComment({
    marker: commentMarker(run.stack, run.environment),
    title: run.title,
    markdown,
    preamble,
    headSha: run.ctx.sha,
    commitLabel: "Merged as",
    runUrl: run.ctx.runUrl,
    max,
  });
  try {
    const result = await writeStickyComment(review.octokit, review.issue, review.sticky?.id, run.secrets.redact(body));
    core.info(`edgeplan: the result is in the comment of pull request #${review.issue.number}`);
    return result.action;
  } catch (err) {
    return refused(err, "a pull-request comment", run.secrets.redact);
  }
}

/**
 * On a comment of a pull request (`issue_comment`): the sticky comment's risks show the acknowledgements made so
 * far. Nothing is planned, so no API key and no checkout are needed. Returns what became of the comment.
 */
export async function refreshAcknowledgements(run: ActionRun, number: number): Promise<CommentResult> {
  const client = await github(run, "pull-request comment");
  if (!client) return "skipped";
  try {
    const issue = { ...client.repo, number };
    const comments = await listIssueComments(client.octokit, issue);
    const acks = await reviewAcknowledgements(client.octokit, client.repo, comments, run);
    if (!acks) {
      core.info(`edgeplan: pull request #${number} has no plan of stack ${run.stack} with risks to acknowledge`);
      return "skipped";
    }
    const { sticky, section } = acks;
    const body = replaceAcknowledgements(sticky.body, section);
    if (body === undefined || body === sticky.body) return "skipped";
    return (await writeStickyComment(client.octokit, issue, sticky.id, run.secrets.redact(body))).action;
  } catch (err) {
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
      marker: driftMarker(run.stack, run.environment),
      title: driftIssueTitle(run.stack, run.environment),
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
