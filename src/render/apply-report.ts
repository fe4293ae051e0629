/**
 * The report of an apply, shown after the plan: what was done, what failed (with the API's message and, for a 400,
 * the manifest line), what was skipped or not started, whether the live side converged, and the outputs for the
 * IdP. As text (stdout of the CLI), Markdown (the GitHub Action's job summary), JSON (`--format json`) and HTML
 * (./html.ts). Reads the report only. Pure.
 */
import { completeCommands } from "../core/command-text.js";
import { APPLY_FORMAT_VERSION, type ApplyOutcome, type ApplyReport, type ChangeResult } from "../model/apply-report.js";
import { hideSensitive, OUTPUT_FIELDS, outputText, reportOutputs } from "./common.js";
import { renderOutputsText } from "./text.js";
import { cell, code } from "./markdown.js";
import { esc, renderHtmlPage } from "./html-page.js";
import { renderHtmlChanges, renderHtmlOrphans, renderHtmlOutputs, renderHtmlRisks, renderHtmlSummary } from "./html.js";
import type { Plan } from "../model/plan.js";
import { ApplyDocumentSchema, type ApplyReportJson } from "../model/apply-schema.js";
import { InternalError } from "../model/errors.js";

const STATUS_ORDER: ReadonlyArray<ChangeResult["status"]> = ["done", "failed", "skipped", "not_started"];
const STATUS_LABEL: Record<ChangeResult["status"], string> = { done: "done", failed: "failed", skipped: "skipped", not_started: "not started" };

/**
 * `Apply complete: 3 done.`, `Apply finished with failures: 2 done, 1 failed, 1 skipped.`, `Apply interrupted (SIGINT): ...`,
 * `Apply halted a rollout: 1 done.` (a check failed: the halt is one of the changes done).
 */
export function buildApplyHeadline(report: Pick<ApplyReport, "outcome" | "interruptedBy" | "halted">): string {
  const { counts } = report.outcome;
  // A signal while `--wait` sleeps interrupts the run though no change was cut short.
  const interrupted = report.outcome.interrupted || report.interruptedBy?.startsWith("SIG") === true;
  const parts = [`${counts.done} done`];
  if (counts.failed) parts.push(`${counts.failed} failed`);
  if (counts.skipped) parts.push(`${counts.skipped} skipped`);
  if (counts.not_started) parts.push(`${counts.not_started} not started`);
  if (interrupted) return `Apply interrupted${report.interruptedBy ? ` (${report.interruptedBy})` : ""}: ${parts.join(", ")}.`;
  if (counts.failed || counts.skipped || counts.not_started) return `Apply finished with failures: ${parts.join(", ")}.`;
  const halted = (report.halted ?? []).length;
  if (halted > 0) return `Apply halted ${halted === 1 ? "a rollout" : `${halted} rollouts`}: ${parts.join(", ")}.`;
  return `Apply complete: ${parts.join(", ")}.`;
}

/** The sentence that says whether the live side converged. */
export function buildConvergenceLine(report: Pick<ApplyReport, "convergence" | "against" | "outcome" | "targeted" | "interruptedBy">): string {
  const c = report.convergence;
  const target = (report.against === "manifests" ? "the manifests" : "the plan") + (report.targeted === true ? " within the targets" : "");
  if (!c.checked) {
    if (report.outcome.interrupted || report.interruptedBy?.startsWith("SIG"))
      return "Not checked for convergence: the run was interrupted. Run apply again to finish it (nothing is created twice).";
    return `Not checked for convergence: ${c.error ?? "the objects could not be read again"}.`;
  }
  if (c.converged && (c.paused ?? []).length > 0) return `Paused: the live state matches ${target} but for the rollouts that wait for a person:`;
  if (c.converged && (c.inProgress ?? []).length > 0) return `Rollout under way: the live state matches ${target} but for the steps still to come:`;
  if (c.converged) return `Converged: the live state matches ${target}.`;
  const n = c.remaining.length;
  return `Not converged: ${n} ${n === 1 ? "object does" : "objects do"} not match ${target} yet${report.against === "manifests" ? " (edgeplan plan shows the details)" : ""}:`;
}

function resultsInOrder(outcome: ApplyOutcome): ChangeResult[] {
  return STATUS_ORDER.flatMap((s) => outcome.results.filter((r) => r.status === s));
}

/** How the text report is shown. */
export interface ApplyTextOptions {
  /**
   * Each change's line was shown as it ended (the progress on stderr): the report then lists only the changes that
   * were not done, so that a change is listed once, as Terraform's apply does. Default false: every change is listed.
   */
  progressShown?: boolean;
  /** The flags that reach the same API and stack, appended to the commands the report quotes (src/core/command-text.ts). */
  where?: string;
}

