/**
 * The plan as JSON (`format_version: 1`): the saved plan file and the machine-readable output. Keys come in the
 * order the schema declares them (src/model/plan-schema.ts), maps in sorted order, two-space indentation, a final
 * newline: the same plan always gives the same bytes. Pure.
 */
import { InternalError } from "../model/errors.js";
import type { Plan } from "../model/plan.js";
import { PlanSchema } from "../model/plan-schema.js";
import { hideSensitive } from "./common.js";

/**
 * Renders the plan as JSON, with what a query or a header may carry hidden (`hideSensitive`) unless `keepSensitive`
 * (the saved plan, which apply sends from). Throws InternalError when the plan does not match its own schema (a bug).
 */
export function renderJson(plan: Plan, options: { keepSensitive?: boolean } = {}): string {
  const parsed = PlanSchema.safeParse(options.keepSensitive === true ? plan : hideSensitive(plan));
  if (!parsed.success) {
    throw new InternalError(`the plan does not match its JSON schema: ${parsed.error.message}`, { cause: parsed.error });
  }
  return `${JSON.stringify(parsed.data, null, 2)}\n`;
}
