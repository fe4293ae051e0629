/**
 * Acknowledgements in the pull request: comment commands (`/edgeplan ack traffic-shift`, `/edgeplan accept DIGEST`)
 * taken from the comments of people who may merge it. A comment command, not a label: a label says neither who
 * added it nor when without another call, and people with the triage role, who cannot merge, may add labels. A
 * comment names its author and its time, stays in the conversation where reviewers read, and its author's
 * permission is one call to check.
 */
import { RISK_RULES, type RiskRule } from "../model/plan.js";
import { compareText } from "../model/canonical.js";
import { canMerge, type IssueComment, type Octokit, type RepoRef } from "./github.js";

/** One risk rule acknowledged by a person who may merge. */
export interface Acknowledgement {
  /** A built-in rule or a policy's name. */
  rule: string;
  login: string;
  /** When the comment was written (RFC 3339). */
  at: string;
  url: string;
}

/** The commands of a pull request's conversation, from the comments of people who may merge it. */
export interface PullRequestCommands {
  /** The first acknowledgement of each rule, in rule order. */
  acks: Acknowledgement[];
  /** Plan digests (prefixes, lower-case hex) accepted with `/edgeplan accept`. */
  accepted: { digest: string; login: string; at: string }[];
  /** Authors whose commands were ignored because they may not merge. */
  ignored: string[];
}

const COMMAND = /^\/edgeplan[ \t]+(ack|accept)[ \t]+([^\r\n]*)$/gm;

/**
 * The commands of one comment body: the rules it acknowledges (built-in rules, and the policies' names of `known`)
 * and the digests it accepts (unknown words dropped).
 */
export function parseCommands(body: string, known: readonly string[] = []): { rules: string[]; digests: string[] } {
  const rules: string[] = [];
  const digests: string[] = [];
  for (const m of body.matchAll(COMMAND)) {
    const words = (m[2] ?? "").split(/[\s,]+/).filter(Boolean);
    if (m[1] === "ack") rules.push(...words.filter((w) => (RISK_RULES as readonly string[]).includes(w) || known.includes(w)));
    else digests.push(...words.filter((w) => /^[0-9a-f]{12,64}$/.test(w)));
  }
  return { rules, digests };
}

/**
 * The commands of `comments` whose authors may merge (each author's permission asked once, only for comments that
 * hold a command). Comments of `self` (the action's own, which quote the commands as advice) are skipped.
 */
export async function readCommands(
  octokit: Octokit,
  repo: RepoRef,
  comments: readonly IssueComment[],
  self: string,
  known: readonly string[] = [],
): Promise<PullRequestCommands> {
  const allowed = new Map<string, boolean>();
  const result: PullRequestCommands = { acks: [], accepted: [], ignored: [] };
  const firstAck = new Map<string, Acknowledgement>();
  for (const c of comments) {
    if (c.login === self) continue;
    const { rules, digests } = parseCommands(c.body, known);
    if (rules.length === 0 && digests.length === 0) continue;
    if (!allowed.has(c.login)) allowed.set(c.login, await canMerge(octokit, repo, c.login));
    if (!allowed.get(c.login)) {
      if (!result.ignored.includes(c.login)) result.ignored.push(c.login);
      continue;
    }
    for (const rule of rules) if (!firstAck.has(rule)) firstAck.set(rule, { rule, login: c.login, at: c.createdAt, url: c.url });
    for (const digest of digests) result.accepted.push({ digest, login: c.login, at: c.createdAt });
  }
  // The built-in rules in their order, then the policies' names.
  const order = (rule: string): number => (RISK_RULES.includes(rule as RiskRule) ? RISK_RULES.indexOf(rule as RiskRule) : RISK_RULES.length);
  result.acks = [...firstAck.values()].sort((a, b) => order(a.rule) - order(b.rule) || compareText(a.rule, b.rule));
  return result;
}
