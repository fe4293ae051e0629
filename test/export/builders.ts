/** Small builders of live objects for the export tests. */
import type { ExportRouteInput, ExportWeightedBackendInput } from "../../src/export/build-export.js";
import type { CircuitBreakerModule, SamlModule } from "../../src/model/wire.js";

/** A well-formed id whose order follows `n` (ids sort in creation order). */
export function id(prefix: string, n: number): string {
  return `${prefix}_${String(n).padStart(27, "0")}`;
}
export const wbId = (n: number): string => id("bkdwd", n);
export const hrId = (n: number): string => id("bkdhr", n);
export const edgeId = (n: number): string => id("edghts", n);
export const routeId = (n: number): string => id("edghtsrt", n);

/** Metadata text carrying an owner marker (and the user's keys). */
export function marked(stack: string, name: string, user: Record<string, unknown> = {}, protect = false): string {
  return JSON.stringify({ ...user, edgeplan: protect ? { stack, name, protect: true } : { stack, name } });
}

export function wb(n: number, fields: Partial<Omit<ExportWeightedBackendInput, "id">> = {}): ExportWeightedBackendInput {
  return { id: wbId(n), description: fields.description ?? "", metadata: fields.metadata ?? "", backends: fields.backends ?? { [hrId(1)]: 100 } };
}

/** The smallest IdP metadata the loader accepts, with a CRLF and a trailing newline so that byte-exactness shows. */
export const IDP_XML =
  '<?xml version="1.0"?>\r\n<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com">' +
  '<IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">' +
  '<SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example.com/sso"/>' +
  "</IDPSSODescriptor></EntityDescriptor>\n";

export function saml(route: string, fields: Partial<SamlModule> = {}): SamlModule {
  return {
    enabled: true,
    options_passthrough: false,
    cookie_prefix: "",
    inactivity_timeout: 0,
    maximum_duration: 0,
    idp_metadata: IDP_XML,
    force_authn: false,
    allow_idp_initiated: true,
    authorized_groups: [],
    nameid_format: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
    entity_id: `https://idp.edgeplan.localhost/saml/${route}`,
    assertion_consumer_service_url: `https://idp.edgeplan.localhost/saml/${route}/acs`,
    single_logout_url: `https://idp.edgeplan.localhost/saml/${route}/slo`,
    request_signing_certificate_pem: "",
    metadata_url: `https://idp.edgeplan.localhost/saml/${route}`,
    idp_metadata_url: "",
    ...fields,
  };
}

export function cb(fields: Partial<CircuitBreakerModule> = {}): CircuitBreakerModule {
  return { enabled: true, tripped_duration: 120, rolling_window: 300, num_buckets: 5, volume_threshold: 20, error_threshold_percentage: 0.2, ...fields };
}

export function route(edge: number, r: number, modules: Partial<Pick<ExportRouteInput, "saml" | "circuit_breaker">> = {}): ExportRouteInput {
  return { edge: edgeId(edge), route: routeId(r), saml: modules.saml ?? null, circuit_breaker: modules.circuit_breaker ?? null };
}
