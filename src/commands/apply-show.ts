/**
 * What `apply` shows on stdout, and in `--html FILE`: the plan before the question, the plan alone when nothing
 * runs, and the report after the run, each in the chosen format. JSON and HTML are one document on stdout, written
 * at the end, so a script or a browser reads all of it at once.
 */
import { renderApplyHtml, renderApplyJson, renderApplyMarkdown, renderApplyText } from "../render/apply-report.js";
import { renderHtml, type HtmlPlanPlace } from "../render/html.js";
import type { ApplyReport } from "../model/apply-report.js";
import type { Plan } from "../model/plan.js";
import type { CommandIO } from "./io.js";
import { renderPlan, useColor, writeHtmlFile, type PlanFormat } from "./output.js";

/** The flags that choose what is shown. */
export interface ShowOptions {
  /** Also write the page to this file. */
  html?: string;
  color?: boolean;
  /** No progress was shown on stderr: the text report then lists the changes done as well. */
  quiet?: boolean;
  /** The flags that reach the same API and stack, appended to the commands the plan and the report quote (`stackWhere`). */
  where?: string;
}

/** Formats whose stdout is one document written at the end (the report with the plan, or the plan alone). */
const ONE_DOCUMENT: readonly PlanFormat[] = ["json", "html"];

/**
 * Shows the plan before the question: on stdout in the chosen format, except JSON and HTML, whose stdout is one
 * document written at the end: then the plan goes to stderr as text for the person asked.
 */
export function showPlan(plan: Plan, format: PlanFormat, options: ShowOptions, io: CommandIO): void {
  if (ONE_DOCUMENT.includes(format)) io.stderr(renderPlan(plan, "text", false, options.where));
  else io.stdout(renderPlan(plan, format, useColor(options, io), options.where));
}

/**
 * When nothing runs (nothing to change, nothing due, a refusal): the document of `--format json` with `report:
 * null`, the plan's page on stdout (`--format html`), and the page in `--html FILE`.
 */
export async function showPlanOnly(plan: Plan, format: PlanFormat, options: ShowOptions, io: CommandIO, place?: HtmlPlanPlace): Promise<void> {
  if (format === "json") io.stdout(renderApplyJson(plan, null));
  if (format !== "html" && options.html === undefined) return;
  const page = renderHtml(plan, place, options.where);
  if (format === "html") io.stdout(page);
  if (options.html !== undefined) await writeHtmlFile(io, options.html, page, "plan");
}

/** The report on stdout in the chosen format, and as a page in `--html FILE`. */
export async function showReport(report: ApplyReport, plan: Plan, format: PlanFormat, options: ShowOptions, io: CommandIO): Promise<void> {
  const where = options.where ?? "";
  const page = format === "html" || options.html !== undefined ? renderApplyHtml(report, plan, where) : "";
  if (format === "json") io.stdout(renderApplyJson(plan, report));
  else if (format === "markdown") io.stdout(`\n${renderApplyMarkdown(report, where)}`);
  else if (format === "html") io.stdout(page);
  else io.stdout(renderApplyText(report, { progressShown: options.quiet !== true, where }));
  if (options.html !== undefined) await writeHtmlFile(io, options.html, page, "apply report");
}
