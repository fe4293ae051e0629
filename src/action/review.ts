/**
 * The apply on merge applies what was reviewed. On a push to the default branch, the action finds the pull request
 * that merged the commit, reads the record of the plan reviewed there (the hidden line of its own sticky comment)
 * and the acknowledgements of people who may merge, and hands apply a check: the plan made at merge, under the
 * stack's lease, must be the reviewed one, or nothing is written. The apply is limited to the addresses the reviewed
 * plan changed, so a merge never applies another pull request's changes, whichever of two quick merges runs first.
 */
import * as core from "@actions/core";
import { buildPlanRecord, diffPlanRecords } from "../core/plan-digest.js";
import { EdgeplanError } from "../model/errors.js";
import type { Plan } from "../model/plan.js";
import { ACCEPT_DIGEST_CHARS, commentMarker, describeDifference, parseReviewedMarker, renderActionPlan } from "../render/action.js";
import { readCommands, type PullRequestCommands } from "./acks.js";
import { createGitHub, findMergedPullRequest, findStickyComment, listIssueComments, type IssueComment, type IssueRef, type Octokit } from "./github.js";
import type { ActionRun } from "./run.js";

/** What the merged pull request says about the plan of this stack. */
export interface MergeReview {
  octokit: Octokit;
  issue: IssueRef;
  /** The action's sticky comment of the stack, where the result goes; undefined when the pull request has none. */
  sticky: IssueComment | undefined;
  reviewed: ReturnType<typeof parseReviewedMarker>;
  commands: PullRequestCommands;
}

/** A plan at merge that is not the reviewed one: nothing was written; the plan is shown under the reason. */
export class UnreviewedPlanError extends EdgeplanError {
  override name = "UnreviewedPlanError";
  constructor(
    message: string,
    readonly planMarkdown: string,
  ) {
    super(message);
  }
}

/**
 * The review of the pull request that merged this run's commit, for an apply on a push; undefined (and a notice
 * saying so) when the run is not one, or no pull request merged the commit: then the apply goes on as for any push.
 * @throws when GitHub cannot be read: without the reviewed plan, the merge is not applied.
 */
export async function loadMergeReview(run: ActionRun): Promise<MergeReview | undefined> {
  const { ctx, secrets } = run;
  if (run.command !== "apply" || ctx.eventName !== "push" || !ctx.sha || !ctx.repository || !secrets.githubToken) return undefined;
  const octokit = await createGitHub(ctx.apiUrl, secrets.githubToken);
  let number: number | undefined;
  try {
    number = await findMergedPullRequest(octokit, ctx.repository, ctx.sha, ctx.defaultBranch);
    if (number === undefined) {
      core.notice(`no reviewed plan was found: no pull request merged commit ${ctx.sha.slice(0, 7)}; the manifests are applied as they are`, { title: "edgeplan" });
      return undefined;
    }
    const issue = { ...ctx.repository, number };
    const comments = await listIssueComments(octokit, issue);
    const sticky = findStickyComment(comments, commentMarker(run.stack, run.environment), run.inputs.commentAuthor);
    const reviewed = sticky ? parseReviewedMarker(sticky.body) : undefined;
    const commands = await readCommands(octokit, ctx.repository, comments, run.inputs.commentAuthor, reviewed?.rules ?? []);
    core.info(`edgeplan: commit ${ctx.sha.slice(0, 7)} merged pull request #${number}; ${reviewed ? "its reviewed plan is the reference" : "it holds no reviewed plan"}`);
    return { octokit, issue, sticky, reviewed, commands };
  } catch (err) {
    const where = number === undefined ? `the pull request of commit ${ctx.sha.slice(0, 7)}` : `pull request #${number}`;
    throw new EdgeplanError(
      `GitHub: ${where} could not be read (${(err as Error).message}), so the reviewed plan is unknown and nothing was applied; the token needs contents: read and pull-requests: read, then re-run the job`,
      { cause: err },
    );
  }
}

/** The risk rules acknowledged in the pull request, besides those of the ack input. */
export function reviewAcks(review: MergeReview | undefined, input: readonly string[]): string[] {
  return [...new Set([...input, ...(review?.commands.acks.map((a) => a.rule) ?? [])])];
}

/**
 * The addresses the apply is limited to: those the reviewed plan changed (none: no limit). An inventory write is no
 * target: the plan makes it for the modules in scope.
 */
export function reviewTargets(review: MergeReview | undefined, run: ActionRun): string[] {
  if (!review?.reviewed?.changes || run.inputs.onDifference === "apply") return [];
  return Object.keys(review.reviewed.changes).filter((address) => !address.startsWith("inventory."));
}

/**
 * The check apply runs on its plan before writing: the same as the reviewed plan (or a subset of it, what is left
 * once some of it is live), or a plan a person who may merge accepted by its digest. Anything else throws
 * UnreviewedPlanError, unless `on-difference` is `apply` (then a warning says what was not reviewed).
 */
export function reviewCheck(review: MergeReview, run: ActionRun): (plan: Plan) => void {
  return (plan) => {
    const now = buildPlanRecord(plan);
    const { reviewed } = review;
    const pr = `pull request #${review.issue.number}`;
    let why: string;
    if (!reviewed) {
      why = `${pr} holds no plan of stack ${run.stack} by the action, so nobody saw what this merge changes`;
    } else {
      if (reviewed.digest === now.digest) return;
      const diff = reviewed.changes ? diffPlanRecords({ digest: reviewed.digest, changes: reviewed.changes }, now) : undefined;
      // What is left of the reviewed plan once some of it is live already: nothing unseen is written.
      if (diff && diff.added.length === 0 && diff.changed.length === 0) return;
      why = `the plan at merge is not the plan reviewed in ${pr}: ${describeDifference(diff)}`;
    }
    const accepted = review.commands.accepted.find((a) => now.digest.startsWith(a.digest));
    if (accepted) {
      core.notice(`applying the plan ${now.digest.slice(0, ACCEPT_DIGEST_CHARS)} that @${accepted.login} accepted in ${pr}`, { title: "edgeplan" });
      return;
    }
    if (run.inputs.onDifference === "apply") {
      core.warning(`${why}; applied anyway, as the on-difference input says`, { title: "edgeplan" });
      return;
    }
    throw new UnreviewedPlanError(`${why}. Nothing was written. ${whatToDo(now.digest)}`, renderActionPlan(plan));
  };
}

function whatToDo(digest: string): string {
  return (
    "The plan at merge is posted to the pull request. If it differs because another merge's apply had not finished, re-run this job once that apply is done. " +
    `To apply the plan at merge as it is, a person who may merge comments \`/edgeplan accept ${digest.slice(0, ACCEPT_DIGEST_CHARS)}\` in the pull request, then re-runs this job.`
  );
}

/**
 * The check of a scheduled apply with `rollouts-only`: it writes the rollout steps that are due and nothing else,
 * so that a change of the default branch that no merge applied (a refused one) is never applied by a schedule.
 */
export function rolloutsOnlyCheck(run: ActionRun): (plan: Plan) => void {
  return (plan) => {
    const others = plan.changes.filter((c) => c.action !== "rollout").map((c) => c.address);
    if (others.length === 0) return;
    throw new EdgeplanError(
      `rollouts-only: the plan of stack ${run.stack} has changes that are not rollout steps (${others.join(", ")}), so nothing was written; they are applied by the apply of the merge that brings them (or its re-run), not by a schedule`,
    );
  };
}
