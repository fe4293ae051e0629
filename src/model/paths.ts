/**
 * The API's paths (docs/api.md), written once for the client, the plan's requests and the server's URIs. Ids come
 * from manifests and flags, so every id is one encoded path segment, never trusted as it is. Pure.
 */
import type { ModuleKind } from "./plan.js";

export const WEIGHTED_BACKENDS_PATH = "/backends/weighted";
export const EDGES_PATH = "/edges/https";

/** One path segment. */
function seg(id: string): string {
  return encodeURIComponent(id);
}

/** `/backends/weighted/<id>`. */
export function weightedBackendPath(id: string): string {
  return `${WEIGHTED_BACKENDS_PATH}/${seg(id)}`;
}

/** `/edges/https/<edge>`. */
export function edgePath(edge: string): string {
  return `${EDGES_PATH}/${seg(edge)}`;
}

/** `/edges/https/<edge>/routes/<route>`. */
export function routePath(edge: string, route: string): string {
  return `${edgePath(edge)}/routes/${seg(route)}`;
}

/** `/edges/https/<edge>/routes/<route>/<module>`. */
export function modulePath(edge: string, route: string, kind: ModuleKind): string {
  return `${routePath(edge, route)}/${kind}`;
}
