/**
 * `edgeplan action`: the GitHub Action's entry. All of its logic is in src/action/; this file hands it the same
 * plan and apply the CLI runs, and turns their results into what the action reports.
 */
import { runAction, type ActionRunners, type ApplyRunner, type PlanRunner } from "../action/run.js";
import type { Plan } from "../model/plan.js";
import { NO_CHANGES, summaryLine } from "../render/common.js";
import { renderMarkdown } from "../render/markdown.js";
import { runApply, type ApplyCommandResult } from "./apply.js";
import { loadProjectFile, type ProjectSettings } from "../manifest/project-file.js";
import type { CommandIO } from "./io.js";
import { runPlan } from "./plan.js";

/** Runs the action with inputs from `io.env`; resolves to the process exit code. */
export async function runActionCommand(io: CommandIO): Promise<number> {
  const outcome = await runAction(await withProjectInputs(io), actionRunners());
  return outcome.exitCode;
}

/**
 * The action reads the project file (`edgeplan.yaml` at the root of the checkout) as the CLI does: the inputs left
 * empty take its paths and prune, and its stack when neither the input nor EDGEPLAN_STACK gives one (the action
 * names the stack in its comment before plan runs). Every other setting reaches plan and apply through
 * `withProjectFile`. A file with errors is left for plan and apply to report, as annotations.
 */
export async function withProjectInputs(io: CommandIO): Promise<CommandIO> {
  const { settings, diagnostics } = await loadProjectFile(io.cwd).catch(() => ({ settings: {} as ProjectSettings, diagnostics: [] }));
  if (diagnostics.length > 0) return io;
  const env = { ...io.env };
  const empty = (name: string): boolean => !env[name]?.trim();
  if (empty("INPUT_PATHS") && settings.paths) env.INPUT_PATHS = settings.paths.join("\n");
  if (empty("INPUT_PRUNE") && settings.prune !== undefined) env.INPUT_PRUNE = String(settings.prune);
  if (empty("INPUT_STACK") && empty("EDGEPLAN_STACK") && settings.stack !== undefined) env.EDGEPLAN_STACK = settings.stack;
  return { ...io, env };
}

/** The CLI's plan and apply, as the action calls them. */
export function actionRunners(): ActionRunners {
  const plan: PlanRunner = async (options, io) => {
    const result = await runPlan(options, io);
    return result.plan ? { ...result, markdown: renderMarkdown(result.plan), summary: planSummaryLine(result.plan) } : result;
  };
  const apply: ApplyRunner = async (options, io) => {
    const result = await runApply(options, io);
    return { ...result, ...applyReport(result) };
  };
  return { plan, apply };
}

/** The one-line `summary` output of a plan: its summary line, and the risks an apply must acknowledge. */
export function planSummaryLine(plan: Plan): string {
  const line = plan.changes.length === 0 ? NO_CHANGES : summaryLine(plan);
  const rules = [...new Set(plan.risks.map((r) => r.rule))];
  return rules.length > 0 ? `${line} Risks: ${rules.join(", ")}.` : line;
}

/**
 * What an apply reports: what was done first (headline, results, convergence, outputs), then the plan it ran,
 * folded; the one-line summary is the apply's own.
 */
function applyReport(result: ApplyCommandResult): { markdown?: string; summary?: string } {
  if (!result.plan) return {};
  const planMarkdown = renderMarkdown(result.plan);
  if (!result.summaryMarkdown) return { markdown: planMarkdown, summary: planSummaryLine(result.plan) };
  const markdown = [
    result.summaryMarkdown.trimEnd(),
    "",
    "<details><summary>The plan that was applied</summary>",
    "",
    planMarkdown.trimEnd(),
    "",
    "</details>",
  ].join("\n");
  return result.summary ? { markdown, summary: result.summary } : { markdown };
}
