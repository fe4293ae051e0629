/**
 * A create that happens exactly once. The client never resends a POST whose outcome is unknown (the connection
 * dropped after the request left, or a 5xx): it throws OutcomeUnknownError. Then the weighted backends are listed
 * and searched for the owner marker `{stack, name}` the body carries:
 * - found: the create happened; its id is taken (and when its body differs from what was meant, one PATCH of it
 *   with the planned body sets it right);
 * - not found: the create did not happen by the time of the listing, so it is sent once more.
 * A POST whose answer was lost may still be held by a slow server and commit after that listing: when more than one
 * POST went out, the caller is told the id kept (`resent`), and the engine deletes a late twin at the end of the run.
 */
import { jsonEqual as equal } from "../model/json-equal.js";
import { answeredWeightedBackend, type ApiClient, type WeightedBackendBody } from "../api/client.js";
import { NoAnswerError, OutcomeUnknownError } from "../api/errors.js";
import { parseLiveMetadata, sortedBackends } from "../kinds/weighted-backend.js";
import { InternalError } from "../model/errors.js";
import { weightedBackendPath } from "../model/paths.js";
import type { InventoryChange, WeightedBackendChange } from "../model/plan.js";
import { parseInventory } from "../model/inventory.js";
import type { WeightedBackend } from "../model/wire.js";

export interface CreateTarget {
  /** The owner marker the body carries. */
  stack: string;
  name: string;
  /** For progress lines. */
  address: string;
  /** POSTs at most (at least 1). */
  attempts: number;
  progress: (line: string) => void;
  /**
   * Finds the object the create made among the listed ones, or null; default: the one carrying `{stack, name}`
   * (an inventory object has no name: it is found by the entries its body records).
   */
  find?: (backends: readonly WeightedBackend[]) => WeightedBackend | null;
  /** Told the id kept when more than one POST went out: an earlier one, unanswered, may still commit as a twin. */
  resent?: (id: string) => void;
}

/**
 * The live object that carries the owner marker `{stack, name}`, or null. With several (left by an older tool or
 * by hand), the oldest, as the plan matches it.
 */
export function findByMarker(backends: readonly WeightedBackend[], stack: string, name: string): WeightedBackend | null {
  return objectsByMarker(backends, stack, name)[0] ?? null;
}

/** Every live object that carries the owner marker `{stack, name}`, oldest (smallest id) first. */
export function objectsByMarker(backends: readonly WeightedBackend[], stack: string, name: string): WeightedBackend[] {
  return backends
    .filter((wb) => {
      const marker = parseLiveMetadata(wb.metadata).marker;
      return marker?.stack === stack && marker.name === name;
    })
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** True when the live object holds what `body` asks for (metadata compared as parsed JSON). */
export function holdsBody(wb: WeightedBackend, body: WeightedBackendBody): boolean {
  return (
    wb.description === body.description &&
    equal(parseLiveMetadata(wb.metadata).value, parseLiveMetadata(body.metadata).value) &&
    equal(sortedBackends(wb.backends), sortedBackends(body.backends))
  );
}

/**
 * Sends the create `request` (a POST with its full body) once. Resolves with the object (created, or found by its
 * marker after a lost answer). Rejects with the ApiError of a refused create, or with an OutcomeUnknownError when
 * the outcome is still unknown after `attempts` POSTs or the listing that would tell failed.
 */
export async function applyCreate(client: ApiClient, request: WeightedBackendChange["request"] | InventoryChange["request"], target: CreateTarget): Promise<WeightedBackend> {
  const body = request.body;
  if (request.method !== "POST" || body === null) throw new InternalError(`${target.address}: a create is a POST with a body`);
  const attempts = Math.max(1, target.attempts);
  let lost: OutcomeUnknownError | undefined;
  // More than one POST sent: an unanswered one may still commit later.
  const kept = (wb: WeightedBackend, attempt: number): WeightedBackend => {
    if (attempt > 1) target.resent?.(wb.id);
    return wb;
  };
  for (let attempt = 1; attempt <= attempts; attempt++) {
    try {
      return kept(answeredWeightedBackend(await client.send(request), request), attempt);
    } catch (err) {
      if (!(err instanceof OutcomeUnknownError)) throw err;
      lost = err;
    }
    target.progress(`${target.address}: the answer to the create was lost: ${lost.reason}; looking for its owner marker before sending anything again`);
    let backends: WeightedBackend[];
    try {
      backends = await client.listWeightedBackends();
    } catch (err) {
      // When the API is gone, its cause is printed once for the run, not in every create's message.
      const why = err instanceof NoAnswerError ? "the API did not answer" : err instanceof Error ? err.message : String(err);
      throw new OutcomeUnknownError(lost.method, lost.path, lost.status, lost.errorCode, `${lost.reason}; listing to find it failed too (${why})`, lost.operationId, {
        cause: err,
      });
    }
    const found = target.find ? target.find(backends) : findByMarker(backends, target.stack, target.name);
    if (found) {
      if (holdsBody(found, body)) {
        target.progress(`${target.address}: found ${found.id} by its owner marker: the create had happened`);
        return kept(found, attempt);
      }
      target.progress(`${target.address}: found ${found.id} by its owner marker, with another body: updating it with the full body`);
      const update = { method: "PATCH" as const, path: weightedBackendPath(found.id), body };
      return kept(answeredWeightedBackend(await client.send(update), update), attempt);
    }
    if (attempt < attempts) target.progress(`${target.address}: no object carries its owner marker, so the create did not happen: sending it again`);
  }
  const last = lost as OutcomeUnknownError;
  throw new OutcomeUnknownError(
    last.method,
    last.path,
    last.status,
    last.errorCode,
    `${last.reason}; after ${attempts} attempts no object carries the owner marker; run apply again`,
    last.operationId,
  );
}

/** The inventory object of `stack` that records exactly `entries` (the one a lost create made), or null. */
export function findInventory(backends: readonly WeightedBackend[], stack: string, entries: unknown): WeightedBackend | null {
  return inventoriesRecording(backends, stack, entries)[0] ?? null;
}

/** Every inventory object of `stack` that records exactly `entries`. */
export function inventoriesRecording(backends: readonly WeightedBackend[], stack: string, entries: unknown): WeightedBackend[] {
  return backends.filter((wb) => {
    const inventory = parseInventory(wb);
    return inventory !== null && inventory.stack === stack && equal(inventory.entries, entries);
  });
}
