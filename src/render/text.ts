/**
 * The plan as text for a terminal, drawn like Terraform's: what changed outside edgeplan and risks first, then each change with `+ ~ -` markers
 * (and `>`, `!`, `=>` for adopt, take over and rename), orphans, outputs, and the summary line. Reads the Plan only.
 * Pure.
 */
import { completeCommands } from "../core/command-text.js";
import type { Change, FieldDiff, Plan } from "../model/plan.js";
import {
  changeWarnings,
  childLabel,
  DRIFT_HEADING,
  driftLine,
  driftSymbol,
  environmentLine,
  IGNORED_HEADING,
  ignoredOfUnchanged,
  estimateLine,
  noChangesLine,
  OUTPUT_FIELDS,
  outputText,
  ownershipText,
  phraseOf,
  PENDING_OUTPUTS,
  planOutputs,
  rolloutLines,
  summaryLine,
  legendOf,
  symbolOf,
  targetedLine,
  orphanTitle,
  titleOf,
  valueText,
  visibleWeights,
  weightText,
  type ChangeSymbol,
  type ShownOutputs,
  policiesLine,
  policyPlace,
  POLICY_LEVEL_NOTE,
} from "./common.js";

export interface TextOptions {
  /** ANSI colours; callers pass false when NO_COLOR is set or stdout is not a terminal. */
  color: boolean;
  /** The flags that reach the same API and stack, appended to the commands the notes quote (src/core/command-text.ts). */
  where?: string;
}

type Paint = (style: keyof typeof STYLES, text: string) => string;

const STYLES = {
  green: "32",
  yellow: "33",
  red: "31",
  cyan: "36",
  magenta: "35",
  bold: "1",
  dim: "2",
} as const;

const SYMBOL_STYLE: Record<ChangeSymbol, keyof typeof STYLES> = {
  "+": "green",
  "~": "yellow",
  "-": "red",
  ">": "cyan",
  "!": "magenta",
  "=>": "cyan",
  ">>": "yellow",
};

const DIFF_STYLE: Record<string, keyof typeof STYLES> = { "+": "green", "-": "red", "~": "yellow", "@": "cyan" };

/** Renders the plan as text, ending with a newline. */
export function renderText(plan: Plan, options: TextOptions): string {
  const paint: Paint = options.color ? (style, text) => `\x1b[${STYLES[style]}m${text}\x1b[0m` : (_style, text) => text;
  const out: string[] = [];

  const environment = environmentLine(plan);
  if (environment !== null) out.push(paint("bold", environment), "");
  const targeted = targetedLine(plan);
  if (targeted !== null) out.push(paint("bold", paint("yellow", targeted)), "");
  out.push(...renderDriftText(plan, paint));
  if (plan.risks.length > 0) {
    out.push(paint("bold", paint("red", `Risks: apply needs --ack RULE for each rule below (or --force):`)));
    for (const risk of plan.risks) out.push(`  ${paint("red", "!")} ${paint("bold", risk.rule)}: ${risk.message}`);
    out.push("");
  }
  out.push(...renderPoliciesText(plan, paint));
  if (plan.warnings.length > 0) {
    out.push("Warnings:");
    for (const w of plan.warnings) out.push(`  ${paint("yellow", "!")} ${w}`);
    out.push("");
  }

  if (plan.changes.length === 0) {
    out.push(noChangesLine(plan));
  } else {
    out.push(`edgeplan will make these changes (stack "${plan.stack}"); symbols:`);
    for (const [symbol, meaning] of legendOf(plan.changes)) out.push(`  ${paint(SYMBOL_STYLE[symbol], symbol.padEnd(2))} ${meaning}`);
    for (const change of plan.changes) {
      out.push("");
      out.push(...renderChange(change, paint, options.where ?? ""));
    }
  }

  if (plan.orphans.length > 0) {
    out.push("");
    out.push(`Orphans: objects of stack "${plan.stack}" that no manifest names:`);
    for (const o of plan.orphans) {
      const mark = o.action === "delete" ? paint("red", "-") : " ";
      out.push(`  ${mark} ${orphanTitle(o)}: ${o.reason}`);
    }
  }

  const ignored = ignoredOfUnchanged(plan);
  if (ignored.length > 0) {
    out.push("", `${IGNORED_HEADING}:`);
    for (const i of ignored) out.push(`  # ${i.address}: ignored: ${i.path} differs`);
  }

  const { shown } = planOutputs(plan);
  if (shown.length > 0) out.push("", `Outputs: ${PENDING_OUTPUTS}`, ...shown.map((o) => `  ${o.address}`));

  if (plan.changes.length > 0) {
    out.push("");
    out.push(paint("bold", summaryLine(plan)));
    out.push(`Estimate: ${estimateLine(plan.estimate)}`);
  }
  return `${out.join("\n")}\n`;
}

