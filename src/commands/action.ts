/**
 * `edgeplan action` and the bundled GitHub Action: all of its logic is in src/action/; this file hands it the same
 * plan and apply the CLI runs, with their reports rendered for GitHub by src/render/action.ts, the record of each
 * plan (src/core/plan-digest.ts) for the apply on merge, and the defaults of the project file.
 */
import { buildPlanRecord } from "../core/plan-digest.js";
import { runAction, type ActionRunners, type ApplyRunner, type InputDefaults, type PlanRunner } from "../action/run.js";
import { reviewedEntries } from "../action/review.js";
import { loadProjectFile, type ProjectFileResult } from "../project/project-file.js";
import { inputEnvName } from "../action/inputs.js";
import { chooseEnvironment } from "./project.js";
import { planSummaryLine, renderActionApply, renderActionPlan } from "../render/action.js";
import { runApply } from "./apply.js";
import type { CommandIO } from "./io.js";
import { runPlan } from "./plan.js";

/** Runs the action with inputs from the environment; resolves to the process exit code. */
export async function runActionCommand(io: CommandIO): Promise<number> {
  const outcome = await runAction(io, actionRunners(), { defaults: await projectDefaults(io) });
  return outcome.exitCode;
}

/**
 * The action reads the project file (`edgeplan.yaml` at the root of the checkout) as the CLI does: the inputs left
 * empty take its paths and prune, and its stack when neither the input nor EDGEPLAN_STACK gives one (the action
 * names the stack in its comment before plan runs); an empty api-key input, the key in the variable `api_key_env`
 * names, as the CLI reads it. Every other setting reaches plan and apply through
 * `withProjectFile`. A file with errors is left for plan and apply to report, as annotations.
 */
export async function projectDefaults(io: CommandIO): Promise<InputDefaults> {
  const project = await loadProjectFile(io.cwd).catch((): ProjectFileResult => ({ settings: {}, diagnostics: [] }));
  // Read as the toolkit reads inputs, but from `io.env`, the environment the run is given.
  const named = io.env[inputEnvName("environment")]?.trim() || undefined;
  if (project.diagnostics.length > 0) return named === undefined ? {} : { environment: named };
  let chosen: ReturnType<typeof chooseEnvironment>;
  try {
    chosen = chooseEnvironment(project, named, io.env);
  } catch {
    // An environment the file does not define: plan and apply refuse it with the list, as the CLI does.
    return named === undefined ? {} : { environment: named };
  }
  const { settings, environment } = chosen;
  const defaults: InputDefaults = environment === null ? {} : { environment: environment.name };
  if (settings.paths) defaults.paths = settings.paths;
  if (settings.prune !== undefined) defaults.prune = settings.prune;
  if (settings.stack !== undefined) defaults.stack = settings.stack;
  if (settings.apiKeyEnv !== undefined) defaults.apiKeyEnv = settings.apiKeyEnv;
  return defaults;
}

/** The CLI's plan and apply, as the action calls them. */
export function actionRunners(): ActionRunners {
  const plan: PlanRunner = async (options, io) => {
    const result = await runPlan(options, io);
    if (!result.plan) return result;
    const risks = [...new Set(result.plan.risks.map((r) => r.rule))];
    return {
      ...result,
      markdown: renderActionPlan(result.plan),
      summary: planSummaryLine(result.plan),
      record: buildPlanRecord(result.plan),
      risks,
      entries: reviewedEntries(result.plan),
    };
  };
  const apply: ApplyRunner = async (options, io) => {
    const result = await runApply(options, io);
    if (!result.plan) return result;
    const summary = result.summaryMarkdown ? result.summary : planSummaryLine(result.plan);
    return { ...result, markdown: renderActionApply(result.plan, result.summaryMarkdown), ...(summary ? { summary } : {}) };
  };
  return { plan, apply };
}
