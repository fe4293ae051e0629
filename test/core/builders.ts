/** Small builders of desired and live objects for the plan's unit tests. */
import { buildInventoryBody } from "../../src/model/inventory.js";
import { liveRoute, liveWeightedBackend } from "../../src/api/live-state.js";
import { buildPlan, DEFAULT_MAX_SHIFT, type PlanOptions } from "../../src/core/plan.js";
import type { Plan, WeightedBackendChange, ModuleChange } from "../../src/model/plan.js";
import type { DesiredEdgeRoute, DesiredState, DesiredWeightedBackend, LiveRoute, LiveState, LiveWeightedBackend, ModuleIntent, SourcePos } from "../../src/model/state.js";
import type { CircuitBreakerSettings, SamlModule, SamlSettings } from "../../src/model/wire.js";

/** A well-formed id whose order follows `n` (ids sort in creation order). */
export function id(prefix: string, n: number): string {
  return `${prefix}_${String(n).padStart(27, "0")}`;
}
export const wbId = (n: number): string => id("bkdwd", n);
export const hrId = (n: number): string => id("bkdhr", n);
export const EDGE = id("edghts", 1);
export const ROUTE = id("edghtsrt", 1);

export function pos(line: number, file = "manifests/main.yaml", col = 1): SourcePos {
  return { file, line, col };
}

export function desiredWb(name: string, fields: Partial<Omit<DesiredWeightedBackend, "kind" | "name">> = {}): DesiredWeightedBackend {
  return {
    kind: "WeightedBackend",
    name,
    description: fields.description ?? "",
    metadata: fields.metadata ?? {},
    backends: fields.backends ?? { [hrId(1)]: 100 },
    protect: fields.protect ?? false,
    source: fields.source ?? pos(1),
    ...(fields.id !== undefined ? { id: fields.id } : {}),
    ...(fields.fieldSources !== undefined ? { fieldSources: fields.fieldSources } : {}),
    ...(fields.ignoreChanges !== undefined ? { ignoreChanges: fields.ignoreChanges } : {}),
  };
}

/** The metadata text edgeplan writes: the user's mapping plus the marker. */
export function markerMetadata(stack: string, name: string, user: Record<string, unknown> = {}, protect = false): string {
  return JSON.stringify({ ...user, edgeplan: protect ? { stack, name, protect: true } : { stack, name } });
}

/** The metadata of an inventory object of `stack` recording these module addresses (src/model/inventory.ts). */
export function inventoryMetadata(stack: string, addresses: readonly string[], protect = false): string {
  return buildInventoryBody(stack, Object.fromEntries(addresses.map((a) => [a, protect ? { protect: true as const } : {}]))).metadata;
}

export function liveWb(n: number, fields: { description?: string; metadata?: string; backends?: Record<string, number> } = {}): LiveWeightedBackend {
  const wbid = wbId(n);
  return liveWeightedBackend({
    id: wbid,
    uri: `http://127.0.0.1:4780/backends/weighted/${wbid}`,
    created_at: "2025-09-04T10:11:37Z",
    description: fields.description ?? "",
    metadata: fields.metadata ?? "",
    backends: fields.backends ?? { [hrId(1)]: 100 },
  });
}

export const CB: CircuitBreakerSettings = {
  enabled: true,
  tripped_duration: 120,
  rolling_window: 300,
  num_buckets: 5,
  volume_threshold: 20,
  error_threshold_percentage: 0.2,
};

export const IDP_XML = [
  '<?xml version="1.0" encoding="UTF-8"?>',
  '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="http://www.okta.com/exk1">',
  '  <md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">',
  "    <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified</md:NameIDFormat>",
  '    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://example.okta.com/app/sso/saml"/>',
  '    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://example.okta.com/app/sso/saml"/>',
  "  </md:IDPSSODescriptor>",
  "</md:EntityDescriptor>",
  "",
].join("\n");

export function samlSettings(fields: Partial<SamlSettings> = {}): SamlSettings {
  return {
    enabled: true,
    options_passthrough: false,
    cookie_prefix: "",
    inactivity_timeout: 0,
    maximum_duration: 0,
    idp_metadata: IDP_XML,
    force_authn: false,
    allow_idp_initiated: false,
    authorized_groups: ["engineering"],
    nameid_format: "urn:oasis:names:tc:SAML:2.0:nameid-format:persistent",
    ...fields,
  };
}

export function samlModule(route: string, fields: Partial<SamlSettings> = {}): SamlModule {
  const base = `https://idp.edgeplan.localhost/saml/${route}`;
  return {
    ...samlSettings(fields),
    entity_id: base,
    assertion_consumer_service_url: `${base}/acs`,
    single_logout_url: `${base}/slo`,
    request_signing_certificate_pem: "",
    metadata_url: base,
    idp_metadata_url: "",
  };
}

export function desiredRoute(
  saml: ModuleIntent<SamlSettings>,
  circuit_breaker: ModuleIntent<CircuitBreakerSettings>,
  ids: { edge?: string; route?: string; source?: SourcePos } = {},
): DesiredEdgeRoute {
  return { kind: "EdgeRoute", edge: ids.edge ?? EDGE, route: ids.route ?? ROUTE, saml, circuit_breaker, source: ids.source ?? pos(20) };
}

export function liveRouteOf(saml: SamlModule | null, cb: CircuitBreakerSettings | null, ids: { edge?: string; route?: string } = {}): LiveRoute {
  return liveRoute(ids.edge ?? EDGE, ids.route ?? ROUTE, saml, cb);
}

export const unmanaged = { state: "unmanaged" } as const;
export const absent = (line = 21): ModuleIntent<never> => ({ state: "absent", source: pos(line) });
export function present<T>(settings: T, line = 21): ModuleIntent<T> {
  return { state: "present", settings, source: pos(line) };
}

export function state(
  desired: { wbs?: DesiredWeightedBackend[]; routes?: DesiredEdgeRoute[] },
  live: { wbs?: LiveWeightedBackend[]; routes?: LiveRoute[] },
): { desired: DesiredState; live: LiveState } {
  return {
    desired: { weightedBackends: desired.wbs ?? [], edgeRoutes: desired.routes ?? [] },
    live: { weightedBackends: live.wbs ?? [], routes: live.routes ?? [] },
  };
}

export function plan(
  desired: { wbs?: DesiredWeightedBackend[]; routes?: DesiredEdgeRoute[] },
  live: { wbs?: LiveWeightedBackend[]; routes?: LiveRoute[] },
  options: Partial<PlanOptions> = {},
): Plan {
  const s = state(desired, live);
  return buildPlan(s.desired, s.live, { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT, ...options });
}

export function wbChange(p: Plan, address: string): WeightedBackendChange {
  const c = p.changes.find((x) => x.address === address);
  if (c?.kind !== "weighted_backend") throw new Error(`no weighted backend change ${address} in ${p.changes.map((x) => x.address).join(", ")}`);
  return c;
}

export function moduleChange(p: Plan, address: string): ModuleChange {
  const c = p.changes.find((x) => x.address === address);
  if (!c || c.kind === "weighted_backend" || c.kind === "inventory") throw new Error(`no module change ${address}`);
  return c;
}
