/**
 * The review of a pull request, in one place: the record of the plan shown in the action's sticky comment (what
 * binds it to a head commit and to a place in the conversation), the acknowledgements that count for it, and at
 * merge the check that the plan applied is the one reviewed, of the commit merged. post.ts renders what this module
 * decides; run.ts calls it.
 *
 * On a push to the default branch, the action finds the pull request that merged the commit, reads the record of
 * the plan reviewed there and the acknowledgements of people who may merge, and hands apply a check: the pull
 * request's head is the commit the record was made for, and the plan made at merge, under the stack's lease, is the
 * reviewed one, or nothing is written. The apply is limited to the addresses the reviewed plan changed (and the
 * modules its inventory write records), so a merge never applies another pull request's changes, whichever of two
 * quick merges runs first.
 */
import * as core from "@actions/core";
import { buildPlanRecord, diffPlanRecords, type PlanRecord } from "../core/plan-digest.js";
import { compareText } from "../model/canonical.js";
import { EdgeplanError } from "../model/errors.js";
import type { Plan } from "../model/plan.js";
import {
  ACCEPT_DIGEST_CHARS,
  commentMarker,
  describeDifference,
  parseReviewedMarker,
  renderAcknowledgements,
  renderActionPlan,
  reviewedMarker,
  type ReviewedRecord,
} from "../render/action.js";
import { readCommands, type PullRequestCommands } from "./acks.js";
import type { ActionRun } from "./action-run.js";
import { createGitHub, findMergedPullRequest, findStickyComment, listIssueComments, type IssueComment, type IssueRef, type Octokit, type RepoRef } from "./github.js";

