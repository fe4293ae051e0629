/**
 * The API's paths (docs/api.md), written once for the client, the plan's requests and the server's URIs. Ids come
 * from manifests and flags, so every id is one encoded path segment, never trusted as it is. Pure.
 */
import type { ModuleKind } from "./plan.js";
import { CHILD_BACKEND_KINDS, type FixtureBackendType } from "./wire.js";

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

/** `/backends/<kind>`: the list of one child backend type (`/backends/static` for static address backends). */
export function childBackendsPath(type: FixtureBackendType): string {
  return `/backends/${CHILD_BACKEND_KINDS[type].path}`;
}

/** `/backends/<kind>/<id>`. */
export function childBackendPath(type: FixtureBackendType, id: string): string {
  return `${childBackendsPath(type)}/${seg(id)}`;
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

/** What a write's path names: the collection of weighted backends, one of them, or a module of a route. */
export type WriteTarget = { kind: "weighted_backends" } | { kind: "weighted_backend"; id: string } | { kind: ModuleKind; edge: string; route: string };

const WEIGHTED_BACKEND_PATH = /^\/backends\/weighted\/([^/?#]+)$/;
const MODULE_PATH = /^\/edges\/https\/([^/?#]+)\/routes\/([^/?#]+)\/(saml|circuit_breaker)$/;

function decodeSeg(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

/**
 * The target of a write path as the plan's requests write them (`weightedBackendPath`, `modulePath`), or null for
 * any other path. Only the canonical spelling is accepted (ids encoded exactly as this module encodes them), so a
 * path read from a saved plan names one object and nothing else.
 */
export function parseWritePath(path: string): WriteTarget | null {
  if (path === WEIGHTED_BACKENDS_PATH) return { kind: "weighted_backends" };
  const wb = WEIGHTED_BACKEND_PATH.exec(path);
  if (wb) {
    const id = decodeSeg(wb[1] as string);
    return id !== null && id !== "" && weightedBackendPath(id) === path ? { kind: "weighted_backend", id } : null;
  }
  const m = MODULE_PATH.exec(path);
  if (!m) return null;
  const edge = decodeSeg(m[1] as string);
  const route = decodeSeg(m[2] as string);
  const kind = m[3] as ModuleKind;
  if (edge === null || route === null || edge === "" || route === "" || modulePath(edge, route, kind) !== path) return null;
  return { kind, edge, route };
}
