/**
 * Planned requests for tests that write through `client.send`, built with the same path functions as a plan's
 * requests, and the answers they expect.
 */
import { answeredWeightedBackend, type ApiClient, type ModuleOf, type WeightedBackendBody, type WriteRequest } from "../../src/api/client.js";
import { modulePath, WEIGHTED_BACKENDS_PATH, weightedBackendPath } from "../../src/model/paths.js";
import type { ModuleKind, ModuleSettings } from "../../src/model/plan.js";
import type { WeightedBackend } from "../../src/model/wire.js";

export const postWb = (body: WeightedBackendBody): WriteRequest => ({ method: "POST", path: WEIGHTED_BACKENDS_PATH, body });
export const patchWb = (id: string, body: WeightedBackendBody): WriteRequest => ({ method: "PATCH", path: weightedBackendPath(id), body });
export const deleteWb = (id: string): WriteRequest => ({ method: "DELETE", path: weightedBackendPath(id), body: null });

export const putModule = (edge: string, route: string, kind: ModuleKind, settings: object): WriteRequest => ({
  method: "PUT",
  path: modulePath(edge, route, kind),
  body: settings as ModuleSettings,
});
export const deleteModule = (edge: string, route: string, kind: ModuleKind): WriteRequest => ({ method: "DELETE", path: modulePath(edge, route, kind), body: null });

/** Sends a POST or PATCH of a weighted backend and resolves with the object answered. */
export async function sendWb(client: ApiClient, request: WriteRequest): Promise<WeightedBackend> {
  return answeredWeightedBackend(await client.send(request), request);
}

/** Sends a module's PUT and resolves with the module answered. */
export async function sendModule<K extends ModuleKind>(client: ApiClient, request: WriteRequest, kind: K): Promise<ModuleOf[K]> {
  const sent = await client.send(request);
  if (sent.kind !== kind || sent.object === null) throw new Error(`${request.method} ${request.path}: expected a ${kind} module in the answer`);
  return sent.object as ModuleOf[K];
}
