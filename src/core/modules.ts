/**
 * Module changes of one route: a module the manifests want present is replaced (PUT of the whole module) when it
 * is unset live or any client-settable field differs (IdP metadata compared as the exact string); a module they
 * want absent is deleted when it exists; an unmanaged module is not looked at. Pure.
 */
import { jsonEqual as equal } from "../model/json-equal.js";
import type { ModuleChange } from "../model/plan.js";
import { moduleAddress } from "../model/plan.js";
import type { ModuleIntent, SourcePos } from "../model/state.js";
import { modulePath, normaliseModuleSettings, type ModuleKindSpec } from "../kinds/module.js";
import { diffRecords } from "./diff.js";

export function formatPos(pos: SourcePos): string {
  return `${pos.file}:${pos.line}:${pos.col}`;
}

/** The change of one module of a route, or null when there is nothing to do. */
export function buildModuleChange(
  spec: ModuleKindSpec,
  edge: string,
  route: string,
  intent: ModuleIntent<object>,
  live: object | null,
  fingerprint: string,
): ModuleChange | null {
  if (intent.state === "unmanaged") return null;
  const before = live === null ? null : normaliseModuleSettings(spec, live);
  const common = {
    kind: spec.kind,
    address: moduleAddress(edge, route, spec.kind),
    edge,
    route,
    fingerprint,
    source: formatPos(intent.source),
    depends_on: [],
  };
  const path = modulePath(edge, route, spec.kind);
  if (intent.state === "absent") {
    if (before === null) return null;
    return {
      ...common,
      action: "delete",
      before,
      after: null,
      diffs: diffRecords(before, {}, "", spec.fields),
      request: { method: "DELETE", path, body: null },
      notes: [`the manifest says ${spec.kind}: absent`],
    };
  }
  const after = normaliseModuleSettings(spec, intent.settings);
  if (before !== null && equal(before, after)) return null;
  return {
    ...common,
    action: "replace",
    before,
    after,
    diffs: diffRecords(before ?? {}, after, "", spec.fields),
    request: { method: "PUT", path, body: after },
    notes: [],
  };
}
