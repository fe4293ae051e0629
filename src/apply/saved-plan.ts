/**
 * A saved plan (`plan --out FILE`, applied with `apply --plan FILE`): reading it back, bounded in size and nesting
 * and checked against the plan's schema, and reading again only what it touches to tell whether it is stale and
 * whether it agrees with the live side.
 */
import { open, type FileHandle } from "node:fs/promises";
import type { ApiClient } from "../api/client.js";
import { fetchTouched } from "../api/fetch-live.js";
import { liveWeightedBackend } from "../api/live-state.js";
import { EdgeplanError, fileErrorReason } from "../model/errors.js";
import type { Plan, PlanApi } from "../model/plan.js";
import { nestsDeeperThan } from "../model/json-text.js";
import { PlanFileSchema } from "../model/plan-schema.js";
import type { LiveState } from "../model/state.js";
import { buildTouchedByPlan, planCreates } from "./stale.js";
import { defaultMaxDeletes } from "../core/risks.js";
import { isLeaseObject } from "../model/lease.js";
import { isInventoryObject } from "../model/inventory.js";
import { parseLiveMetadata } from "../kinds/weighted-backend.js";

/**
 * Largest saved plan read: far above any plan an account's limits allow in practice (a change of a weighted backend
 * is a few kilobytes), and small enough to read and parse in memory. Checked before the file is read.
 */
export const MAX_SAVED_PLAN_BYTES = 256 * 1024 * 1024;
const READ_CHUNK = 1024 * 1024;

/**
 * Deepest nesting of objects and arrays in a saved plan. A plan needs five levels above a metadata value, and
 * manifests nest at most 64 levels, so what edgeplan writes stays far below; an object whose metadata someone else
 * nested deeper makes its saved plan refused rather than a crash. Checked on the text before it is parsed: the
 * schema's parse recurses several frames per level and overflows the stack at about 1,400 levels.
 */
export const MAX_SAVED_PLAN_DEPTH = 256;

/**
 * Reads a saved plan. Throws an EdgeplanError that names the file and says how to make a plan when the file cannot
 * be read, is larger than MAX_SAVED_PLAN_BYTES, nests deeper than MAX_SAVED_PLAN_DEPTH, is not JSON, or is not an
 * edgeplan plan (format_version 1); messages start with `where` (the flag and file, or the file), and end with
 * `makeOne`, the command that makes a plan where the caller runs. The plan is returned as its schema reads it, not yet checked against itself
 * (`checkPlan`, src/core/plan-check.ts) or the live side.
 */
export async function loadSavedPlan(path: string, shownAs = path, where = `--plan ${shownAs}`, makeOne = `edgeplan plan --out ${shownAs}`): Promise<Plan> {
  const json = parseBounded(await readBounded(path, where, makeOne), where, makeOne);
  const version = json !== null && typeof json === "object" ? (json as { format_version?: unknown }).format_version : undefined;
  if (version === undefined) {
    throw new EdgeplanError(`${where}: the file is not an edgeplan plan (it has no format_version); make one with: ${makeOne}`);
  }
  if (version !== 1) {
    throw new EdgeplanError(
      `${where}: the plan has format_version ${JSON.stringify(version)}, and this edgeplan reads format_version 1; make the plan again with this version`,
    );
  }
  // A plan saved before plans carried an estimate is read as well: apply estimates a saved plan again anyway.
  const object = json as Record<string, unknown>;
  if (object.estimate === undefined) object.estimate = { requests: 0, writes: 0, reads: 0, seconds: 0, rate_limit: null, concurrency: 1 };
  const parsed = PlanFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue && issue.path.length > 0 ? `${issue.path.join(".")}: ` : "";
    throw new EdgeplanError(`${where}: the file is not an edgeplan plan (${field}${issue?.message ?? "it does not match the plan schema"}); ` + `make one with: ${makeOne}`);
  }
  if (parsed.data.api === undefined) {
    throw new EdgeplanError(
      `--plan ${shownAs}: the plan does not say which API and account it was made for (only plan --out records them), so it could be applied to the wrong one; ` +
        `make it with: ${makeOne}`,
    );
  }
  return parsed.data;
}

/**
 * Refuses a saved plan made for another API or account than `current` (the session's), before anything is sent:
 * its ids and `before` values describe that API's objects, and a plan of creates alone would otherwise be carried
 * out in the wrong account. Throws an EdgeplanError naming both; the account is named by the first 12 hex digits of
 * its fingerprint (src/api/account.ts), which say nothing of the key. `again`: the command that makes a plan for
 * this API, into a new file (the reviewed one is kept).
 */
export function checkSavedPlanApi(saved: Plan, current: PlanApi, shownAs: string, again: string): void {
  const made = saved.api;
  if (made === undefined || (made.url === current.url && made.account === current.account)) return;
  const what = made.url !== current.url ? "another API" : "another account (another API key)";
  throw new EdgeplanError(
    `--plan ${shownAs}: the plan was made for ${what}: it was made for ${describeApi(made)}, and this apply talks to ${describeApi(current)}; nothing was sent. ` +
      `Apply it with the --api-url and API key it was made with, or make a plan for this API: ${again}`,
  );
}

/**
 * Refuses a saved plan made in another environment of the project file than `current` (the one chosen now, or null),
 * before anything is sent: a staging plan must never reach production. A plan saved before plans recorded their
 * environment counts as made with none. Throws an EdgeplanError naming both and the command to run (`again`).
 */
