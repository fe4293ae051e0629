/**
 * Acknowledgements in the pull request: comment commands (`/edgeplan ack traffic-shift`, `/edgeplan accept DIGEST`)
 * taken from the comments of people who may merge it. A comment command, not a label: a label says neither who
 * added it nor when without another call, and people with the triage role, who cannot merge, may add labels. A
 * comment names its author and its time, stays in the conversation where reviewers read, and its author's
 * permission is one call to check.
 *
 * An acknowledgement is consent to the plan its author saw: it counts for the plan shown when it was written (a
 * comment after that plan's record, see RecordBinding), or for the plan whose digest it names
 * (`/edgeplan ack RULE --digest DIGEST`), never for a later, different plan.
 */
import { RISK_RULES, type RiskRule } from "../model/plan.js";
import { compareText } from "../model/canonical.js";
import { canMerge, isOwnComment, type IssueComment, type Octokit, type RepoRef } from "./github.js";

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
  /** The first acknowledgement of each rule that counts for the plan, in rule order. */
  acks: Acknowledgement[];
  /** Plan digests (prefixes, lower-case hex) accepted with `/edgeplan accept`. */
  accepted: { digest: string; login: string; at: string }[];
  /** Authors whose commands were ignored because they may not merge. */
  ignored: string[];
  /** Authors whose acknowledgements were written for another plan (before it was shown, or naming another digest). */
  stale: string[];
}

/** The plan acknowledgements are counted for: its digest, and the last comment before it was shown. */
export interface AckBinding {
  digest: string;
  /** Undefined: the place is unknown, so only acknowledgements naming the digest count. */
  after: number | undefined;
}

const COMMAND = /^\/edgeplan[ \t]+(ack|accept)[ \t]+([^\r\n]*)$/gm;
const DIGEST = /^[0-9a-f]{12,64}$/;

/**
 * An HTML comment is invisible once the comment is rendered: a command inside it (or after an unclosed `<!--`) is
 * not something a reader saw, so it does not count.
 */
function visibleText(body: string): string {
  return body.replace(/<!--[\s\S]*?(?:-->|$)/g, "");
}

/**
 * The commands of one comment body: the rules it acknowledges (built-in rules, and the policies' names of `known`),
 * those it acknowledges for a named digest (`--digest D`), and the digests it accepts (unknown words dropped).
 */
export function parseCommands(body: string, known: readonly string[] = []): { rules: string[]; digests: string[]; bound?: { rule: string; digest: string }[] } {
  const rules: string[] = [];
  const digests: string[] = [];
  const bound: { rule: string; digest: string }[] = [];
  for (const m of visibleText(body).matchAll(COMMAND)) {
    const words = (m[2] ?? "").split(/[\s,]+/).filter(Boolean);
    if (m[1] !== "ack") {
      digests.push(...words.filter((w) => DIGEST.test(w)));
      continue;
    }
    const flag = words.indexOf("--digest");
    const named = flag >= 0 ? words[flag + 1] : undefined;
    // A --digest that is not one acknowledges nothing: the author meant a plan, and it is not known which.
    if (flag >= 0 && (named === undefined || !DIGEST.test(named))) continue;
    const acked = words.filter((w, i) => (flag < 0 || i < flag) && ((RISK_RULES as readonly string[]).includes(w) || known.includes(w)));
    if (named === undefined) rules.push(...acked);
    else bound.push(...acked.map((rule) => ({ rule, digest: named })));
  }
  return bound.length > 0 ? { rules, digests, bound } : { rules, digests };
}

/** The rules of one comment that count for `plan`; `stale` when it acknowledged some for another plan. */
function countedRules(c: IssueComment, parsed: ReturnType<typeof parseCommands>, plan: AckBinding | undefined): { rules: string[]; stale: boolean } {
  const shownAfter = plan?.after !== undefined && c.id > plan.after;
  const named = (parsed.bound ?? []).filter((b) => plan?.digest.startsWith(b.digest));
  const rules = [...(shownAfter ? parsed.rules : []), ...named.map((b) => b.rule)];
  const stale = (!shownAfter && parsed.rules.length > 0) || named.length < (parsed.bound ?? []).length;
  return { rules, stale };
}

/**
 * The commands of `comments` whose authors may merge (each author's permission asked once, only for comments that
 * hold a command), with the acknowledgements that count for `plan` (none without a plan). The action's own
 * comments, which quote the commands as advice, are skipped.
 */
export async function readCommands(
  octokit: Octokit,
  repo: RepoRef,
  comments: readonly IssueComment[],
  self: string,
  known: readonly string[],
  plan: AckBinding | undefined,
): Promise<PullRequestCommands> {
  const allowed = new Map<string, boolean>();
  const result: PullRequestCommands = { acks: [], accepted: [], ignored: [], stale: [] };
  const firstAck = new Map<string, Acknowledgement>();
  for (const c of comments) {
    if (isOwnComment(c, self)) continue;
    const parsed = parseCommands(c.body, known);
    if (parsed.rules.length === 0 && parsed.digests.length === 0 && !parsed.bound) continue;
    if (!allowed.has(c.login)) allowed.set(c.login, await canMerge(octokit, repo, c.login));
    if (!allowed.get(c.login)) {
      if (!result.ignored.includes(c.login)) result.ignored.push(c.login);
      continue;
    }
    const { rules, stale } = countedRules(c, parsed, plan);
    if (stale && !result.stale.includes(c.login)) result.stale.push(c.login);
    for (const rule of rules) if (!firstAck.has(rule)) firstAck.set(rule, { rule, login: c.login, at: c.createdAt, url: c.url });
    for (const digest of parsed.digests) result.accepted.push({ digest, login: c.login, at: c.createdAt });
  }
  // The built-in rules in their order, then the policies' names.
  const order = (rule: string): number => (RISK_RULES.includes(rule as RiskRule) ? RISK_RULES.indexOf(rule as RiskRule) : RISK_RULES.length);
  result.acks = [...firstAck.values()].sort((a, b) => order(a.rule) - order(b.rule) || compareText(a.rule, b.rule));
  return result;
}
