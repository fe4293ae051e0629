/** Small builders of plan changes for the apply engine's unit tests. */
import type { Change, ModuleChange, WeightedBackendAction, WeightedBackendChange } from "../../src/model/plan.js";

/** A weighted backend change with only what scheduling looks at filled in meaningfully. */
export function wbChange(name: string, action: WeightedBackendAction, dependsOn: string[] = [], id: string | null = null): WeightedBackendChange {
  return {
    kind: "weighted_backend",
    action,
    address: `weighted_backend.${name}`,
    name,
    id: action === "create" ? null : (id ?? `bkdwd_${name.padStart(27, "0")}`),
    previous_owner: null,
    fingerprint: action === "create" ? null : "f",
    source: `manifests/${name}.yaml:1:1`,
    before: null,
    after: null,
    diffs: [],
    weights: [],
    request: { method: action === "create" ? "POST" : action === "delete" ? "DELETE" : "PATCH", path: "/backends/weighted", body: null },
    refs: {},
    depends_on: dependsOn.map((d) => `weighted_backend.${d}`),
    notes: [],
  };
}

export function moduleChangeOf(route: string, kind: "saml" | "circuit_breaker", action: "replace" | "delete" = "replace"): ModuleChange {
  return {
    kind,
    action,
    address: `edge_route.edghts_x/${route}.${kind}`,
    edge: "edghts_x",
    route,
    fingerprint: "f",
    source: "manifests/routes.yaml:1:1",
    before: null,
    after: action === "delete" ? null : {},
    diffs: [],
    request: { method: action === "delete" ? "DELETE" : "PUT", path: `/edges/https/edghts_x/routes/${route}/${kind}`, body: action === "delete" ? null : {} },
    depends_on: [],
    notes: [],
  };
}

export function addresses(changes: Change[]): string[] {
  return changes.map((c) => c.address);
}