/** The report as text, starting with a blank line and ending with a newline. */
export function renderApplyText(report: ApplyReport, options: ApplyTextOptions = {}): string {
  const out: string[] = ["", buildApplyHeadline(report)];
  const results = resultsInOrder(report.outcome).filter((r) => !(options.progressShown === true && r.status === "done"));
  const width = Math.max(0, ...results.map((r) => STATUS_LABEL[r.status].length));
  for (const r of results) {
    const ms = r.ms !== null && r.status === "done" ? ` (${r.ms} ms)` : "";
    out.push(`  ${STATUS_LABEL[r.status].padEnd(width)}  ${r.address}: ${indentRest(r.message, width + 4)}${ms}`);
  }
  const where = options.where ?? "";
  for (const line of rolloutReportLines(report, where)) out.push(`  ${line}`);
  out.push("");
  out.push(buildConvergenceLine(report));
  for (const r of report.convergence.remaining) out.push(`  ${r.address} ${completeCommands(r.reason, where)}`);
  for (const r of [...(report.convergence.paused ?? []), ...(report.convergence.inProgress ?? [])]) out.push(`  ${r.address}: ${completeCommands(r.reason, where)}`);
  out.push(...renderOutputsText(reportOutputs(report)));
  return `${out.join("\n")}\n`;
}

/**
 * What the report says of rollouts: the measurements of their analyses, steps held back, rollouts rolled back
 * (`rolled back to 7000/3000: analysis error-rate failed (0.07, result >= 0.05)`) or paused, a --wait that timed out.
 */
function rolloutReportLines(report: ApplyReport, where: string): string[] {
  const lines = (report.analysis ?? []).map(
    (m) => `measured  ${m.address}: ${m.metric} before step ${m.step} of ${m.steps}: ${m.value ?? "no value"}, ${m.verdict} (${m.why})`,
  );
  lines.push(...(report.held ?? []).map((h) => `${h.status}  ${h.address}: ${h.message}`));
  for (const h of report.halted ?? []) {
    if (h.rollback_failed) {
      lines.push(`halted  ${h.address}: ${h.reason}; ${rollbackFailedLine(h.rollback_failed)}`);
      continue;
    }
    const back = h.weights ? `rolled back to ${Object.values(h.weights).join("/")}: ` : "";
    lines.push(`halted  ${h.address}: ${back}${h.reason}${h.weights ? "" : "; the weights it started from were written back"}`);
  }
  for (const p of report.paused ?? []) lines.push(`paused  ${p.address}: ${pauseLine(p.reason, p.name)}`);
  if (report.timedOut) lines.push(`--wait-timeout reached: ${report.timedOut}; run apply again to go on`);
  return lines.map((line) => completeCommands(line, where));
}

/** `the rollback failed (...): traffic is still at 5000/5000, the step's weights; the next run writes the rollback again` */
export function rollbackFailedLine(failed: { message: string; weights: Record<string, number> }): string {
  const at = Object.values(failed.weights).join("/");
  return `the rollback failed (${failed.message}): traffic is still at ${at}, the step's weights; the next run writes the rollback again`;
}

/** Why a rollout paused and the two ways on: `inconclusive (error-rate: no data); run "edgeplan rollout promote web" ...`. */
export function pauseLine(reason: string, name: string): string {
  const why = reason.startsWith("inconclusive: ") ? `inconclusive (${reason.slice("inconclusive: ".length)})` : reason;
  return `${why}; run "edgeplan rollout promote ${name}" to go on or "edgeplan rollout abort ${name}" to roll back`;
}

/** Lines after the first of a multi-line message, indented under it. */
function indentRest(text: string, indent: number): string {
  return text.split("\n").join(`\n${" ".repeat(indent)}`);
}

/** The report as Markdown (for a job summary), ending with a newline; `where` completes the commands it quotes. */
export function renderApplyMarkdown(report: ApplyReport, where = ""): string {
  const out: string[] = [`### edgeplan apply: stack ${code(report.stack)}`, "", `**${buildApplyHeadline(report)}**`];
  const results = resultsInOrder(report.outcome);
  if (results.length > 0) {
    out.push("", "| change | result | detail |", "|---|---|---|");
    for (const r of results) out.push(`| ${code(r.address)} | ${STATUS_LABEL[r.status]} | ${cell(r.message)} |`);
  }
  const rollouts = rolloutReportLines(report, where);
  if (rollouts.length > 0) out.push("", ...rollouts.map((l) => `- ${cell(l)}`));
  out.push("", buildConvergenceLine(report));
  const pending = [...report.convergence.remaining, ...(report.convergence.paused ?? []), ...(report.convergence.inProgress ?? [])];
  if (pending.length > 0) {
    out.push("");
    for (const r of pending) out.push(`- ${code(r.address)} ${cell(completeCommands(r.reason, where))}`);
  }
  const { shown } = reportOutputs(report);
  if (shown.length > 0) out.push("", "#### Outputs: copy these into the IdP", "");
  for (const o of shown) {
    out.push(`- ${code(o.address)}`);
    for (const [field, label] of OUTPUT_FIELDS) out.push(`  - ${label}: ${code(outputText(o[field], o.known_after_apply))}`);
  }
  return `${out.join("\n")}\n`;
}

