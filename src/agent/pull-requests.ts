/**
 * Acknowledgements written in the pull request that merged a commit (docs/agent.md, "Acknowledging in the pull
 * request"), read as the Action reads them (src/action/acks.ts): `/edgeplan ack RULE` comments by people who may
 * merge, never the Action's own. One counts for the agent's plan when it names that plan's digest (`--digest D`), or
 * when it was written after the Action showed, in the stack's comment, a plan with that very digest: consent is
 * given to a plan, and the agent's plan is the one reviewed only when their digests are equal.
 */
import { readCommands } from "../action/acks.js";
import { createGitHub, findMergedPullRequest, findStickyComment, listIssueComments, type RepoRef } from "../action/github.js";
import type { AckRecord, AgentSource, PullRequestSource } from "../model/agent.js";
import { EdgeplanError } from "../model/errors.js";
import { commentMarker, parseReviewedMarker } from "../render/action.js";
import { readSecret } from "./accounts.js";

/** The plan acknowledgements are looked for. */
export interface AckQuestion {
  stack: string;
  environment: string | undefined;
  /** The commit reconciled. */
  sha: string;
  digest: string;
  /** The rules of the plan that wait (built-in risks and policies' names). */
  rules: string[];
}

/**
 * The acknowledgements of `q.rules` for the plan `q.digest` in the pull request that merged `q.sha` into the
 * source's branch; none when no pull request did.
 * @throws EdgeplanError when GitHub cannot be read (the message never holds the token).
 */
export async function pullRequestAcks(
  source: AgentSource & { pullRequests: PullRequestSource },
  q: AckQuestion,
  env: Record<string, string | undefined>,
): Promise<AckRecord[]> {
  const pr = source.pullRequests;
  const [owner = "", repo = ""] = pr.repository.split("/");
  const where: RepoRef = { owner, repo };
  const token = await readSecret(pr.token, env, `source ${source.name}: the GitHub token`);
  try {
    const octokit = await createGitHub(pr.apiUrl, token);
    const merged = await findMergedPullRequest(octokit, where, q.sha, source.ref);
    if (merged === undefined) return [];
    const comments = await listIssueComments(octokit, { ...where, number: merged.number });
    const sticky = findStickyComment(comments, commentMarker(q.stack, q.environment), pr.commentAuthor);
    const reviewed = sticky ? parseReviewedMarker(sticky.body) : undefined;
    const after = reviewed?.digest === q.digest ? reviewed.after : undefined;
    const commands = await readCommands(octokit, where, comments, pr.commentAuthor, q.rules, { digest: q.digest, after });
    return commands.acks.map((a) => ({ stack: q.stack, rule: a.rule, digest: q.digest, by: `@${a.login} in pull request #${merged.number}`, at: a.at }));
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).split(token).join("***");
    throw new EdgeplanError(`GitHub: the pull request of commit ${q.sha.slice(0, 7)} in ${pr.repository} could not be read (${why})`);
  }
}