/** The outputs shown as text lines (a blank line first), or nothing when there are none; the apply report shows them too. */
export function renderOutputsText({ shown }: ShownOutputs): string[] {
  const out: string[] = [];
  if (shown.length > 0) out.push("", "Outputs: copy these into the IdP:");
  const width = Math.max(...OUTPUT_FIELDS.map(([, label]) => label.length)) + 1;
  for (const o of shown) {
    out.push(`  ${o.address}`);
    for (const [field, label] of OUTPUT_FIELDS) out.push(`    ${`${label}:`.padEnd(width)} ${outputText(o[field], o.known_after_apply)}`);
  }
  return out;
}

function renderChange(change: Change, paint: Paint, where: string): string[] {
  const symbol = symbolOf(change);
  const lines: string[] = [];
  lines.push(paint("bold", `  # ${change.address} ${phraseOf(change)}`) + (change.source ? ` (${change.source})` : ""));
  for (const note of change.notes) lines.push(`  # ${completeCommands(note, where)}`);
  for (const w of changeWarnings(change)) lines.push(`  ${paint("yellow", "!")} warning: ${w}`);
  for (const line of rolloutLines(change)) lines.push(`  # ${completeCommands(line, where)}`);
  if (change.depends_on.length > 0) lines.push(`  # after ${change.depends_on.join(", ")}`);
  lines.push(`  ${paint(SYMBOL_STYLE[symbol], symbol)} ${titleOf(change)}`);
  if (change.kind === "inventory") {
    for (const diff of change.diffs) {
      const mark = diff.op === "add" ? "+" : diff.op === "remove" ? "-" : "~";
      lines.push(`      ${paint(DIFF_STYLE[mark] ?? "yellow", mark)} ${diff.path}: ${ownershipText(diff)}`);
    }
    return lines;
  }
  for (const diff of change.diffs) lines.push(...renderFieldDiff(diff, paint));
  if (change.kind === "weighted_backend") {
    const { shown, hidden } = visibleWeights(change.weights);
    const mark = change.action === "create" ? "+" : change.action === "delete" ? "-" : "~";
    if (shown.length > 0 || change.action === "create" || change.action === "delete") {
      lines.push(`      ${paint(DIFF_STYLE[mark] ?? "yellow", mark)} backends:${change.weights.length === 0 ? " {}" : ""}`);
      for (const w of shown) {
        if (w.before === null) lines.push(`          ${paint("green", "+")} ${childLabel(w)}: ${weightText(w.after, w.share_after)}`);
        else if (w.after === null) lines.push(`          ${paint("red", "-")} ${childLabel(w)}: ${weightText(w.before, w.share_before)}`);
        else {
          const m = w.changed ? paint("yellow", "~") : " ";
          lines.push(`          ${m} ${childLabel(w)}: ${weightText(w.before, w.share_before)} -> ${weightText(w.after, w.share_after)}`);
        }
      }
      if (hidden > 0) lines.push(`          # (${hidden} unchanged ${hidden === 1 ? "child" : "children"} hidden)`);
    }
  }
  return lines;
}

/** What changed outside edgeplan, each object with the fields that differ, then a blank line; nothing without drift. */
function renderDriftText(plan: Plan, paint: Paint): string[] {
  if (!plan.drift || plan.drift.length === 0) return [];
  const out = [paint("bold", `${DRIFT_HEADING}:`)];
  for (const d of plan.drift) {
    const mark = driftSymbol(d);
    out.push(`  ${paint(DIFF_STYLE[mark] ?? "yellow", mark)} ${driftLine(d)}`);
    for (const diff of d.diffs) out.push(...renderFieldDiff(diff, paint));
  }
  out.push("");
  return out;
}

function renderFieldDiff(diff: FieldDiff, paint: Paint): string[] {
  const mark = diff.op === "add" ? "+" : diff.op === "remove" ? "-" : "~";
  const head = `      ${paint(DIFF_STYLE[mark] ?? "yellow", mark)} ${diff.path}:`;
  if (diff.lines !== null) {
    return [head, ...diff.lines.map((l) => `          ${paintDiffLine(l, paint)}`)];
  }
  if (diff.op === "add") return [`${head} ${valueText(diff.after)}`];
  if (diff.op === "remove") return [`${head} ${valueText(diff.before)}`];
  return [`${head} ${valueText(diff.before)} -> ${valueText(diff.after)}`];
}

function paintDiffLine(line: string, paint: Paint): string {
  const style = DIFF_STYLE[line.charAt(0)];
  return style ? paint(style, line) : line;
}

/** The policies' line and each failed policy (deny and ack in red, warn in yellow), then a blank line; nothing without policies. */
function renderPoliciesText(plan: Plan, paint: Paint): string[] {
  if (!plan.policies) return [];
  const out = [plan.policies.results.length > 0 ? paint("bold", policiesLine(plan.policies)) : policiesLine(plan.policies)];
  for (const r of plan.policies.results) {
    const style = r.level === "warn" ? "yellow" : "red";
    out.push(
      `  ${paint(style, "x")} ${paint("bold", r.rule)} (${r.level}: ${POLICY_LEVEL_NOTE[r.level]}${r.level === "ack" ? ` ${r.rule}` : ""}): ${policyPlace(r)}: ${r.message}`,
    );
  }
  out.push("");
  return out;
}
