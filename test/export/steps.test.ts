/**
 * Each step of `buildExport` on its own: reading metadata, classifying, naming, checking what a manifest can hold,
 * writing files; and the routes' documents.
 */
import { describe, expect, it } from "vitest";
import { NameAllocator } from "../../src/export/names.js";
import { routeDocument, routeFiles, routesByEdge, samlValue } from "../../src/export/routes.js";
import type { ExportLog } from "../../src/export/types.js";
import {
  assignNames,
  checkWritable,
  classifyContext,
  classifyWeightedBackend,
  readExportMetadata,
  weightedBackendFiles,
  type Candidate,
  type ClassifyContext,
  type ExportMetadata,
} from "../../src/export/weighted-backends.js";
import { cb, edgeId, hrId, marked, route, routeId, saml, wb, wbId } from "./builders.js";

const STACK = "blue";
const newLog = (): ExportLog => ({ skipped: [], notes: [] });
/** The context of classifying `live` (the objects an export reads), as `exportableWeightedBackends` makes it. */
const ctx = (takeover = false, live: Parameters<typeof classifyContext>[0] = []): ClassifyContext => classifyContext(live, { stack: STACK, takeover });

function metadataOf(metadata: string): ExportMetadata {
  const meta = readExportMetadata(wb(1, { metadata }));
  if ("skip" in meta) throw new Error(`skipped: ${meta.skip}`);
  return meta;
}

function classify(metadata: string, c = ctx(), log = newLog(), n = 1): Candidate | null {
  return classifyWeightedBackend(wb(n, { metadata }), metadataOf(metadata), c, log);
}

describe("readExportMetadata", () => {
  it("splits the user's keys from the marker, and keeps the marker key as held", () => {
    expect(readExportMetadata(wb(1, { metadata: "  " }))).toEqual({ user: {}, marker: null, rawMarker: undefined });
    expect(readExportMetadata(wb(1, { metadata: marked(STACK, "a", { z: 1 }) }))).toEqual({
      user: { z: 1 },
      marker: { stack: STACK, name: "a" },
      rawMarker: { stack: STACK, name: "a" },
    });
    expect(readExportMetadata(wb(1, { metadata: '{"edgeplan":7}' }))).toEqual({ user: {}, marker: null, rawMarker: 7 });
  });

  it("refuses text that is not a JSON object, and a __proto__ key at any depth", () => {
    expect(readExportMetadata(wb(1, { metadata: "[1]" }))).toEqual({ skip: expect.stringMatching(/^its metadata "\[1\]" is text but not JSON of an object/) });
    expect(readExportMetadata(wb(1, { metadata: '{"a":[{"__proto__":1}]}' }))).toEqual({ skip: expect.stringMatching(/^its metadata has a "__proto__" key/) });
  });
});

describe("classifyWeightedBackend", () => {
  it("owned: claims the marker's name; a second object with the same marker is skipped", () => {
    const c = ctx(false, [wb(1, { metadata: marked(STACK, "api") }), wb(2, { metadata: marked(STACK, "api") })]);
    const log = newLog();
    expect(classify(marked(STACK, "api"), c, log, 1)).toMatchObject({ match: "owned", name: "api", comment: [] });
    expect(classify(marked(STACK, "api"), c, log, 2)).toBeNull();
    expect(log.skipped).toEqual([{ what: `weighted backend ${wbId(2)}`, reason: expect.stringMatching(/^it carries the same owner marker \("api" of stack "blue"\)/) }]);
    expect(c.names.has("api")).toBe(true);
  });

  it("owned with a name that is not valid: renamed, its name left to assignNames", () => {
    expect(classify(marked(STACK, "Bad_Name"))).toMatchObject({ match: "rename", name: "" });
  });

  it("another stack's object: skipped without takeover, pinned with it", () => {
    const log = newLog();
    expect(classify(marked("green", "api"), ctx(false), log)).toBeNull();
    expect(log.skipped[0]?.reason).toBe(
      'it belongs to stack "green" (as "api"), and edgeplan never changes another stack\'s objects; pass --takeover to export it pinned by id',
    );
    expect(classify(marked("green", "api"), ctx(true))).toMatchObject({ match: "takeover", name: "", marker: { stack: "green", name: "api" } });
  });

  it("no marker: adopted, with a note when the marker key holds something else", () => {
    const log = newLog();
    expect(classify('{"edgeplan":"x"}', ctx(), log)).toMatchObject({ match: "adopt", marker: null, protect: false });
    expect(log.notes).toEqual([expect.stringMatching(/the "edgeplan" key of its metadata is not an owner marker/)]);
  });
});

