/**
 * The routes of an export: one manifest file per edge, one EdgeRoute document per route with a module set, every
 * client-settable field of each module (the kind's own field list), and the SAML IdP metadata in a file of its own.
 * Pure.
 */
import { CIRCUIT_BREAKER } from "../kinds/circuit-breaker.js";
import { normaliseModuleSettings } from "../kinds/module.js";
import { SAML } from "../kinds/saml.js";
import { compareText } from "../model/canonical.js";
import type { JsonValue } from "../model/plan.js";
import type { SamlModule } from "../model/wire.js";
import { renderDocument, renderManifestFile } from "./render.js";
import { moduleAddress } from "../model/plan.js";
import { EXPORT_LAYOUT, EXPORT_SCHEMAS, schemaRef, type ExportedRoute, type ExportFile, type ExportInput, type ExportLog, type ExportRouteInput } from "./types.js";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Every client-settable SAML field, in the API's order, the IdP metadata by file (in the place of `idp_metadata`). */
export function samlValue(saml: SamlModule, idpFile: string): Record<string, JsonValue> {
  const settings = normaliseModuleSettings(SAML, saml);
  return Object.fromEntries(Object.entries(settings).map(([k, v]) => (k === "idp_metadata" ? ["idp_metadata_file", idpFile] : [k, v])));
}

/** The routes of each edge, edges sorted, each edge's routes sorted and named once. */
export function routesByEdge(routes: readonly ExportRouteInput[]): Array<[string, ExportRouteInput[]]> {
  const byEdge = new Map<string, Map<string, ExportRouteInput>>();
  for (const r of routes) {
    const edge = byEdge.get(r.edge) ?? new Map<string, ExportRouteInput>();
    // The first read of a route counts, as it did when the routes were listed.
    if (!edge.has(r.route)) edge.set(r.route, r);
    byEdge.set(r.edge, edge);
  }
  return [...byEdge.entries()].sort(([a], [b]) => compareText(a, b)).map(([edge, byRoute]) => [edge, [...byRoute.values()].sort((a, b) => compareText(a.route, b.route))]);
}

/** The EdgeRoute document of one route: its value, the modules it holds, and its IdP metadata file (if any). */
export interface RouteDocument {
  value: Record<string, JsonValue>;
  modules: ExportedRoute["modules"];
  idp?: ExportFile;
}

/**
 * The document of one route: each module that is set, except a SAML module whose IdP metadata no file can hold
 * (left out, the reason in `log`).
 */
export function routeDocument(r: ExportRouteInput, log: ExportLog, scope: RouteScope = {}): RouteDocument {
  const inScope = (kind: "saml" | "circuit_breaker"): boolean => {
    const address = moduleAddress(r.edge, r.route, kind);
    if (!(scope.inScope?.(address) ?? true)) return false;
    const recordedBy = scope.recordedBy?.get(address);
    if (recordedBy === undefined || recordedBy === scope.stack || scope.takeover || r[kind] === null) return true;
    log.skipped.push({
      what: `edge route ${r.edge}/${r.route} ${kind}`,
      reason: `it is recorded by stack "${recordedBy}" (docs/ownership.md), and edgeplan never changes another stack's modules; pass --takeover to export it`,
      stack: recordedBy,
    });
    return false;
  };
  const value: Record<string, JsonValue> = { kind: "EdgeRoute", edge: r.edge, route: r.route };
  const modules: ExportedRoute["modules"] = [];
  let idp: ExportFile | undefined;
  const saml = inScope("saml") ? r.saml : null;
  if (saml && LONE_SURROGATE.test(saml.idp_metadata)) {
    log.skipped.push({
      what: `edge route ${r.edge}/${r.route} saml`,
      reason: "its IdP metadata holds text that UTF-8 cannot encode (a lone surrogate), so no file can hold it as it is; the SAML module is left out (unmanaged)",
    });
  } else if (saml) {
    const ref = `${EXPORT_LAYOUT.idp}/${r.route}.xml`;
    idp = { path: `${EXPORT_LAYOUT.routes}/${ref}`, text: saml.idp_metadata };
    value.saml = samlValue(saml, ref);
    modules.push("saml");
  }
  if (r.circuit_breaker && inScope("circuit_breaker")) {
    value.circuit_breaker = normaliseModuleSettings(CIRCUIT_BREAKER, r.circuit_breaker);
    modules.push("circuit_breaker");
  }
  const ignore = scope.ignoreChanges?.routes.get(`${r.edge}/${r.route}`);
  if (ignore !== undefined) value.ignore_changes = [...ignore];
  return idp ? { value, modules, idp } : { value, modules };
}

/**
 * What of a route is exported (`--target`, `--exclude`), the `ignore_changes` written back, and the stack recording
 * each module (`recordedBy`, by address, from the inventories): another stack's modules are left out unless `takeover`.
 */
export type RouteScope = Partial<Pick<ExportInput, "inScope" | "ignoreChanges" | "stack" | "takeover">> & { recordedBy?: ReadonlyMap<string, string> };

/** The files of the routes (one manifest per edge, the IdP metadata files) and what was exported, by edge and route. */
export function routeFiles(routes: readonly ExportRouteInput[], log: ExportLog, scope: RouteScope = {}): { files: ExportFile[]; exported: ExportedRoute[] } {
  const files: ExportFile[] = [];
  const exported: ExportedRoute[] = [];
  for (const [edge, edgeRoutes] of routesByEdge(routes)) {
    const file = `${EXPORT_LAYOUT.routes}/${edge}.yaml`;
    const bodies: string[] = [];
    for (const r of edgeRoutes) {
      const doc = routeDocument(r, log, scope);
      if (doc.modules.length === 0) continue;
      const rendered = renderDocument({ value: doc.value });
      if ("problem" in rendered) {
        log.skipped.push({ what: `edge route ${r.edge}/${r.route}`, reason: `it cannot be written as a manifest that reads back the same: ${rendered.problem}` });
        continue;
      }
      bodies.push(rendered.text);
      if (doc.idp) files.push(doc.idp);
      exported.push({ edge: r.edge, route: r.route, modules: doc.modules, file });
    }
    if (bodies.length > 0) files.push({ path: file, text: renderManifestFile(schemaRef(EXPORT_SCHEMAS.route), bodies) });
  }
  return { files, exported };
}
