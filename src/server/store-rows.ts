/**
 * What both stores share: the rows as their tables hold them (JSON columns as text, so that a map keeps its key
 * order), the records made from them, and the checks of the ids given to the ensure* methods.
 */
import { EdgeplanError } from "../model/errors.js";
import { FIXTURE_BACKEND_TYPES, isId, type CircuitBreakerSettings, type FixtureBackendType } from "../model/wire.js";
import type { ChildBackendFields, EdgeRecord, FixtureBackendRecord, RouteRecord, StoredSaml, WeightedBackendRecord } from "./store.js";

export interface WeightedRow {
  id: string;
  created_at: string;
  description: string;
  metadata: string;
  backends: string;
}
export interface FixtureBackendRow {
  id: string;
  type: string;
  created_at: string;
  fields: string;
}
export interface EdgeRow {
  id: string;
  created_at: string;
  description: string;
  metadata: string;
  hostports: string;
}
export interface RouteRow {
  id: string;
  edge_id: string;
  created_at: string;
  match: string;
  match_type: string;
  saml: string | null;
  circuit_breaker: string | null;
}

export const FIXTURE_TYPE_BY_PREFIX = new Map<string, FixtureBackendType>(
  Object.entries(FIXTURE_BACKEND_TYPES).map(([type, prefix]) => [prefix, type as FixtureBackendType]),
);

export function weightedFromRow(row: WeightedRow): WeightedBackendRecord {
  return {
    id: row.id,
    created_at: row.created_at,
    description: row.description,
    metadata: row.metadata,
    backends: JSON.parse(row.backends) as Record<string, number>,
  };
}

export function fixtureBackendFromRow(row: FixtureBackendRow): FixtureBackendRecord {
  return { id: row.id, type: row.type as FixtureBackendType, created_at: row.created_at, fields: JSON.parse(row.fields) as ChildBackendFields };
}

/**
 * The bounds of the ids of one fixture backend type, for a list that walks the primary key: every id of prefix `p`
 * sorts after `p_` and before `p` followed by the character after `_`.
 */
export function fixtureIdRange(type: FixtureBackendType): { low: string; high: string } {
  const prefix = FIXTURE_BACKEND_TYPES[type];
  return { low: `${prefix}_`, high: `${prefix}\`` };
}

export function edgeFromRow(row: EdgeRow): EdgeRecord {
  return {
    id: row.id,
    created_at: row.created_at,
    description: row.description,
    metadata: row.metadata,
    hostports: JSON.parse(row.hostports) as string[],
  };
}

export function routeFromRow(row: RouteRow): RouteRecord {
  return {
    id: row.id,
    edge_id: row.edge_id,
    created_at: row.created_at,
    match: row.match,
    match_type: row.match_type,
    saml: row.saml === null ? null : (JSON.parse(row.saml) as StoredSaml),
    circuit_breaker: row.circuit_breaker === null ? null : (JSON.parse(row.circuit_breaker) as CircuitBreakerSettings),
  };
}

/** The type of a fixture backend id (from its prefix); throws when `id` is not one. */
export function fixtureBackendType(id: string): { type: FixtureBackendType; prefix: string } {
  const prefix = id.slice(0, id.indexOf("_"));
  const type = FIXTURE_TYPE_BY_PREFIX.get(prefix);
  if (!type || !isId(id, [prefix])) {
    throw new EdgeplanError(
      `${id} is not a fixture backend id: expected one of ${[...FIXTURE_TYPE_BY_PREFIX.keys()].map((p) => `${p}_`).join(", ")} followed by 27 base62 characters`,
    );
  }
  return { type, prefix };
}

/** Throws when `id` is given and is not `prefix`_ followed by a KSUID; `what` names the kind ("an HTTPS edge"). */
export function checkId(id: string | undefined, prefix: string, what: string): void {
  if (id !== undefined && !isId(id, [prefix])) {
    throw new EdgeplanError(`${id} is not ${what} id: expected ${prefix}_ followed by 27 base62 characters`);
  }
}

/** `route` when it belongs to `edgeId`; throws when it already belongs to another edge. */
export function routeOfEdge(route: RouteRecord, edgeId: string): RouteRecord {
  if (route.edge_id !== edgeId) {
    throw new EdgeplanError(`route ${route.id} already belongs to edge ${route.edge_id}, not ${edgeId}; a route has one edge`);
  }
  return route;
}
