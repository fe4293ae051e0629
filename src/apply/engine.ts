/**
 * The engine of `apply`: runs a plan's changes against the API, as many at once as `concurrency` allows, each one
 * as soon as the changes it depends on are done (./schedule.ts decides which). Each change's planned request is
 * sent as it stands (`client.send`), with references by name resolved to the ids the creates answered; a failure stops only what depends on it; an aborted signal lets the requests in
 * flight finish and starts nothing new. A create whose answer was lost is never sent twice blindly: the engine
 * lists the weighted backends for the owner marker first (./create.ts).
 */
import { buildHaltMark, isPauseStep } from "../core/rollout.js";
import { answeredWeightedBackend, type ApiClient } from "../api/client.js";
import { resolveWeightedBackendRequest } from "../kinds/weighted-backend.js";
import { NoAnswerError } from "../api/errors.js";
import { ApiError, InternalError } from "../model/errors.js";
import type { Change, WeightedBackendChange } from "../model/plan.js";
import { applyCreate, findInventory, holdsBody, inventoriesRecording, objectsByMarker } from "./create.js";
import { weightedBackendPath } from "../model/paths.js";
import type { WeightedBackend } from "../model/wire.js";
import type { ApplyOutcome, ChangeResult } from "../model/apply-report.js";
import { ApplySchedule } from "./schedule.js";

export interface ApplyOptions {
  /** The stack of the plan: the owner marker a lost create is looked for by. */
  stack: string;
  /** Changes in flight at once (the client bounds its requests on its own as well). */
  concurrency: number;
  /** When aborted: no new change starts, the ones in flight finish. */
  signal?: AbortSignal;
  /** One line per event (`weighted_backend.checkout: created bkdwd_... (120 ms)`), without a newline. */
  onProgress?: (line: string) => void;
  /** Called as each change ends: done, failed, or skipped because a change it depends on failed. */
  onResult?: (result: ChangeResult) => void;
  /**
   * Awaited before new changes start (the stack lease's check, `HeldLease.confirm`); the signal is read again after
   * it, so a check that finds the lease gone starts nothing.
   */
  beforeStart?: () => Promise<void>;
  /** POSTs of one create at most, each sent only after a listing showed the previous one did not happen (default 4). */
  createAttempts?: number;
}

const DEFAULT_CREATE_ATTEMPTS = 4;

/** The id of the object a change writes, when it has one before the run (weighted backends, inventory objects). */
function objectId(change: Change): string | null {
  return change.kind === "weighted_backend" || change.kind === "inventory" ? change.id : null;
}

/** Past tense of a done change, for progress lines and the report. */
export function doneVerb(change: Change): string {
  if (change.kind === "inventory") return change.action === "create" ? "created" : change.action === "delete" ? "deleted" : "updated";
  if (change.kind !== "weighted_backend") return change.action === "delete" ? "deleted" : change.before === null ? "set" : "replaced";
  switch (change.action) {
    case "create":
      return "created";
    case "update":
      return "updated";
    case "delete":
      return "deleted";
    case "adopt":
      return "adopted";
    case "takeover":
      return "taken over";
    case "rename":
      return `renamed from "${change.previous_owner?.name ?? ""}"`;
    case "rollout":
      return rolloutVerb(change);
  }
}

function rolloutVerb(change: WeightedBackendChange): string {
  const r = change.rollout;
  if (r?.phase === "step") {
    const shares = change.weights
      .filter((w) => w.after !== null)
      .map((w) => `${w.share_after}%`)
      .join("/");
    const next = r.next_due_at === null ? "" : isPauseStep(r, r.step + 1, r.steps) ? `; then pause step ${r.step + 1} of ${r.steps}` : `; next step due at ${r.next_due_at}`;
    return `rollout step ${r.step} of ${r.steps} written (${shares}${next})`;
  }
  if (r?.phase === "confirm") return `rollout finished: ${r.analysis ? (r.check ? "the check and the analysis passed" : "the analysis passed") : "the check passed"}`;
  if (r?.phase === "halt") return "rollout halted: the weights it started from are written back";
  if (r?.phase === "pause") return "rollout paused: no step taken, nothing rolled back";
  return "returned to the weights the rollout started from";
}

