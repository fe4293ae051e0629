/**
 * The GitHub Action's Markdown: the sticky pull-request comment, the job summary, the drift issue, and the one-line
 * `summary` output. Plans are rendered by markdown.ts and applies by the apply report; this file puts them together
 * and cuts them to GitHub's limits without leaving a code fence or a `<details>` block open. Reads only. Pure.
 */
import type { PlanDifference, PlanRecord } from "../core/plan-digest.js";
import { formatDiagnostic, type Diagnostic } from "../model/errors.js";
import { RULE_NAME, type Plan } from "../model/plan.js";
import { utf8Bytes } from "../model/wire.js";
import { noChangesLine, summaryLine } from "./common.js";
import { code, renderMarkdown } from "./markdown.js";

/** GitHub refuses comment (and issue) bodies longer than this many characters. */
export const COMMENT_MAX_CHARS = 65_536;

/** GitHub keeps at most 1 MiB of summary per step. */
export const SUMMARY_MAX_BYTES = 1024 * 1024;

export type ActionCommand = "plan" | "apply";

/** The longest diagnostic message the Action posts, about one long line of a manifest. */
export const DIAGNOSTIC_MAX_CHARS = 500;

/**
 * The diagnostic as the Action posts it (comment, summary, annotation): a message longer than DIAGNOSTIC_MAX_CHARS
 * keeps its start and its advice at the end, so that no diagnostic carries more of a file than a manifest line,
 * whatever a pull request makes edgeplan read.
 */
export function boundDiagnostic(d: Diagnostic): Diagnostic {
  const m = d.message;
  if (m.length <= DIAGNOSTIC_MAX_CHARS) return d;
  return { ...d, message: `${m.slice(0, 360)}...[${m.length - 460} more characters]...${m.slice(-100)}` };
}

/**
 * The heading of the comment and of the summary: `edgeplan plan: stack `prod``, or with the project file's
 * environment, `edgeplan plan: environment `production`, stack `web``.
 */
export function actionTitle(command: ActionCommand, stack: string, environment?: string): string {
  return `edgeplan ${command}: ${environment === undefined ? "" : `environment ${code(environment)}, `}stack ${code(stack)}`;
}

/** A marker comment that can stand on a first line: `--` and `>` would end it early. */
function marker(what: string, stack: string, environment: string | undefined): string {
  const safe = (text: string): string => text.replace(/--+/g, "-").replace(/>/g, "");
  return `<!-- edgeplan:${what} stack=${safe(stack)}${environment === undefined ? "" : ` env=${safe(environment)}`} -->`;
}

/**
 * The hidden first line of the sticky comment; it names the stack and the environment (when the project file
 * defines any), so that each stack of each environment keeps one comment.
 */
export function commentMarker(stack: string, environment?: string): string {
  return marker("plan", stack, environment);
}

/** The hidden first line of the drift issue of a stack (in an environment). */
export function driftMarker(stack: string, environment?: string): string {
  return marker("drift", stack, environment);
}

/** True when the first line of `markdown` is an ATX heading (`# ...` to `###### ...`). */
export function startsWithHeading(markdown: string): boolean {
  return /^#{1,6}\s/.test(markdown.trimStart());
}

/** The one-line `summary` output of a plan: its summary line, and the risks an apply must acknowledge. */
export function planSummaryLine(plan: Plan): string {
  const line = plan.changes.length === 0 ? noChangesLine(plan) : summaryLine(plan);
  const rules = [...new Set(plan.risks.map((r) => r.rule))];
  return rules.length > 0 ? `${line} Risks: ${rules.join(", ")}.` : line;
}

/** A plan as the Action shows it. */
export function renderActionPlan(plan: Plan): string {
  return renderMarkdown(plan);
}

/**
 * What an apply reports: what was done (headline, results, convergence, outputs) first, then the plan it ran,
 * folded. The outputs are shown once, as the apply read them back; the folded plan leaves its own out.
 */
export function renderActionApply(plan: Plan, applied: string | undefined): string {
  if (!applied) return renderMarkdown(plan);
  const folded = renderMarkdown({ ...plan, outputs: [] }).trimEnd();
  return [applied.trimEnd(), "", "<details><summary>The plan that was applied</summary>", "", folded, "", "</details>"].join("\n");
}