describe("assignNames", () => {
  it("gives takeovers their marker's name when free, then derived names in id order", () => {
    const names = new NameAllocator();
    names.claim("api");
    const candidate = (n: number, match: Candidate["match"], description: string, markerName?: string): Candidate => ({
      live: wb(n, { description }),
      match,
      user: {},
      marker: markerName === undefined ? null : { stack: "green", name: markerName },
      protect: false,
      name: "",
      comment: [],
    });
    const cs = [candidate(3, "adopt", "web"), candidate(1, "takeover", "x", "api"), candidate(2, "takeover", "y", "web"), candidate(4, "adopt", "")];
    assignNames(cs, names);
    expect(cs.map((c) => c.name)).toEqual(["web-2", "x", "web", "bkdwd-000000000000000000000000004"]);
  });
});

describe("checkWritable and weightedBackendFiles", () => {
  const adopt = (n: number, user: Candidate["user"], backends: Record<string, number>): Candidate => ({
    live: wb(n, { backends }),
    match: "adopt",
    user,
    marker: null,
    protect: false,
    name: `wb-${n}`,
    comment: [],
  });

  it("refuses metadata over the API's limit once the marker is added", () => {
    const log = newLog();
    expect(checkWritable(adopt(1, { blob: "x".repeat(4070) }, {}), STACK, log)).toBe(false);
    expect(log.skipped[0]?.reason).toMatch(/^its metadata would be \d+ bytes with the owner marker, more than the 4096 bytes/);
  });

  it("chooses JSON text for metadata too deep for a mapping", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 80; i++) deep = [deep];
    const shallow = adopt(1, { a: 1 }, {});
    const deepOne = adopt(2, { deep } as Candidate["user"], {});
    const log = newLog();
    expect([checkWritable(shallow, STACK, log), checkWritable(deepOne, STACK, log)]).toEqual([true, true]);
    expect([shallow.form, deepOne.form]).toEqual(["mapping", "json"]);
    expect(log.skipped).toEqual([]);
  });

  it("writes children that are exported too by name, files sorted by name", () => {
    const parent = adopt(1, {}, { [wbId(2)]: 60, [hrId(1)]: 40 });
    const child = adopt(2, {}, {});
    parent.form = child.form = "mapping";
    const { files, exported } = weightedBackendFiles([parent, child]);
    expect(exported.map((e) => e.name)).toEqual(["wb-1", "wb-2"]);
    expect(files[0]?.text).toContain(`backends:\n  ${hrId(1)}: 40\n  wb-2: 60\n`);
  });
});

describe("routes", () => {
  it("groups routes by edge, sorted, each route once (the first read counts)", () => {
    const first = route(1, 2, { circuit_breaker: cb() });
    const grouped = routesByEdge([route(2, 1), first, route(1, 1), route(1, 2)]);
    expect(grouped.map(([edge, rs]) => [edge, rs.map((r) => r.route)])).toEqual([
      [edgeId(1), [routeId(1), routeId(2)]],
      [edgeId(2), [routeId(1)]],
    ]);
    expect(grouped[0]?.[1][1]).toBe(first);
  });

  it("writes every settable SAML field in the API's order, the metadata by file, and no generated field", () => {
    expect(Object.keys(samlValue(saml(routeId(1)), "idp/x.xml"))).toEqual([
      "enabled",
      "options_passthrough",
      "cookie_prefix",
      "inactivity_timeout",
      "maximum_duration",
      "idp_metadata_file",
      "force_authn",
      "allow_idp_initiated",
      "authorized_groups",
      "nameid_format",
    ]);
  });

  it("leaves out a SAML module no file can hold, and a route without modules has none", () => {
    const log = newLog();
    const doc = routeDocument(route(1, 1, { saml: saml(routeId(1), { idp_metadata: "\uD800" }), circuit_breaker: cb() }), log);
    expect(doc.modules).toEqual(["circuit_breaker"]);
    expect(doc.idp).toBeUndefined();
    expect(log.skipped.map((s) => s.what)).toEqual([`edge route ${edgeId(1)}/${routeId(1)} saml`]);
    expect(routeDocument(route(1, 2), newLog()).modules).toEqual([]);
    expect(routeFiles([route(1, 2)], newLog())).toEqual({ files: [], exported: [] });
  });
});
