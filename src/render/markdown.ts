/**
 * The plan as Markdown for a pull-request comment or a job summary: the summary line and the request estimate, risks
 * first, a table of the changes, a traffic diagram (Mermaid) of each split that moves, orphans, outputs, then the
 * details of each change in a `<details>` block. Kept under `maxChars` (GitHub refuses longer comments) by dropping
 * the diagrams first, then details, and only for very large plans rows of the tables too; never the summary or the
 * risks. Every cut is said in the comment. Reads the Plan only. Pure.
 */
import { completeCommands } from "../core/command-text.js";
import type { Change, FieldDiff, Plan } from "../model/plan.js";
import { renderMermaid, trafficChanges } from "./mermaid.js";
import {
  changeWarnings,
  childLabel,
  DRIFT_HEADING,
  IGNORED_HEADING,
  ignoredOfUnchanged,
  estimateLine,
  noChangesLine,
  ownershipText,
  orphanId,
  phraseOf,
  PENDING_OUTPUTS,
  planOutputs,
  rolloutLines,
  summaryLine,
  symbolOf,
  targetedLine,
  titleOf,
  valueText,
  visibleWeights,
  weightText,
  policiesLine,
  policyPlace,
  POLICY_LEVEL_NOTE,
} from "./common.js";

export interface MarkdownOptions {
  /** Upper bound of the rendering's length (GitHub refuses comments over 65,536 characters). Default 60,000. */
  maxChars?: number;
  /** The flags that reach the same API and stack, appended to the commands the notes quote (src/core/command-text.ts). */
  where?: string;
}

export const DEFAULT_MARKDOWN_MAX_CHARS = 60_000;

/** Inline code that survives backticks and line breaks in the text (a line break would end a table row, or start a fence). */
export function code(value: string): string {
  const text = value.replace(/\r?\n/g, " ");
  const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  return longest > 0 ? `${fence} ${text} ${fence}` : `${fence}${text}${fence}`;
}

/** Text safe inside a table cell or a line of Markdown: no pipe, line break or HTML tag of a value gets through. */
export function cell(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/\\/g, "\\\\").replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

