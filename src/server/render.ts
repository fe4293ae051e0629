/**
 * Stored records as the wire objects of docs/api.md, with fields in the documented order and every `uri` built from
 * the server's base URL (never from the request's Host header).
 */
import { childBackendPath } from "../model/paths.js";
import { CHILD_BACKEND_DEFAULTS, CHILD_BACKEND_FIELDS, CIRCUIT_BREAKER_FIELDS, pickFields, SAML_FIELDS } from "../model/wire.js";
import type { ChildBackend, CircuitBreakerModule, HttpsEdge, HttpsRoute, SamlModule, WeightedBackend } from "../model/wire.js";
import type { EdgeRecord, FixtureBackendRecord, RouteRecord, StoredSaml, WeightedBackendRecord } from "./store.js";

export function weightedBackendUri(baseUrl: string, id: string): string {
  return `${baseUrl}/backends/weighted/${id}`;
}

export function renderWeightedBackend(baseUrl: string, r: WeightedBackendRecord): WeightedBackend {
  return {
    id: r.id,
    uri: weightedBackendUri(baseUrl, r.id),
    created_at: r.created_at,
    description: r.description,
    metadata: r.metadata,
    backends: r.backends,
  };
}

/**
 * A child backend as its type's get and list answer it: the fields its fixture gave, the others empty
 * (`CHILD_BACKEND_DEFAULTS`); a tunnel group has no tunnels, none connecting to this server.
 */
export function renderChildBackend(baseUrl: string, r: FixtureBackendRecord): ChildBackend {
  const values: Record<string, unknown> = { ...CHILD_BACKEND_DEFAULTS[r.type], tunnels: [], ...r.fields };
  const body: Record<string, unknown> = { id: r.id, uri: `${baseUrl}${childBackendPath(r.type, r.id)}`, created_at: r.created_at };
  for (const field of CHILD_BACKEND_FIELDS[r.type]) body[field] = values[field];
  return body as ChildBackend;
}

/** The generated service-provider URLs of a route's SAML module. */
export function samlUrls(spBase: string, routeId: string): { entityId: string; acs: string; slo: string } {
  const entityId = `${spBase}/saml/${routeId}`;
  return { entityId, acs: `${entityId}/acs`, slo: `${entityId}/slo` };
}

export function renderSaml(spBase: string, routeId: string, s: StoredSaml): SamlModule {
  const urls = samlUrls(spBase, routeId);
  return {
    ...pickFields(s, SAML_FIELDS),
    entity_id: urls.entityId,
    assertion_consumer_service_url: urls.acs,
    single_logout_url: urls.slo,
    request_signing_certificate_pem: s.certificate_pem,
    metadata_url: urls.entityId,
    idp_metadata_url: "",
  };
}

export function renderCircuitBreaker(cb: CircuitBreakerModule): CircuitBreakerModule {
  return pickFields(cb, CIRCUIT_BREAKER_FIELDS);
}

export function routeUri(baseUrl: string, edgeId: string, routeId: string): string {
  return `${baseUrl}/edges/https/${edgeId}/routes/${routeId}`;
}

export function renderRoute(baseUrl: string, spBase: string, r: RouteRecord): HttpsRoute {
  return {
    id: r.id,
    edge_id: r.edge_id,
    uri: routeUri(baseUrl, r.edge_id, r.id),
    created_at: r.created_at,
    match: r.match,
    match_type: r.match_type,
    saml: r.saml ? renderSaml(spBase, r.id, r.saml) : null,
    circuit_breaker: r.circuit_breaker ? renderCircuitBreaker(r.circuit_breaker) : null,
  };
}

export function renderEdge(baseUrl: string, spBase: string, e: EdgeRecord, routes: RouteRecord[]): HttpsEdge {
  return {
    id: e.id,
    uri: `${baseUrl}/edges/https/${e.id}`,
    created_at: e.created_at,
    description: e.description,
    metadata: e.metadata,
    hostports: e.hostports,
    routes: routes.map((r) => renderRoute(baseUrl, spBase, r)),
  };
}