/** What a run came to, in one word: the report's `status` in JSON. */
function reportStatus(report: ApplyReport): ApplyReportJson["status"] {
  const { outcome, convergence } = report;
  if (outcome.interrupted || report.interruptedBy?.startsWith("SIG")) return "interrupted";
  // A rollback that was not written is no halt done: traffic is still at the step's weights.
  if ((report.halted ?? []).some((h) => h.rollback_failed)) return "failed";
  if ((report.halted ?? []).length > 0) return "halted";
  if ((report.paused ?? []).length > 0) return "paused";
  if (report.timedOut !== undefined) return "timed_out";
  if (outcome.counts.failed + outcome.counts.skipped + outcome.counts.not_started > 0) return "failed";
  return convergence.checked && convergence.converged ? "converged" : "not_converged";
}

/** The report as the data `apply --format json` holds under `report`. */
export function buildApplyReportJson(report: ApplyReport): ApplyReportJson {
  const { outcome, convergence } = report;
  return {
    stack: report.stack,
    status: reportStatus(report),
    counts: outcome.counts,
    changes: outcome.results.map((r) => ({ address: r.address, kind: r.kind, action: r.action, status: r.status, id: r.id, ms: r.ms, message: r.message })),
    convergence: {
      against: report.against,
      checked: convergence.checked,
      converged: convergence.converged,
      remaining: convergence.remaining,
      in_progress: convergence.inProgress ?? [],
      ...(convergence.paused !== undefined ? { paused: convergence.paused } : {}),
      ...(convergence.error !== undefined ? { error: convergence.error } : {}),
    },
    held: report.held ?? [],
    halted: report.halted ?? [],
    paused: report.paused ?? [],
    analysis: report.analysis ?? [],
    ...(report.timedOut !== undefined ? { timed_out: report.timedOut } : {}),
    outputs: report.outputs,
  };
}

/**
 * `apply --format json`: one document (`format_version: 1`, `kind: "apply"`) with the plan that was shown and the
 * report of the run, or `report: null` when nothing ran. Keys in the schema's order, two-space indentation, a final
 * newline. Throws InternalError when the document does not match its schema (a bug).
 */
export function renderApplyJson(plan: Plan, report: ApplyReport | null): string {
  const doc = { format_version: APPLY_FORMAT_VERSION, kind: "apply", plan: hideSensitive(plan), report: report === null ? null : buildApplyReportJson(report) };
  const parsed = ApplyDocumentSchema.safeParse(doc);
  if (!parsed.success) {
    throw new InternalError(`the apply document does not match its JSON schema: ${parsed.error.message}`, { cause: parsed.error });
  }
  return `${JSON.stringify(parsed.data, null, 2)}\n`;
}

const STATUS_CLASS: Record<ChangeResult["status"], string> = { done: "add", failed: "del", skipped: "del", not_started: "muted" };

/**
 * The report as one self-contained HTML page, with the plan that was applied under it: the headline, the convergence
 * verdict and what still differs, each change's result, the outputs for the IdP, then the plan's risks and cards.
 */
export function renderApplyHtml(report: ApplyReport, plan: Plan, where = ""): string {
  const body = [
    "<header>",
    "<h1>edgeplan apply</h1>",
    `<p class="muted">stack <code>${esc(report.stack)}</code></p>`,
    `<p class="summary">${esc(buildApplyHeadline(report))}</p>`,
    `<p class="${report.convergence.checked && report.convergence.converged ? "add" : "del"}">${esc(buildConvergenceLine(report))}</p>`,
    "</header>",
  ];
  if (report.convergence.remaining.length > 0) {
    body.push("<ul>", ...report.convergence.remaining.map((r) => `<li><code>${esc(r.address)}</code> ${esc(completeCommands(r.reason, where))}</li>`), "</ul>");
  }
  const results = resultsInOrder(report.outcome);
  if (results.length > 0) {
    body.push(
      '<section aria-labelledby="results">',
      '<h2 id="results">Results</h2>',
      "<table>",
      '<thead><tr><th>change</th><th style="width:7em">result</th><th>detail</th></tr></thead>',
      "<tbody>",
    );
    for (const r of results) {
      const ms = r.ms !== null && r.status === "done" ? ` (${r.ms} ms)` : "";
      body.push(`<tr><td><code>${esc(r.address)}</code></td><td class="${STATUS_CLASS[r.status]}">${STATUS_LABEL[r.status]}</td><td>${esc(r.message + ms)}</td></tr>`);
    }
    body.push("</tbody>", "</table>", "</section>");
  }
  body.push(...renderHtmlOutputs(reportOutputs(report)));
  body.push('<section aria-labelledby="plan">', '<h2 id="plan">The plan that was applied</h2>', ...renderHtmlSummary(plan), "</section>");
  body.push(...renderHtmlRisks(plan), ...renderHtmlChanges(plan, "Changes", where), ...renderHtmlOrphans(plan));
  return renderHtmlPage(`edgeplan apply: stack ${report.stack}`, body);
}
