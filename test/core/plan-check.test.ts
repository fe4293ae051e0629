/**
 * The checks of a saved plan against itself (`checkPlan`) and against the live side (`checkPlanAgainstLive`), on
 * plain data: every golden scenario's plan passes both, and each edit a person could make to the file is named.
 */
import { readdirSync, readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { buildLiveState } from "../../src/api/live-state.js";
import { checkPlanAgainstLive } from "../../src/apply/live-check.js";
import { buildSavedPlanLimits, checkPlan } from "../../src/core/plan-check.js";
import { PlanSchema } from "../../src/model/plan-schema.js";
import type { Plan, WeightedBackendChange } from "../../src/model/plan.js";

const scenarios = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "scenarios");
const withPlans = readdirSync(scenarios)
  .filter((d) => existsSync(path.join(scenarios, d, "plan.json")))
  .sort();

function scenario(name: string): { plan: Plan; live: ReturnType<typeof buildLiveState> } {
  const plan = PlanSchema.parse(JSON.parse(readFileSync(path.join(scenarios, name, "plan.json"), "utf8"))) as Plan;
  const live = JSON.parse(readFileSync(path.join(scenarios, name, "live.json"), "utf8")) as { weighted_backends: never[]; routes: never[] };
  return { plan, live: buildLiveState(live.weighted_backends, live.routes) };
}

describe("checkPlan and checkPlanAgainstLive", () => {
  it.each(withPlans)("find nothing in the plan of scenario %s, as buildPlan made it", (name) => {
    const { plan, live } = scenario(name);
    expect(checkPlan(plan)).toEqual([]);
    expect(checkPlanAgainstLive(plan, live)).toEqual([]);
  });
});
