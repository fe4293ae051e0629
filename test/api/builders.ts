/** Small builders of desired state and module settings for the client tests. */
import type { DesiredEdgeRoute, DesiredState, ModuleIntent } from "../../src/model/state.js";
import type { CircuitBreakerSettings, SamlSettings } from "../../src/model/wire.js";
import { SAML_DEFAULTS } from "../../src/model/wire.js";

const pos = { file: "manifests/routes.yaml", line: 1, col: 1 };

export const CB: CircuitBreakerSettings = {
  enabled: true,
  tripped_duration: 120,
  rolling_window: 300,
  num_buckets: 5,
  volume_threshold: 20,
  error_threshold_percentage: 0.2,
};

/** IdP metadata the server accepts: an EntityDescriptor with an IDPSSODescriptor. */
export const IDP_METADATA =
  '<?xml version="1.0"?>\n<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com">' +
  '<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">' +
  '<md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.example.com/sso"/>' +
  "</md:IDPSSODescriptor></md:EntityDescriptor>\n";

export const SAML: SamlSettings = { ...SAML_DEFAULTS, idp_metadata: IDP_METADATA, authorized_groups: ["engineering"] };

type Intent = "unmanaged" | "absent" | "present";

function intent<T>(state: Intent, settings: T): ModuleIntent<T> {
  if (state === "unmanaged") return { state };
  if (state === "absent") return { state, source: pos };
  return { state, settings, source: pos };
}

export function edgeRoute(edge: string, route: string, saml: Intent, cb: Intent): DesiredEdgeRoute {
  return { kind: "EdgeRoute", edge, route, saml: intent(saml, SAML), circuit_breaker: intent(cb, CB), source: pos };
}

export function desired(edgeRoutes: DesiredEdgeRoute[]): DesiredState {
  return { weightedBackends: [], edgeRoutes };
}