export function checkSavedPlanEnvironment(saved: Plan, current: string | null, shownAs: string, again: (env: string) => string): void {
  const made = saved.environment?.name ?? null;
  if (made === current) return;
  const was = made === null ? "with no environment" : `for environment ${made}`;
  const now = current === null ? "no environment is chosen now" : `this apply runs in environment ${current}`;
  const fix = current === null ? `Apply it from the project file that defines environment ${made}` : `Make a plan for ${current}: ${again(current)}`;
  throw new EdgeplanError(`--plan ${shownAs}: the plan was made ${was}, and ${now}; nothing was sent. ${fix}`);
}

/**
 * The options of `apply --plan` with the saved plan's environment as `--env`: apply takes it from the plan, so a
 * staging plan is applied in staging with no flag. Refused, before anything is read or sent, when `--env` or
 * EDGEPLAN_ENV names another one (`again` gives the command that makes a plan for that one). A plan made with no
 * environment, or saved before plans recorded it, leaves the options as they are.
 */
export function withSavedEnvironment<T extends { env?: string }>(
  given: T,
  saved: Plan,
  shownAs: string,
  env: Record<string, string | undefined>,
  again: (env: string) => string,
): T {
  const made = saved.environment?.name;
  if (made === undefined) return given;
  const named = given.env ?? (env.EDGEPLAN_ENV || undefined);
  if (named === undefined || named === made) return { ...given, env: made };
  const source = given.env !== undefined ? "--env" : "EDGEPLAN_ENV";
  throw new EdgeplanError(
    `--plan ${shownAs}: the plan was made for environment ${made}, and ${source} names ${named}; nothing was sent. ` +
      `apply --plan takes the environment from the plan: leave out ${source} to apply it in ${made}, or make a plan for ${named}: ${again(named)}`,
  );
}

function describeApi(api: PlanApi): string {
  return `${api.url} (account ${api.account.slice(0, 12)})`;
}

/**
 * The file's text, refused when it has more than MAX_SAVED_PLAN_BYTES: a file by its size, before it is read; and
 * since a file may grow, and a device or a pipe has no size, read in chunks up to one byte past the limit.
 */
async function readBounded(path: string, where: string, makeOne: string): Promise<string> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, "r");
    const stat = await handle.stat();
    if (stat.isFile() && stat.size > MAX_SAVED_PLAN_BYTES) throw tooLarge(where, makeOne);
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const chunk = Buffer.allocUnsafe(Math.min(READ_CHUNK, MAX_SAVED_PLAN_BYTES + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > MAX_SAVED_PLAN_BYTES) throw tooLarge(where, makeOne);
    }
    return Buffer.concat(chunks, total).toString("utf8");
  } catch (err) {
    if (err instanceof EdgeplanError) throw err;
    const why = fileErrorReason(err);
    throw new EdgeplanError(`${where}: cannot read the saved plan (${why}); make one with: ${makeOne}`);
  } finally {
    await handle?.close();
  }
}

function tooLarge(where: string, makeOne: string): EdgeplanError {
  return new EdgeplanError(`${where}: the file has more than ${MAX_SAVED_PLAN_BYTES} bytes, more than any saved plan; make one with: ${makeOne}`);
}

/** The parsed JSON of the text, refused before parsing when it nests deeper than MAX_SAVED_PLAN_DEPTH. */
function parseBounded(text: string, where: string, makeOne: string): unknown {
  if (nestsDeeperThan(text, MAX_SAVED_PLAN_DEPTH)) {
    throw new EdgeplanError(
      `${where}: the file nests objects and arrays more than ${MAX_SAVED_PLAN_DEPTH} levels deep, more than a saved plan may have; make one with: ${makeOne}`,
    );
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new EdgeplanError(`${where}: the file is not JSON, so it is not a saved plan; make one with: ${makeOne}`);
  }
}

/** The live side a saved plan is checked against, and how many objects its stack has (when they were counted). */
export interface SavedPlanLive {
  live: LiveState;
  /** The stack's objects (weighted backends with its marker, and the modules the plan changes); 0 when not listed. */
  stackObjects: number;
}

/**
 * Reads again what the plan touches, for the staleness check (`diffStale`) and the checks against the live side
 * (`checkPlanAgainstLive`). Only the touched objects are read (each weighted backend by id, the modules by route),
 * except when the plan creates objects, or deletes more than the smallest `--max-deletes` default: then the weighted
 * backends are listed once instead, because a create is stale when an object with its owner marker exists by now,
 * and the default that decides `mass-delete` follows the stack's size; only a listing can tell either.
 */
export async function fetchSavedPlanLive(client: ApiClient, plan: Plan): Promise<SavedPlanLive> {
  const touched = buildTouchedByPlan(plan);
  const deletes = plan.changes.filter((c) => c.action === "delete").length;
  if (!planCreates(plan) && deletes <= defaultMaxDeletes(0)) return { live: await fetchTouched(client, touched), stackObjects: 0 };
  const [listed, modules] = await Promise.all([client.listWeightedBackends(), fetchTouched(client, { weightedBackendIds: [], modules: touched.modules })]);
  const weightedBackends = listed.map(liveWeightedBackend);
  const owned = weightedBackends.filter((wb) => !isLeaseObject(wb) && !isInventoryObject(wb) && parseLiveMetadata(wb.metadata).marker?.stack === plan.stack).length;
  const moduleChanges = plan.changes.filter((c) => c.kind !== "weighted_backend").length;
  return { live: { weightedBackends, routes: modules.routes }, stackObjects: owned + moduleChanges };
}
