/**
 * `edgeplan show PLANFILE [--format text|json|markdown|html]`: renders a saved plan (`plan --out FILE`) without
 * contacting the API. The file is untrusted input, read as `apply --plan` reads it: bounded in size and nesting,
 * checked against the plan schema and against itself; its risks are computed again from its changes, as apply does,
 * and so are its policies' results, by the policies of the project file (`--config`, else the working directory's;
 * none without one), so that what is shown is what the changes say. The environment is the plan's: `--env` naming
 * another is refused. Exit 1 for a file that is not a sound plan.
 */
import { resolve } from "node:path";
import { loadSavedPlan } from "../apply/saved-plan.js";
import { buildDisagreementError, checkPlan } from "../core/plan-check.js";
import { buildRisks } from "../core/risks.js";
import { withPolicies } from "../core/policies.js";
import { loadProject } from "./project.js";
import { EdgeplanError, EXIT } from "../model/errors.js";
import type { Plan } from "../model/plan.js";
import type { CommandIO } from "./io.js";
import { savedPlanWhere } from "./hints.js";
import { PLAN_FORMATS, renderPlan, useColor, type PlanFormat } from "./output.js";

export interface ShowCommandOptions {
  format?: PlanFormat;
  /** `--no-color` sets it false. */
  color?: boolean;
  /** The project file whose policies judge the plan (`--config`); default `edgeplan.yaml` of the working directory. */
  config?: string;
  /** `--env NAME`: the environment the plan was made in; another one is refused (the plan's is always the one shown). */
  env?: string;
}

/**
 * Reads the saved plan at `file` (relative to `io.cwd`) and writes it to stdout in the chosen format; returns 0.
 * Throws an EdgeplanError naming the file when it cannot be read, is not a plan, or disagrees with itself.
 */
export async function runShow(file: string, options: ShowCommandOptions, io: CommandIO): Promise<number> {
  const format = options.format ?? "text";
  if (!PLAN_FORMATS.includes(format)) throw new EdgeplanError(`--format: expected one of ${PLAN_FORMATS.join(", ")}, got "${format}"`);
  const saved = await loadSavedPlan(resolve(io.cwd, file), file, file);
  const disagreements = checkPlan(saved);
  if (disagreements.length > 0) throw buildDisagreementError(file, "itself", disagreements, "shown");
  // The file's own risks and policy results are never trusted: an edited file could hide one.
  const name = saved.environment?.name;
  if (options.env !== undefined && options.env !== name) {
    const made = name === undefined ? "in no environment" : `in environment ${name}`;
    throw new EdgeplanError(`--env ${options.env}: ${file} was made ${made}, and is shown as it was made: leave out --env, or plan again with --env ${options.env}`);
  }
  const project = await loadProject(io, options.config);
  const risks = buildRisks(saved.changes, { maxShift: saved.options.max_shift, maxDeletes: saved.options.max_deletes });
  // The plan's environment is the one it was made in, with the vars the project file gives it now.
  const env = name === undefined ? null : { name, vars: project.environments?.[name]?.vars ?? {} };
  const plan: Plan = withPolicies({ ...saved, risks }, project.settings.policies, env);
  // The commands its notes name reach the API and stack the plan was made against, as printed.
  io.stdout(renderPlan(plan, format, useColor(options, io), savedPlanWhere(saved, io.env)));
  return EXIT.ok;
}
