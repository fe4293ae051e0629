/**
 * A saved plan (`plan --out FILE`, applied with `apply --plan FILE`): reading it back, checked against the plan's
 * schema, and reading again only what it touches to tell whether it is stale.
 */
import { readFile } from "node:fs/promises";
import type { ApiClient } from "../api/client.js";
import { fetchTouched } from "../api/fetch-live.js";
import { liveWeightedBackend } from "../api/live-state.js";
import { EdgeplanError } from "../model/errors.js";
import type { Plan } from "../model/plan.js";
import { PlanFileSchema } from "../model/plan-schema.js";
import type { LiveState } from "../model/state.js";
import { buildTouchedByPlan, diffStale, planCreates, type StaleObject } from "./stale.js";

/**
 * Reads a saved plan. Throws an EdgeplanError that names the file and says how to make a plan when the file cannot
 * be read, is not JSON, or is not an edgeplan plan (format_version 1).
 */
export async function loadSavedPlan(path: string, shownAs = path): Promise<Plan> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const code = (err as { code?: string }).code;
    const why = code === "ENOENT" ? "no such file" : code === "EISDIR" ? "it is a folder" : code === "EACCES" ? "permission denied" : (code ?? "unreadable");
    throw new EdgeplanError(`--plan ${shownAs}: cannot read the saved plan (${why}); make one with: edgeplan plan --out ${shownAs}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new EdgeplanError(`--plan ${shownAs}: the file is not JSON, so it is not a saved plan; make one with: edgeplan plan --out ${shownAs}`);
  }
  const version = json !== null && typeof json === "object" ? (json as { format_version?: unknown }).format_version : undefined;
  if (version === undefined) {
    throw new EdgeplanError(
      `--plan ${shownAs}: the file is not an edgeplan plan (it has no format_version); make one with: edgeplan plan --out ${shownAs}`,
    );
  }
  if (version !== 1) {
    throw new EdgeplanError(
      `--plan ${shownAs}: the plan has format_version ${JSON.stringify(version)}, and this edgeplan reads format_version 1; make the plan again with this version`,
    );
  }
  // A plan saved before plans carried an estimate is read as well: apply estimates a saved plan again anyway.
  const object = json as Record<string, unknown>;
  if (object.estimate === undefined) object.estimate = { requests: 0, writes: 0, reads: 0, seconds: 0, rate_limit: null, concurrency: 1 };
  const parsed = PlanFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    throw new EdgeplanError(
      `--plan ${shownAs}: the file is not an edgeplan plan (${where}${issue?.message ?? "it does not match the plan schema"}); ` +
        `make one with: edgeplan plan --out ${shownAs}`,
    );
  }
  return parsed.data;
}

/**
 * Reads again what the plan touches and returns its stale objects (none: the plan can be applied as it is). Only
 * the touched objects are read (each weighted backend by id, the modules by route), except when the plan creates
 * objects: then the weighted backends are listed once instead, because a create is stale when an object with its
 * owner marker exists by now, and only a listing can tell.
 */
export async function fetchStale(client: ApiClient, plan: Plan): Promise<StaleObject[]> {
  const touched = buildTouchedByPlan(plan);
  let live: LiveState;
  if (planCreates(plan)) {
    const [listed, modules] = await Promise.all([
      client.listWeightedBackends(),
      fetchTouched(client, { weightedBackendIds: [], modules: touched.modules }),
    ]);
    live = { weightedBackends: listed.map(liveWeightedBackend), routes: modules.routes };
  } else {
    live = await fetchTouched(client, touched);
  }
  return diffStale(plan, live);
}