function html(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** A fenced block that no line of the content can close early. */
function fenced(lang: string, lines: string[]): string {
  const longest = Math.max(0, ...(lines.join("\n").match(/`{3,}/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(Math.max(3, longest + 1));
  return `${fence}${lang}\n${lines.join("\n")}\n${fence}`;
}

/** A part of the comment made of items (table rows, outputs, details) that can be cut from the end. */
interface Section {
  /** Lines before the first item (a heading, a table header). */
  head: string;
  items: string[];
  /** What the cut note calls an item: `changes`, `orphans`... */
  noun: string;
  /** Where the items cut can be found. */
  elsewhere?: string;
  /** Shown only when every other part is shown whole: the first thing dropped. */
  dropFirst?: boolean;
}

/** The longest cut note, kept free for each section so that the notes never push the comment over maxChars. */
const NOTE_ROOM = 240;

/** Policy violations a Markdown plan lists; the rest are counted. */
const MARKDOWN_POLICY_RESULTS = 50;

/**
 * Renders the plan as Markdown, ending with a newline, at most `maxChars` long. The heading, the summary line, the
 * risks and the warnings are never cut; when the rest does not fit, items are cut from the end of each part in this
 * order of importance: the table of changes, the outputs, the orphans, the details, the traffic diagrams (so these
 * go first); each cut is said in a note.
 * Only a summary and risks longer than `maxChars` by themselves make a longer comment.
 */
export function renderMarkdown(plan: Plan, options: MarkdownOptions = {}): string {
  const maxChars = options.maxChars ?? DEFAULT_MARKDOWN_MAX_CHARS;
  const fixed = `${markdownHead(plan).join("\n")}\n`;
  const s = markdownSections(plan, options.where ?? "");
  // Shown in reading order, filled in order of importance (diagrams last, so they are dropped first).
  const display = [s.changes, s.traffic, s.orphans, s.ignored, s.outputs, s.details].filter((sec) => sec.items.length > 0);
  const priority = [s.changes, s.outputs, s.orphans, s.ignored, s.details, s.traffic].filter((sec) => sec.items.length > 0);
  const kept = fitSections(priority, maxChars - fixed.length - NOTE_ROOM * display.length);
  let body = fixed;
  for (const sec of display) {
    const n = kept.get(sec) ?? 0;
    if (n > 0) body += sec.head + sec.items.slice(0, n).join("");
    if (n < sec.items.length) {
      body +=
        `\n_${n === 0 ? "All" : "The last"} ${sec.items.length - n} of ${sec.items.length} ${sec.noun} were cut to keep this comment under ` +
        `${maxChars} characters; ${sec.elsewhere ?? "the JSON plan (`edgeplan plan --format json`) has all of them"}._\n`;
    }
  }
  return body;
}

/** The part of the comment that is never cut: heading, environment, summary, estimate, risks, policies, warnings. */
function markdownHead(plan: Plan): string[] {
  const head: string[] = [];
  const env = plan.environment;
  head.push(env ? `### edgeplan plan: environment ${code(env.name)}, stack ${code(plan.stack)}` : `### edgeplan plan: stack ${code(plan.stack)}`);
  head.push("");
  if (env) head.push(`API: ${code(env.api_url)}`, "");
  const targeted = targetedLine(plan);
  if (targeted !== null) head.push(`> **${cell(targeted)}**`, "");
  head.push(plan.changes.length === 0 ? `**${noChangesLine(plan)}**` : `**${summaryLine(plan)}**`);
  if (plan.changes.length > 0) head.push("", cell(estimateLine(plan.estimate)));
  head.push(...markdownDrift(plan));
  if (plan.risks.length > 0) {
    head.push("", "#### Risks", "", "Apply needs `--ack RULE` for each rule below (or `--force`).", "");
    for (const risk of plan.risks) head.push(`- **${code(risk.rule)}**: ${cell(risk.message)}`);
  }
  if (plan.policies) {
    head.push("", "#### Policies", "", cell(policiesLine(plan.policies)));
    if (plan.policies.results.length > 0) head.push("");
    // The head is never cut: a plan that breaks a policy on every change lists the first ones and counts the rest.
    for (const r of plan.policies.results.slice(0, MARKDOWN_POLICY_RESULTS)) {
      head.push(
        `- **${code(r.rule)}** (${r.level}: ${POLICY_LEVEL_NOTE[r.level]}${r.level === "ack" ? ` ${code(r.rule)}` : ""}) on ${code(policyPlace(r))}: ${cell(r.message)}`,
      );
    }
  }
  const unlisted = (plan.policies?.results.length ?? 0) - MARKDOWN_POLICY_RESULTS;
  if (unlisted > 0) head.push(`- and ${unlisted} more (\`edgeplan plan\` lists them all)`);
  const changeWarningItems = plan.changes.flatMap((c) => changeWarnings(c).map((w) => `- ${code(c.address)}: ${cell(w)}`));
  if (plan.warnings.length > 0 || changeWarningItems.length > 0) {
    head.push("", "#### Warnings", "");
    for (const w of plan.warnings) head.push(`- ${cell(w)}`);
    head.push(...changeWarningItems);
  }
  return head;
}

/** A field that differs, from what edgeplan wrote to what is live: `a -> b`, `added: b`, `removed: a`. */
function driftValues(diff: FieldDiff): string {
  if (diff.op === "add") return `added: ${code(valueText(diff.after))}`;
  if (diff.op === "remove") return `removed: ${code(valueText(diff.before))}`;
  return `${code(valueText(diff.before))} -> ${code(valueText(diff.after))}`;
}

/** What changed outside edgeplan, each object with the fields that differ; in the head, which is never cut. */
function markdownDrift(plan: Plan): string[] {
  if (!plan.drift || plan.drift.length === 0) return [];
  const out = ["", `#### ${DRIFT_HEADING}`, ""];
  for (const d of plan.drift) {
    out.push(`- ${code(d.address)}: ${d.what}: ${cell(d.reason)}`);
    for (const diff of d.diffs) out.push(`  - ${code(diff.path)}: ${driftValues(diff)}`);
  }
  return out;
}

/** An orphan's id cell: empty for a route module, which has no id of its own. */
function orphanCell(o: Plan["orphans"][number]): string {
  const id = orphanId(o);
  return id === null ? "" : code(id);
}

/** The parts of the comment that may be cut, each a heading and its items; `where` completes the commands notes quote. */
function markdownSections(plan: Plan, where: string): Record<"changes" | "orphans" | "outputs" | "ignored" | "details" | "traffic", Section> {
  const { shown } = planOutputs(plan);
  return {
    changes: {
      head: "\n#### Changes\n\n| | address | change | manifest |\n|:-:|---|---|---|\n",
      items: plan.changes.map((c) => `| ${code(symbolOf(c))} | ${code(titleOf(c))} | ${cell(phraseOf(c))} | ${c.source ? code(c.source) : ""} |\n`),
      noun: "changes",
    },
    orphans: {
      head: `\n#### Orphans of stack ${code(plan.stack)}\n\n| address | id | plan | why |\n|---|---|---|---|\n`,
      items: plan.orphans.map((o) => `| ${code(o.address)} | ${orphanCell(o)} | ${o.action} | ${cell(o.reason)} |\n`),
      noun: "orphans",
    },
    outputs: {
      head: `\n#### Outputs\n\n${PENDING_OUTPUTS}\n\n`,
      items: shown.map((o) => `- ${code(o.address)}\n`),
      noun: "outputs",
    },
    ignored: {
      head: `\n#### ${IGNORED_HEADING}\n\n`,
      items: ignoredOfUnchanged(plan).map((i) => `- ${code(i.address)}: ignored: ${code(i.path)} differs\n`),
      noun: "ignored differences",
    },
    details: { head: "\n#### Details\n", items: plan.changes.map((c) => renderDetails(c, where)), noun: "change details" },
    traffic: {
      head: "\n#### Traffic\n",
      // A line never starts with a code span: one of a name holding ``` would open a fence.
      items: trafficChanges(plan.changes).map((c) => `\nSplit of ${code(c.address)}:\n\n${fenced("mermaid", renderMermaid(c))}\n`),
      noun: "traffic diagrams",
      elsewhere: "`edgeplan plan --format html` draws every split",
      dropFirst: true,
    },
  };
}

/**
 * How many items of each section fit in `room` characters, the sections taken in order of importance: each keeps
 * its first items while they fit; a section marked `dropFirst` is left out once any before it was cut.
 */
function fitSections(priority: readonly Section[], room: number): Map<Section, number> {
  const kept = new Map<Section, number>();
  let allWhole = true;
  for (const sec of priority) {
    let n = 0;
    let used = sec.head.length;
    if (used <= room && (allWhole || !sec.dropFirst)) {
      for (const item of sec.items) {
        if (used + item.length > room) break;
        used += item.length;
        n++;
      }
    }
    kept.set(sec, n);
    if (n > 0) room -= used;
    if (n < sec.items.length) allWhole = false;
  }
  return kept;
}

function renderDetails(change: Change, where: string): string {
  const lines: string[] = [];
  if (change.source) lines.push(`# ${change.source}`);
  for (const note of change.notes) lines.push(`# ${completeCommands(note, where)}`);
  for (const line of rolloutLines(change)) lines.push(`# ${completeCommands(line, where)}`);
  if (change.depends_on.length > 0) lines.push(`# after ${change.depends_on.join(", ")}`);
  if (change.kind === "inventory") {
    for (const diff of change.diffs) lines.push(`${diff.op === "add" ? "+" : diff.op === "remove" ? "-" : "!"} ${diff.path}: ${ownershipText(diff)}`);
  } else for (const diff of change.diffs) lines.push(...diffLines(diff));
  if (change.kind === "weighted_backend") {
    const { shown, hidden } = visibleWeights(change.weights);
    if (shown.length > 0 || change.action === "create" || change.action === "delete") {
      lines.push(`  backends:${change.weights.length === 0 ? " {}" : ""}`);
      for (const w of shown) {
        if (w.before !== null && (w.changed || w.after === null)) lines.push(`-     ${childLabel(w)}: ${weightText(w.before, w.share_before)}`);
        if (w.after !== null && (w.changed || w.before === null)) lines.push(`+     ${childLabel(w)}: ${weightText(w.after, w.share_after)}`);
        if (!w.changed && w.before !== null && w.after !== null) {
          lines.push(`      ${childLabel(w)}: ${weightText(w.before, w.share_before)} -> ${weightText(w.after, w.share_after)}`);
        }
      }
      if (hidden > 0) lines.push(`      # (${hidden} unchanged ${hidden === 1 ? "child" : "children"} hidden)`);
    }
  }
  // One line: a line break would end the HTML block of <details> and let the rest be read as Markdown.
  const summary = `<code>${html(`${symbolOf(change)} ${titleOf(change)}`)}</code> ${html(phraseOf(change))}`.replace(/\r?\n/g, " ");
  return `\n<details><summary>${summary}</summary>\n\n${fenced("diff", lines)}\n\n</details>\n`;
}

function diffLines(diff: FieldDiff): string[] {
  if (diff.lines !== null) {
    const sign = diff.op === "add" ? "+" : diff.op === "remove" ? "-" : " ";
    return [
      `${sign} ${diff.path}:`,
      ...diff.lines.map((l) => {
        const first = l.charAt(0);
        return first === "+" || first === "-" ? `${first}     ${l.slice(2)}` : `      ${l.startsWith("  ") ? l.slice(2) : l}`;
      }),
    ];
  }
  if (diff.op === "add") return [`+ ${diff.path}: ${valueText(diff.after)}`];
  if (diff.op === "remove") return [`- ${diff.path}: ${valueText(diff.before)}`];
  return [`- ${diff.path}: ${valueText(diff.before)}`, `+ ${diff.path}: ${valueText(diff.after)}`];
}