/**
 * Applies the plan's changes and resolves with what happened to each; it never rejects for a failed change (that
 * is a `failed` result). It rejects only with InternalError, for a plan whose dependencies form a cycle or name a change it lacks.
 */
export async function applyPlan(changes: readonly Change[], client: ApiClient, options: ApplyOptions): Promise<ApplyOutcome> {
  const schedule = new ApplySchedule(changes);
  const concurrency = Math.max(1, Math.floor(options.concurrency));
  const progress = options.onProgress ?? (() => undefined);
  const createdIds = new Map<string, string>();
  const results = new Map<string, ChangeResult>();
  const record = (result: ChangeResult): void => {
    results.set(result.address, result);
    options.onResult?.(result);
  };
  const inFlight = new Set<Promise<void>>();
  const aborted = (): boolean => options.signal?.aborted === true;
  const resent: Resent[] = [];

  const run = async (change: Change): Promise<void> => {
    const started = performance.now();
    try {
      const id = await applyChange(change, client, createdIds, options, { progress, resent });
      const ms = Math.round(performance.now() - started);
      if (change.kind !== "saml" && change.kind !== "circuit_breaker" && change.action === "create") createdIds.set(change.address, id as string);
      schedule.succeed(change.address);
      const message = `${doneVerb(change)}${id !== null ? ` ${id}` : ""}`;
      progress(`${change.address}: ${message} (${ms} ms)`);
      record({ ...base(change), status: "done", id, ms, message });
    } catch (err) {
      const ms = Math.round(performance.now() - started);
      const message = failureMessage(change, err);
      const skipped = schedule.fail(change.address);
      const result: ChangeResult = { ...base(change), status: "failed", id: objectId(change), ms, message };
      if (err instanceof ApiError) result.error = err;
      progress(`${change.address}: failed after ${ms} ms: ${message}`);
      record(result);
      for (const address of skipped) {
        const message = `depends on ${change.address}, which failed`;
        const c = schedule.change(address);
        progress(`${address}: skipped: depends on ${change.address}, which failed`);
        record({ ...base(c), status: "skipped", id: objectId(c), ms: null, message });
      }
    }
  };

  for (;;) {
    if (options.beforeStart && !aborted() && inFlight.size < concurrency && schedule.ready().length > 0) await options.beforeStart();
    if (!aborted()) {
      for (const address of schedule.ready()) {
        if (inFlight.size >= concurrency) break;
        schedule.start(address);
        const task: Promise<void> = run(schedule.change(address)).finally(() => inFlight.delete(task));
        inFlight.add(task);
      }
    }
    if (inFlight.size === 0) break;
    await Promise.race(inFlight);
  }

  // Its DELETEs are writes: checked under the lease as a change's are, and none once the run is stopping.
  if (resent.length > 0 && !aborted()) await options.beforeStart?.();
  if (!aborted()) await removeLateTwins(client, resent, progress);
  const cancelled = schedule.cancel();
  for (const address of cancelled) {
    const c = schedule.change(address);
    const message = aborted() ? "the run was interrupted before it started" : "a change it depends on did not finish";
    results.set(address, { ...base(c), status: "not_started", id: objectId(c), ms: null, message });
  }

  const ordered = changes.map((c) => results.get(c.address) as ChangeResult);
  const counts = { done: 0, failed: 0, skipped: 0, not_started: 0 };
  for (const r of ordered) counts[r.status]++;
  return { results: ordered, createdIds: Object.fromEntries(createdIds), interrupted: cancelled.length > 0 && aborted(), counts };
}

function base(change: Change): Pick<ChangeResult, "address" | "kind" | "action"> {
  return { address: change.address, kind: change.kind, action: change.action };
}

/**
 * Sends one change's planned request as it stands; the only thing filled in is the id of an object created earlier
 * in this run where the change's `refs` name it. A create goes through `applyCreate`, which never sends a POST
 * twice blindly. Resolves with the object's id (null for a module).
 */