/** What the command printed, as a text block: the report of a run that has no Markdown of its own. */
export function outputBlock(text: string): string | undefined {
  return text.trim() ? textBlock(text.trimEnd().split("\n")) : undefined;
}

/** A `text` code block that no line of the content can close early (its fence is longer than any run inside). */
export function textBlock(lines: readonly string[]): string {
  const longest = Math.max(0, ...(lines.join("\n").match(/`{3,}|~{3,}/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return `${fence}text\n${lines.join("\n")}\n${fence}`;
}

/** A failed run: the manifest errors (nothing was sent), or the failure, then what the run had shown. */
export function renderFailure(command: ActionCommand, diagnostics: Diagnostic[], failure: string | undefined, shown?: string): string {
  const errors = diagnostics.filter((d) => d.severity === "error");
  const lines = [`**The ${command} failed.**`, ""];
  if (errors.length > 0) {
    lines.push(`${errors.length} ${errors.length === 1 ? "error" : "errors"} in the manifests; nothing was sent to the API:`, "");
    lines.push(textBlock(diagnostics.map(formatDiagnostic)));
  }
  if (failure) lines.push(textBlock([failure]));
  return [lines.join("\n"), shown?.trim()].filter(Boolean).join("\n\n");
}

/** The `summary` output of a run whose command gave none. */
export function defaultSummaryLine(
  run: { command: ActionCommand; stack: string; exitCode: number; hasChanges: boolean; errors: number },
  failure: string | undefined,
): string {
  const { command, stack, hasChanges, errors } = run;
  if (run.exitCode === 1) {
    if (errors > 0) return `The ${command} of stack ${stack} failed: ${errors} ${errors === 1 ? "error" : "errors"} in the manifests.`;
    return `The ${command} of stack ${stack} failed: ${failure ?? "see the log"}`;
  }
  if (command === "plan") {
    return hasChanges ? `The plan of stack ${stack} has changes.` : `No changes in stack ${stack}: live state matches the manifests.`;
  }
  if (run.exitCode === 3) return `The apply of stack ${stack} finished with some changes failed.`;
  if (run.exitCode === 4) return `The apply of stack ${stack} paused a rollout: it waits for edgeplan rollout promote or abort.`;
  return hasChanges ? `The apply of stack ${stack} converged.` : `No changes in stack ${stack}: nothing to apply.`;
}

/** The job summary: the report under the title, unless it has a heading of its own, cut to GitHub's limit. */
export function renderJobSummary(title: string, markdown: string, maxBytes: number = SUMMARY_MAX_BYTES): string {
  const body = startsWithHeading(markdown) ? markdown : `### ${title}\n\n${markdown}`;
  return `${fitBytes(body.trimEnd(), maxBytes - 2)}\n\n`;
}

/** Cuts a summary to a size in bytes (UTF-8), saying so at its end. */
export function fitBytes(markdown: string, maxBytes: number = SUMMARY_MAX_BYTES): string {
  const note = "> [!NOTE]\n> The rest was cut: GitHub keeps at most 1 MiB of job summary per step. Run `edgeplan plan` locally for all of it.";
  let text = markdown;
  for (let round = 0; round < 20 && utf8Bytes(text) > maxBytes; round++) {
    const ratio = maxBytes / utf8Bytes(text);
    text = cutMarkdown(markdown, Math.floor(Math.min(text.length, markdown.length) * ratio * 0.98), note);
  }
  return text;
}

/** How many characters of a record's change list the comment carries; a larger plan is recorded by its digest alone. */
export const RECORD_MAX_CHARS = 20_000;

/** The length of the digest prefix a person types in `/edgeplan accept`. */
export const ACCEPT_DIGEST_CHARS = 12;

/** What binds a record to the pull request: the head commit planned, and where in the conversation it was shown. */
export interface RecordBinding {
  /** The pull request's head commit the plan was made for (lower-case hex). */
  head: string;
  /**
   * The id of the last comment of the conversation when this plan was first shown: an acknowledgement written
   * after it (a larger id; GitHub's comment ids grow) was written for this plan.
   */
  after: number;
  /**
   * Modules whose inventory entry the plan writes with no change of their own: the apply on merge targets them too,
   * so that its inventory write records what the reviewed one did.
   */
  entries: string[];
}

/** The record of a reviewed plan, as the sticky comment's second line holds it. */
export interface ReviewedRecord {
  line: string;
  digest: string;
  /** Undefined for a record that names no commit (never the same as a merged head). */
  head: string | undefined;
  /** Undefined for a record that says nothing of its place: then only an acknowledgement naming its digest counts. */
  after: number | undefined;
  rules: string[];
  /** Undefined when the record lists none. */
  entries: string[] | undefined;
  /** Undefined when the list was left out (a very large plan). */
  changes: Record<string, string> | undefined;
}

const REVIEWED =
  /^<!-- edgeplan:reviewed digest=([0-9a-f]{64})(?: head=([0-9a-f]{7,64}))?(?: after=(\d{1,16}))? risks=([a-z0-9,-]*)(?: entries=([^\s>]*))?(?: changes=([^\s>]*))? -->$/;

/**
 * The hidden line of the sticky comment that records what was reviewed: the plan's digest, the commit and the place
 * in the conversation it is bound to, its risk rules, the inventory entries it records without a change of their
 * own, and (when it fits) one short digest per change, for saying what differs at merge.
 */
export function reviewedMarker(record: PlanRecord, rules: readonly string[], binding?: RecordBinding): string {
  const changes = Object.entries(record.changes)
    .map(([address, digest]) => `${address}=${digest}`)
    .join(",");
  const list = changes.length <= RECORD_MAX_CHARS ? ` changes=${changes}` : "";
  const entries = binding && binding.entries.length > 0 ? ` entries=${binding.entries.join(",")}` : "";
  const head = binding && /^[0-9a-f]{7,64}$/.test(binding.head) ? ` head=${binding.head}` : "";
  const after = binding ? ` after=${binding.after}` : "";
  return `<!-- edgeplan:reviewed digest=${record.digest}${head}${after} risks=${[...new Set(rules)].join(",")}${entries}${list} -->`;
}

/**
 * The record of a sticky comment: only its second line, right under the marker, which the action writes itself;
 * undefined when that line is no record. A record-shaped line anywhere else (quoted from a failed plan) is text.
 */
export function parseReviewedMarker(body: string): ReviewedRecord | undefined {
  const line = body.trimStart().split("\n")[1] ?? "";
  const m = REVIEWED.exec(line);
  if (!m) return undefined;
  const rules = (m[4] ?? "").split(",").filter((r) => RULE_NAME.test(r));
  const entries = m[5] === undefined ? undefined : m[5].split(",").filter(Boolean);
  const after = m[3] === undefined ? undefined : Number(m[3]);
  const record = { line, digest: m[1] as string, head: m[2], after, rules, entries };
  if (m[6] === undefined) return { ...record, changes: undefined };
  const changes: Record<string, string> = {};
  for (const item of m[6].split(",").filter(Boolean)) {
    const eq = item.lastIndexOf("=");
    if (eq > 0) changes[item.slice(0, eq)] = item.slice(eq + 1);
  }
  return { ...record, changes };
}

/**
 * Text a pull request controls (a failed plan's messages, names of files and keys), made unable to hide in or
 * pose as the action's hidden lines: no `<!--` survives, so nothing of it is invisible once rendered and no line of
 * it has a record's shape. A zero-width space keeps it readable.
 */
export function neutraliseComments(text: string): string {
  return text.replace(/<!--/g, "<\u200b!--");
}

/** An acknowledgement as the comment shows it. */
export interface ShownAck {
  rule: string;
  login: string;
  at: string;
  url: string;
}

const ACKS_START = "<!-- edgeplan:acks -->";
const ACKS_END = "<!-- /edgeplan:acks -->";

/** `2026-11-25T13:04:00Z` as `2026-11-25 13:04 UTC`. */
function shownTime(at: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(at);
  return m ? `${m[1]} ${m[2]} UTC` : at;
}

/**
 * The risks of the reviewed plan, each with who acknowledged it and when, or the comment that acknowledges it;
 * between two hidden lines, so that a later acknowledgement rewrites this part alone. Empty without risks.
 */
export function renderAcknowledgements(
  rules: readonly string[],
  acks: readonly ShownAck[],
  ignored: readonly string[],
  bound: { digest?: string; stale?: readonly string[] } = {},
): string {
  if (rules.length === 0) return "";
  const lines = [
    ACKS_START,
    "#### Risks to acknowledge",
    "",
    "The apply on merge writes nothing until each risk is acknowledged in this pull request by a person who may merge it.",
    "",
  ];
  for (const rule of rules) {
    const ack = acks.find((a) => a.rule === rule);
    lines.push(
      ack
        ? `- ${code(rule)}: acknowledged by @${ack.login} on ${shownTime(ack.at)} ([comment](${ack.url}))`
        : `- ${code(rule)}: **not acknowledged**. To acknowledge it, comment \`/edgeplan ack ${rule}\``,
    );
  }
  if (ignored.length > 0) lines.push("", `Ignored: the commands of ${ignored.map((l) => `@${l}`).join(", ")}, who may not merge this pull request.`);
  const stale = bound.stale ?? [];
  if (stale.length > 0) lines.push("", `Not counted: the acknowledgements of ${stale.map((l) => `@${l}`).join(", ")}, written for another plan than this one.`);
  if (bound.digest) {
    const digest = bound.digest.slice(0, ACCEPT_DIGEST_CHARS);
    lines.push("", `An acknowledgement counts for the plan shown when it is written; \`/edgeplan ack RULE --digest ${digest}\` names this plan.`);
  }
  lines.push(ACKS_END);
  return lines.join("\n");
}

/** `body` with its acknowledgements part replaced by `section`; undefined when the body has no such part. */
export function replaceAcknowledgements(body: string, section: string): string | undefined {
  const start = body.indexOf(ACKS_START);
  const end = body.indexOf(ACKS_END, start);
  if (start < 0 || end < 0) return undefined;
  return body.slice(0, start) + section + body.slice(end + ACKS_END.length);
}

/** What differs between the reviewed plan and the plan at merge, as one sentence (addresses in code). */
export function describeDifference(diff: PlanDifference | undefined): string {
  if (!diff) return "the plan's changes differ (the reviewed plan was too large to record change by change)";
  const list = (items: string[]) => items.map(code).join(", ");
  const parts: string[] = [];
  if (diff.changed.length > 0) parts.push(`${list(diff.changed)} would now do something else than the reviewed plan showed`);
  if (diff.added.length > 0) parts.push(`${list(diff.added)} ${diff.added.length === 1 ? "is a change" : "are changes"} that the reviewed plan did not show`);
  if (diff.removed.length > 0) parts.push(`${list(diff.removed)} ${diff.removed.length === 1 ? "is" : "are"} no longer changed`);
  return parts.join("; ");
}

export interface CommentParts {
  marker: string;
  /** One heading line, without `#`; left out when the Markdown starts with a heading of its own. */
  title: string;
  /** The plan (or the failure) as Markdown. */
  markdown: string;
  /** Hidden lines and parts that go between the marker and the plan: the reviewed record and the risks. */
  preamble?: string;
  /** The commit the plan was made for (or, after a merge, the merge commit). */
  headSha?: string;
  /** How the footer names the commit (default `Commit`). */
  commitLabel?: string;
  /** Link to the run, where the full plan is when the comment had to be cut. */
  runUrl?: string;
  max?: number;
}

/**
 * The body of the sticky comment: marker, heading, plan, footer (commit, link to the run). The plan is cut so that
 * the whole body stays within GitHub's limit, with a line that points at the job summary, which holds all of it.
 */
export function renderComment(parts: CommentParts): string {
  const max = parts.max ?? COMMENT_MAX_CHARS;
  const preamble = parts.preamble ? `${parts.preamble}\n\n` : "";
  const head = `${parts.marker}\n${preamble}${startsWithHeading(parts.markdown) ? "" : `### ${parts.title}\n\n`}`;
  const footer = [parts.headSha ? `${parts.commitLabel ?? "Commit"} ${parts.headSha.slice(0, 7)}` : undefined, parts.runUrl ? `[workflow run](${parts.runUrl})` : undefined]
    .filter(Boolean)
    .join(" · ");
  const foot = footer ? `\n\n<sub>${footer}</sub>\n` : "\n";
  const where = parts.runUrl ? `the job summary of [this run](${parts.runUrl})` : "the job summary of this run";
  const note = `> [!NOTE]\n> The plan was cut to fit in a comment; the full plan is in ${where}.`;
  const markdown = neutraliseComments(parts.markdown.trimEnd());
  return head + cutMarkdown(markdown, max - head.length - foot.length, note).trimEnd() + foot;
}

/** The title of the drift issue of a stack (in an environment). */
export function driftIssueTitle(stack: string, environment?: string): string {
  return `edgeplan: drift in stack ${stack}${environment === undefined ? "" : ` (environment ${environment})`}`;
}

/** The body of the drift issue (when it is opened) or of a comment on it (each later run that finds drift). */
export function renderDrift(parts: { stack: string; summary: string; markdown: string; runUrl?: string; issue: boolean }): string {
  const where = parts.runUrl ? `[this run](${parts.runUrl})` : "this run";
  const head = [
    parts.issue ? `${driftMarker(parts.stack)}\n` : "",
    `Live state of stack ${code(parts.stack)} differs from the manifests. Found by ${where}: ${parts.summary}\n\n`,
    "Apply the manifests again, or change them to match what live holds. This issue is closed by the first drift check that finds no changes.\n\n",
  ].join("");
  const note = `> [!NOTE]\n> The plan was cut; all of it is in the job summary of ${where}.`;
  const plan = `<details><summary>The plan</summary>\n\n${parts.markdown.trimEnd()}\n\n</details>`;
  return `${head}${cutMarkdown(plan, COMMENT_MAX_CHARS - head.length - 1, note).trimEnd()}\n`;
}

/** The comment that closes the drift issue. */
export function renderDriftResolved(stack: string, runUrl: string | undefined): string {
  return `Live state of stack ${code(stack)} matches the manifests again${runUrl ? ` ([drift check](${runUrl}))` : ""}. Closing.\n`;
}

/**
 * Cuts `markdown` to at most `max` characters at a line boundary, closes a code fence or `<details>` blocks the cut
 * left open, and ends with `note` (which says where the rest is). Text within the limit is returned unchanged.
 */
export function cutMarkdown(markdown: string, max: number, note: string): string {
  if (markdown.length <= max) return markdown;
  const tail = `\n\n${note}\n`;
  let budget = max - tail.length;
  // Closing what the cut left open takes room too: shrink until the closed text fits (a few rounds at most).
  for (let round = 0; round < 8 && budget > 0; round++) {
    let cut = markdown.slice(0, budget);
    const lastNewline = cut.lastIndexOf("\n");
    if (lastNewline > 0) cut = cut.slice(0, lastNewline);
    const closed = cut + closers(cut);
    if (closed.length + tail.length <= max) return closed + tail;
    budget -= closed.length + tail.length - max + 1;
  }
  return tail.trimStart().slice(0, max);
}

/** The text that closes a fence and `<details>` blocks left open at the end of `text`. */
function closers(text: string): string {
  let fence: string | undefined;
  let openDetails = 0;
  for (const line of text.split("\n")) {
    const m = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (m?.[1]) {
      const fenceMark = m[1];
      if (fence === undefined) fence = fenceMark;
      else if (fenceMark[0] === fence[0] && fenceMark.length >= fence.length && line.trim() === fenceMark) fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    openDetails += (line.match(/<details[\s>]/gi) ?? []).length;
    openDetails -= (line.match(/<\/details>/gi) ?? []).length;
  }
  let out = fence !== undefined ? `\n${fence}` : "";
  for (let i = 0; i < Math.max(0, openDetails); i++) out += "\n\n</details>";
  return out;
}