/** What the merged pull request says about the plan of this stack. */
export interface MergeReview {
  octokit: Octokit;
  issue: IssueRef;
  /** The head commit the pull request merged, as GitHub says (undefined when it did not). */
  head: string | undefined;
  /** The action's sticky comment of the stack, where the result goes; undefined when the pull request has none. */
  sticky: IssueComment | undefined;
  reviewed: ReviewedRecord | undefined;
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
 * The modules whose inventory entry `plan` writes (records or forgets) with no change of their own. A stack that
 * starts recording modules it already has writes such entries; the apply on merge targets these modules too, so
 * that its inventory write is the reviewed one.
 */
export function reviewedEntries(plan: Plan): string[] {
  const changed = new Set(plan.changes.map((c) => c.address));
  // An inventory write's diffs are its entries, one per module recorded, forgotten or changed.
  const entries = plan.changes.flatMap((c) => (c.kind === "inventory" ? c.diffs.map((d) => d.path) : []));
  return [...new Set(entries)].filter((a) => !changed.has(a) && /^[^\s,>]+$/.test(a)).sort(compareText);
}

/** The action's sticky comment of the stack among `comments`, and the record of the plan it shows. */
function shownPlan(comments: readonly IssueComment[], run: ActionRun): { sticky: IssueComment | undefined; reviewed: ReviewedRecord | undefined } {
  const sticky = findStickyComment(comments, commentMarker(run.stack, run.environment), run.inputs.commentAuthor);
  return { sticky, reviewed: sticky ? parseReviewedMarker(sticky.body) : undefined };
}

/** A plan of the pull request as its sticky comment records it. */
export interface PlanToRecord {
  record: PlanRecord;
  risks: string[];
  entries: string[];
}

/**
 * The hidden record line and the acknowledgements part of a pull request's sticky comment for a new plan. The plan
 * is bound to the head commit planned and to the end of the conversation as it is now, unless the plan shown
 * already has the same digest: then it is the same plan, and the acknowledgements written for it still count.
 */
export async function reviewPlanComment(octokit: Octokit, repo: RepoRef, comments: readonly IssueComment[], run: ActionRun, plan: PlanToRecord): Promise<string> {
  const previous = shownPlan(comments, run).reviewed;
  const last = Math.max(0, ...comments.map((c) => c.id));
  const after = previous?.digest === plan.record.digest && previous.after !== undefined ? previous.after : last;
  const line = reviewedMarker(plan.record, plan.risks, { head: (run.pr?.headSha ?? "").toLowerCase(), after, entries: plan.entries });
  if (plan.risks.length === 0) return line;
  const commands = await readCommands(octokit, repo, comments, run.inputs.commentAuthor, plan.risks, { digest: plan.record.digest, after });
  return [line, acknowledgementsOf(plan.risks, commands, plan.record.digest)].join("\n");
}

/**
 * On a comment in the pull request: the acknowledgements part of the sticky comment `sticky` as it now stands, or
 * undefined when its plan has no risks (or there is no plan).
 */
export async function reviewAcknowledgements(
  octokit: Octokit,
  repo: RepoRef,
  comments: readonly IssueComment[],
  run: ActionRun,
): Promise<{ sticky: IssueComment; section: string } | undefined> {
  const { sticky, reviewed } = shownPlan(comments, run);
  if (!sticky || !reviewed || reviewed.rules.length === 0) return undefined;
  const commands = await readCommands(octokit, repo, comments, run.inputs.commentAuthor, reviewed.rules, reviewed);
  return { sticky, section: acknowledgementsOf(reviewed.rules, commands, reviewed.digest) };
}

/** The acknowledgements part of the comment, for the plan of `digest`. */
export function acknowledgementsOf(rules: readonly string[], commands: PullRequestCommands, digest: string | undefined): string {
  return renderAcknowledgements(rules, commands.acks, commands.ignored, { ...(digest ? { digest } : {}), stale: commands.stale });
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
    const merged = await findMergedPullRequest(octokit, ctx.repository, ctx.sha, ctx.defaultBranch);
    if (merged === undefined) {
      core.notice(`no reviewed plan was found: no pull request merged commit ${ctx.sha.slice(0, 7)}; the manifests are applied as they are`, { title: "edgeplan" });
      return undefined;
    }
    number = merged.number;
    const issue = { ...ctx.repository, number };
    const comments = await listIssueComments(octokit, issue);
    const { sticky, reviewed } = shownPlan(comments, run);
    const commands = await readCommands(octokit, ctx.repository, comments, run.inputs.commentAuthor, reviewed?.rules ?? [], reviewed);
    core.info(`edgeplan: commit ${ctx.sha.slice(0, 7)} merged pull request #${number}; ${reviewed ? "its reviewed plan is the reference" : "it holds no reviewed plan"}`);
    return { octokit, issue, head: merged.headSha, sticky, reviewed, commands };
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
 * The addresses the apply is limited to: those the reviewed plan changed, and the modules whose entry its inventory
 * write records without a change of their own (none: no limit). An inventory write is no target: the plan makes it
 * for the modules in scope.
 */
export function reviewTargets(review: MergeReview | undefined, run: ActionRun): string[] {
  if (!review?.reviewed?.changes || run.inputs.onDifference === "apply") return [];
  const changed = Object.keys(review.reviewed.changes).filter((address) => !address.startsWith("inventory."));
  return [...new Set([...changed, ...(review.reviewed.entries ?? [])])];
}

/**
 * The check apply runs on its plan before writing: the same as the reviewed plan (or a subset of it, what is left
 * once some of it is live), or a plan a person who may merge accepted by its digest. Anything else throws
 * UnreviewedPlanError, unless `on-difference` is `apply` (then a warning says what was not reviewed).
 */
export function reviewCheck(review: MergeReview, run: ActionRun): (plan: Plan) => void {
  return (plan) => {
    const now = buildPlanRecord(plan);
    const why = unreviewed(review, run, now);
    if (why === undefined) return;
    const pr = `pull request #${review.issue.number}`;
    const accepted = review.commands.accepted.find((a) => now.digest.startsWith(a.digest));
    if (accepted) {
      core.notice(`applying the plan ${now.digest.slice(0, ACCEPT_DIGEST_CHARS)} that @${accepted.login} accepted in ${pr}`, { title: "edgeplan" });
      return;
    }
    if (run.inputs.onDifference === "apply") {
      core.warning(`${why}; applied anyway, as the on-difference input says`, { title: "edgeplan" });
      return;
    }
    const otherHead = review.reviewed !== undefined && review.reviewed.head !== review.head;
    throw new UnreviewedPlanError(`${why}. Nothing was written. ${whatToDo(now.digest, otherHead)}`, renderActionPlan(plan));
  };
}

/** Why the plan at merge is not the reviewed one, or undefined when it is (or what is left of it). */
function unreviewed(review: MergeReview, run: ActionRun, now: PlanRecord): string | undefined {
  const { reviewed, head } = review;
  const pr = `pull request #${review.issue.number}`;
  if (!reviewed) return `${pr} holds no plan of stack ${run.stack} by the action, so nobody saw what this merge changes`;
  if (head === undefined || reviewed.head !== head) {
    const merged = head === undefined ? "GitHub did not say which head commit it merged" : `it merged head commit ${head.slice(0, 7)}`;
    const planned = reviewed.head === undefined ? "names no commit" : `was made for commit ${reviewed.head.slice(0, 7)}`;
    return `the plan reviewed in ${pr} ${planned}, but ${merged}: nobody saw a plan of what was merged (a push after the last plan, or a plan that had not finished)`;
  }
  if (reviewed.digest === now.digest) return undefined;
  const diff = reviewed.changes ? diffPlanRecords({ digest: reviewed.digest, changes: reviewed.changes }, now) : undefined;
  // What is left of the reviewed plan once some of it is live already: nothing unseen is written.
  if (diff && diff.added.length === 0 && diff.changed.length === 0) return undefined;
  return `the plan at merge is not the plan reviewed in ${pr}: ${describeDifference(diff)}`;
}

function whatToDo(digest: string, otherHead: boolean): string {
  const retry = otherHead
    ? "If the plan of the merged commit had not finished, re-run this job once it has. "
    : "If it differs because another merge's apply had not finished, re-run this job once that apply is done. ";
  return (
    `The plan at merge is posted to the pull request. ${retry}` +
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