async function applyChange(
  change: Change,
  client: ApiClient,
  createdIds: ReadonlyMap<string, string>,
  options: ApplyOptions,
  run: { progress: (line: string) => void; resent: Resent[] },
): Promise<string | null> {
  const { progress } = run;
  if (change.kind === "inventory") {
    if (change.action !== "create") {
      await client.send(change.request);
      return change.id;
    }
    // A create whose answer was lost is found by the entries it records before anything is sent again.
    const created = await applyCreate(client, change.request, {
      stack: change.stack,
      name: "",
      address: change.address,
      attempts: options.createAttempts ?? DEFAULT_CREATE_ATTEMPTS,
      progress,
      find: (backends) => findInventory(backends, change.stack, change.after),
      resent: (keepId) => run.resent.push({ address: change.address, keepId, twins: (backends) => inventoriesRecording(backends, change.stack, change.after) }),
    });
    return created.id;
  }
  if (change.kind !== "weighted_backend") {
    await client.send(change.request);
    return null;
  }
  const request = resolveWeightedBackendRequest(change, createdIds);
  // A halt is recorded before its rollback is written, so that a rollback that fails is retried by the next run.
  const mark = buildHaltMark(change);
  if (mark !== null) await client.send(mark);
  if (change.action === "create") {
    const created = await applyCreate(client, request, {
      stack: options.stack,
      name: change.name,
      address: change.address,
      attempts: options.createAttempts ?? DEFAULT_CREATE_ATTEMPTS,
      progress,
      resent: (keepId) =>
        run.resent.push({
          address: change.address,
          keepId,
          twins: (backends) => objectsByMarker(backends, options.stack, change.name).filter((wb) => request.body !== null && holdsBody(wb, request.body)),
        }),
    });
    return created.id;
  }
  const sent = await client.send(request);
  if (change.action === "delete") return liveId(change);
  return answeredWeightedBackend(sent, request).id;
}

/** A create sent more than once: the object kept, and how to find its copies (the same create, committed late). */
interface Resent {
  address: string;
  keepId: string;
  twins: (backends: readonly WeightedBackend[]) => WeightedBackend[];
}

/**
 * Deletes the copies of creates sent more than once: a POST whose answer was lost, held by a slow server, committed
 * after the listing that decided to send it again. One listing for all of them, at the end of the run; a copy that
 * commits later still is an orphan of the stack in the next plan.
 */
async function removeLateTwins(client: ApiClient, resent: readonly Resent[], progress: (line: string) => void): Promise<void> {
  if (resent.length === 0) return;
  const why = (err: unknown): string => (err instanceof Error ? err.message : String(err));
  let backends: WeightedBackend[];
  try {
    backends = await client.listWeightedBackends();
  } catch (err) {
    progress(`could not look for creates sent twice that committed late (${why(err)}); the next plan shows any as an orphan of the stack`);
    return;
  }
  for (const r of resent) {
    for (const twin of r.twins(backends).filter((wb) => wb.id !== r.keepId)) {
      const copy = `${twin.id} is a second copy (a create sent again after its answer was lost committed late)`;
      try {
        await client.send({ method: "DELETE", path: weightedBackendPath(twin.id), body: null });
        progress(`${r.address}: ${copy}: deleted it`);
      } catch (err) {
        progress(`${r.address}: ${copy}: could not delete it (${why(err)}); the next plan shows it as an orphan of the stack`);
      }
    }
  }
}

function liveId(change: WeightedBackendChange): string {
  if (change.id === null) throw new InternalError(`${change.address}: the plan holds no live id for this ${change.action}`);
  return change.id;
}

/**
 * The message of a failed change. A 400 on a write names the manifest position that declares the object first
 * (`manifests/checkout.yaml:3:1: POST /backends/weighted: 400 ERR_NGROK_6501: ...`), so the user sees which
 * manifest caused it. A request that got no answer says only that: when the API is gone, every change in flight
 * fails the same way, and the cause is printed once for the run (src/commands/apply.ts).
 */
export function failureMessage(change: Change, err: unknown): string {
  if (err instanceof NoAnswerError) return `${err.method} ${err.path}: ${err.notSent ? "not sent: the API had stopped answering" : "no answer from the API"}`;
  const text = err instanceof Error ? err.message : String(err);
  if (err instanceof ApiError && err.status === 400 && change.source) return `${change.source}: ${text}`;
  return text;
}
