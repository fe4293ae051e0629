/**
 * The pure part of `edgeplan export`: names, YAML that reads back exactly, and the files built from live objects.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildExport, type ExportInput, type ExportResult } from "../../src/export/build-export.js";
import { NameAllocator, slugify } from "../../src/export/names.js";
import { escapeInterpolation, renderDocument } from "../../src/export/render.js";
import { substitute } from "../../src/manifest/interpolate.js";
import { buildInventoryBody } from "../../src/model/inventory.js";
import { renderSchemaFiles } from "../../src/model/schemas.js";
import { IDP_XML, cb, edgeId, hrId, marked, route, routeId, saml, wb, wbId } from "./builders.js";

const STACK = "blue";

function run(input: Partial<ExportInput>): ExportResult {
  return buildExport({ stack: STACK, takeover: false, weightedBackends: [], routes: [], ...input });
}

function fileText(result: ExportResult, path: string): string {
  const file = result.files.find((f) => f.path === path);
  if (!file) throw new Error(`no file ${path}; files: ${result.files.map((f) => f.path).join(", ")}`);
  return file.text;
}

const WB_HEADER =
  "# yaml-language-server: $schema=../schemas/weighted-backend.schema.json\n# Written by edgeplan export: a new export into this folder replaces this file; remove this line to keep it.\n";
const ROUTE_HEADER =
  "# yaml-language-server: $schema=../schemas/edge-route.schema.json\n# Written by edgeplan export: a new export into this folder replaces this file; remove this line to keep it.\n";
const ADOPT_COMMENT = "# Adopted by id: it carries no owner marker yet; the next apply adds one.\n";

describe("slugify and NameAllocator", () => {
  it("turns descriptions into manifest names", () => {
    expect(slugify("Checkout, 90/10 canary")).toBe("checkout-90-10-canary");
    expect(slugify("  Légacy Störefront (EU)  ")).toBe("legacy-storefront-eu");
    expect(slugify("---")).toBe("");
    expect(slugify("日本語")).toBe("");
    expect(slugify(wbId(7))).toBe("bkdwd-000000000000000000000000007");
    const long = slugify(`${"a".repeat(62)} b`);
    expect(long).toBe("a".repeat(62));
    expect(slugify(`${"a".repeat(62)}-${"b".repeat(10)}`)).toBe("a".repeat(62));
  });

  it("hands out unique names within the length limit", () => {
    const names = new NameAllocator();
    expect(names.claim("checkout")).toBe(true);
    expect(names.claim("checkout")).toBe(false);
    expect(names.allocate("checkout")).toBe("checkout-2");
    expect(names.allocate("checkout")).toBe("checkout-3");
    const base = "x".repeat(63);
    expect(names.allocate(base)).toBe(base);
    expect(names.allocate(base)).toBe(`${"x".repeat(61)}-2`);
  });
});

describe("YAML that reads back exactly", () => {
  it("escapes ${ in values, never in keys", () => {
    expect(escapeInterpolation({ "${k}": "a ${B} $${C} $" })).toEqual({ "${k}": "a $${B} $$${C} $" });
    for (const s of ["${X}", "$${X}", "$$${X}", "${", "$", "x$", "${}", "a${b${c}}"]) {
      const escaped = escapeInterpolation(s) as string;
      expect(substitute(escaped, {})).toEqual({ text: s, problems: [] });
    }
  });

  it("any description and metadata string survives the loader (property)", () => {
    const text = fc.string({ unit: "binary", maxLength: 60 });
    fc.assert(
      fc.property(text, text, text, (description, key, value) => {
        const doc = {
          kind: "WeightedBackend",
          name: "x",
          description,
          metadata: { [key]: value, nested: [value, { [key]: [value] }] },
          backends: { [hrId(1)]: 1 },
        };
        const out = renderDocument({ value: doc });
        // Text UTF-8 cannot carry (lone surrogates) is the only reason a value may be refused.
        const encodable = [description, key, value].every((s) => Buffer.from(s, "utf8").toString("utf8") === s);
        expect("problem" in out, JSON.stringify(out)).toBe(!encodable);
      }),
      { numRuns: 300 },
    );
  });
});

describe("buildExport: weighted backends", () => {
  it("writes an owned object by its marker name, without id, marker or empty fields", () => {
    const result = run({
      weightedBackends: [wb(1, { description: "Checkout", metadata: marked(STACK, "checkout", { team: "payments", z: 1, a: [1, "x"] }, true) })],
    });
    expect(result.skipped).toEqual([]);
    expect(result.weightedBackends).toEqual([{ id: wbId(1), name: "checkout", match: "owned", file: "weighted-backends/checkout.yaml" }]);
    expect(fileText(result, "weighted-backends/checkout.yaml")).toBe(
      WB_HEADER +
        "kind: WeightedBackend\n" +
        "name: checkout\n" +
        "protect: true\n" +
        "description: Checkout\n" +
        "metadata:\n" +
        "  a:\n" +
        "    - 1\n" +
        "    - x\n" +
        "  team: payments\n" +
        "  z: 1\n" +
        "backends:\n" +
        `  ${hrId(1)}: 100\n`,
    );
  });

  it("pins objects without a marker by id, names them from the description or the id, and writes exported children by name", () => {
    const result = run({
      weightedBackends: [
        wb(1, { description: "Storefront (EU)", metadata: '{"team":"web"}' }),
        wb(2, { description: "Storefront (EU)", backends: { [wbId(1)]: 10, [hrId(2)]: 0 } }),
        wb(3, { backends: { [wbId(2)]: 1, [wbId(4)]: 1 } }),
        wb(4, { metadata: marked("green", "theirs") }),
        wb(5, { description: "Legacy ${HOME}", metadata: '{"cost":"$${X}"}' }),
      ],
    });
    expect(result.weightedBackends.map((w) => [w.name, w.id, w.match])).toEqual([
      ["bkdwd-000000000000000000000000003", wbId(3), "adopt"],
      ["legacy-home", wbId(5), "adopt"],
      ["storefront-eu", wbId(1), "adopt"],
      ["storefront-eu-2", wbId(2), "adopt"],
    ]);
    expect(result.skipped).toEqual([
      {
        what: `weighted backend ${wbId(4)}`,
        reason: `it belongs to stack "green" (as "theirs"), and edgeplan never changes another stack's objects; pass --takeover to export it pinned by id`,
        stack: "green",
      },
    ]);
    expect(fileText(result, "weighted-backends/storefront-eu.yaml")).toBe(
      `${WB_HEADER}${ADOPT_COMMENT}kind: WeightedBackend\nname: storefront-eu\nid: ${wbId(1)}\ndescription: Storefront (EU)\nmetadata:\n  team: web\nbackends:\n  ${hrId(1)}: 100\n`,
    );
    expect(fileText(result, "weighted-backends/storefront-eu-2.yaml")).toBe(
      `${WB_HEADER}${ADOPT_COMMENT}kind: WeightedBackend\nname: storefront-eu-2\nid: ${wbId(2)}\ndescription: Storefront (EU)\nbackends:\n  ${hrId(2)}: 0\n  storefront-eu: 10\n`,
    );
    // A child of another stack (not exported) stays an id.
    expect(fileText(result, "weighted-backends/bkdwd-000000000000000000000000003.yaml")).toBe(
      `${WB_HEADER}${ADOPT_COMMENT}kind: WeightedBackend\nname: bkdwd-000000000000000000000000003\nid: ${wbId(3)}\nbackends:\n  ${wbId(4)}: 1\n  storefront-eu-2: 1\n`,
    );
    // ${ is escaped so that the loader gives back the text as held.
    expect(fileText(result, "weighted-backends/legacy-home.yaml")).toBe(
      `${WB_HEADER}${ADOPT_COMMENT}kind: WeightedBackend\nname: legacy-home\nid: ${wbId(5)}\ndescription: Legacy $\${HOME}\nmetadata:\n  cost: $$\${X}\nbackends:\n  ${hrId(1)}: 100\n`,
    );
  });

  it("with takeover, pins another stack's object by id under its name, unless the name is taken", () => {
    const result = run({
      takeover: true,
      weightedBackends: [
        wb(1, { metadata: marked(STACK, "api") }),
        wb(2, { description: "Green API", metadata: marked("green", "api", {}, true) }),
        wb(3, { metadata: marked("green", "web", { team: "x" }) }),
      ],
    });
    expect(result.weightedBackends.map((w) => [w.name, w.id, w.match])).toEqual([
      ["api", wbId(1), "owned"],
      ["green-api", wbId(2), "takeover"],
      ["web", wbId(3), "takeover"],
    ]);
    expect(fileText(result, "weighted-backends/green-api.yaml")).toBe(
      WB_HEADER +
        '# Taken over by id from stack "green" (where it is "api"): plan and apply need --takeover.\n' +
        `kind: WeightedBackend\nname: green-api\nid: ${wbId(2)}\nprotect: true\ndescription: Green API\nbackends:\n  ${hrId(1)}: 100\n`,
    );
  });

  it("skips what a manifest cannot hold, saying why", () => {
    const big = { blob: "x".repeat(4050) };
    const result = run({
      weightedBackends: [
        wb(1, { metadata: "hello" }),
        wb(2, { metadata: "[1,2]" }),
        wb(3, { metadata: marked(STACK, "dup") }),
        wb(4, { metadata: marked(STACK, "dup") }),
        wb(5, { metadata: JSON.stringify(big) }),
        wb(6, { metadata: "   " }),
      ],
    });
    expect(result.weightedBackends.map((w) => [w.name, w.id])).toEqual([
      ["bkdwd-000000000000000000000000006", wbId(6)],
      ["dup", wbId(3)],
    ]);
    const notJson = (text: string): string =>
      `its metadata ${text} is text but not JSON of an object, which a manifest cannot hold (metadata is a mapping or JSON text of an object), ` +
      `and adopting it would replace that text with edgeplan's owner marker; store it as a JSON object (or clear it) in the API, then export again`;
    expect(result.skipped).toEqual([
      { what: `weighted backend ${wbId(1)}`, reason: notJson('"hello"') },
      { what: `weighted backend ${wbId(2)}`, reason: notJson('"[1,2]"') },
      {
        what: `weighted backend ${wbId(4)}`,
        reason: `it carries the same owner marker ("dup" of stack "blue") as an older object, which is exported under that name; the plan lists this one as an orphan (delete it with --prune once you have checked it)`,
      },
      {
        what: `weighted backend ${wbId(5)}`,
        reason: `its metadata would be 4135 bytes with the owner marker, more than the 4096 bytes the API accepts; make its metadata smaller in the API, then export again`,
      },
    ]);
  });

  it("keeps user keys named like Object members as data, and skips a __proto__ key it could not carry", () => {
    const result = run({
      weightedBackends: [
        wb(1, { description: "members", metadata: '{"valueOf":"x","constructor":{"toString":1}}' }),
        wb(2, { description: "proto", metadata: '{"a":{"__proto__":{"b":1}}}' }),
      ],
    });
    expect(fileText(result, "weighted-backends/members.yaml")).toContain("metadata:\n  constructor:\n    toString: 1\n  valueOf: x\n");
    expect(result.skipped).toEqual([
      {
        what: `weighted backend ${wbId(2)}`,
        reason: 'its metadata has a "__proto__" key, which edgeplan cannot carry through a plan without losing it; rename that key in the API, then export again',
      },
    ]);
  });

  it("does not export a newer object under a marker's name when the plan matches an older one it cannot export", () => {
    // The plan matches a manifest of "api" to the oldest object of that marker: exporting wb 2 under that name
    // would have the next plan update wb 1 instead.
    const result = run({
      weightedBackends: [wb(1, { metadata: '{"a":{"__proto__":1},"edgeplan":{"name":"api","stack":"blue"}}' }), wb(2, { metadata: marked(STACK, "api") })],
    });
    expect(result.weightedBackends).toEqual([]);
    expect(result.skipped).toEqual([
      {
        what: `weighted backend ${wbId(1)}`,
        reason: 'its metadata has a "__proto__" key, which edgeplan cannot carry through a plan without losing it; rename that key in the API, then export again',
      },
      {
        what: `weighted backend ${wbId(2)}`,
        reason: `it carries the same owner marker ("api" of stack "blue") as an older object, ${wbId(1)}, which the plan matches by that name (it is not exported either); the plan lists this one as an orphan (delete it with --prune once you have checked it)`,
      },
    ]);
  });

  it("writes metadata too deep for the loader's nesting guard as JSON text of an object", () => {
    let deep: unknown = 1;
    for (let i = 0; i < 80; i++) deep = [deep];
    const metadata = JSON.stringify({ deep });
    const result = run({ weightedBackends: [wb(1, { description: "deep", metadata })] });
    expect(result.skipped).toEqual([]);
    expect(fileText(result, "weighted-backends/deep.yaml")).toContain(`metadata: '${metadata}'\n`);
  });

  it("notes marker keys it cannot carry over", () => {
    const result = run({
      weightedBackends: [
        wb(1, { description: "a", metadata: '{"edgeplan":"mine","k":1}' }),
        wb(2, { metadata: JSON.stringify({ edgeplan: { stack: STACK, name: "b", protect: false } }) }),
      ],
    });
    expect(result.notes).toEqual([
      `weighted backend ${wbId(1)}: the "edgeplan" key of its metadata is not an owner marker; the manifest leaves it out (the key is reserved) and adopting replaces it with this stack's marker`,
      `weighted backend ${wbId(2)} ("b"): its owner marker holds more than stack, name and protect: true, so the plan shows an update that rewrites it`,
    ]);
    expect(fileText(result, "weighted-backends/a.yaml")).toContain("metadata:\n  k: 1\n");
  });

  it("renames through the plan an owned object whose marker name is not a valid name", () => {
    const result = run({ weightedBackends: [wb(1, { description: "Bad Name", metadata: marked(STACK, "Bad_Name") })] });
    expect(result.weightedBackends).toEqual([{ id: wbId(1), name: "bad-name", match: "rename", file: "weighted-backends/bad-name.yaml" }]);
    expect(fileText(result, "weighted-backends/bad-name.yaml")).toContain(
      `# Pinned by id: its owner marker names it "Bad_Name", which is not a valid name; the next apply renames it.\nkind: WeightedBackend\nname: bad-name\nid: ${wbId(1)}\n`,
    );
  });
});

describe("buildExport: routes", () => {
  it("writes one file per edge, one document per route with a module, every settable field, and the IdP metadata as a file", () => {
    const result = run({
      routes: [
        route(1, 3),
        route(1, 2, { circuit_breaker: cb({ enabled: false, error_threshold_percentage: 0.5 }) }),
        route(1, 1, {
          saml: saml(routeId(1), { authorized_groups: ["eng", "ops"], cookie_prefix: "${x}", allow_idp_initiated: false }),
          circuit_breaker: cb(),
        }),
        route(2, 4),
      ],
    });
    expect(result.files.map((f) => f.path)).toEqual([
      `routes/${edgeId(1)}.yaml`,
      `routes/idp/${routeId(1)}.xml`,
      "schemas/edge-route.schema.json",
      "schemas/weighted-backend.schema.json",
    ]);
    expect(result.routes).toEqual([
      { edge: edgeId(1), route: routeId(1), modules: ["saml", "circuit_breaker"], file: `routes/${edgeId(1)}.yaml` },
      { edge: edgeId(1), route: routeId(2), modules: ["circuit_breaker"], file: `routes/${edgeId(1)}.yaml` },
    ]);
    expect(fileText(result, `routes/idp/${routeId(1)}.xml`)).toBe(IDP_XML);
    expect(fileText(result, `routes/${edgeId(1)}.yaml`)).toBe(
      ROUTE_HEADER +
        `kind: EdgeRoute\nedge: ${edgeId(1)}\nroute: ${routeId(1)}\n` +
        "saml:\n" +
        "  enabled: true\n" +
        "  options_passthrough: false\n" +
        "  cookie_prefix: $${x}\n" +
        "  inactivity_timeout: 0\n" +
        "  maximum_duration: 0\n" +
        `  idp_metadata_file: idp/${routeId(1)}.xml\n` +
        "  force_authn: false\n" +
        "  allow_idp_initiated: false\n" +
        "  authorized_groups:\n" +
        "    - eng\n" +
        "    - ops\n" +
        "  nameid_format: urn:oasis:names:tc:SAML:2.0:nameid-format:persistent\n" +
        "circuit_breaker:\n" +
        "  enabled: true\n" +
        "  tripped_duration: 120\n" +
        "  rolling_window: 300\n" +
        "  num_buckets: 5\n" +
        "  volume_threshold: 20\n" +
        "  error_threshold_percentage: 0.2\n" +
        "---\n" +
        `kind: EdgeRoute\nedge: ${edgeId(1)}\nroute: ${routeId(2)}\n` +
        "circuit_breaker:\n" +
        "  enabled: false\n" +
        "  tripped_duration: 120\n" +
        "  rolling_window: 300\n" +
        "  num_buckets: 5\n" +
        "  volume_threshold: 20\n" +
        "  error_threshold_percentage: 0.5\n",
    );
    const schemas = new Map(renderSchemaFiles().map((s) => [s.file, s.text]));
    expect(fileText(result, "schemas/edge-route.schema.json")).toBe(schemas.get("edge-route.schema.json"));
  });

  it("leaves out a SAML module whose metadata UTF-8 cannot encode, keeping the circuit breaker", () => {
    const result = run({ routes: [route(1, 1, { saml: saml(routeId(1), { idp_metadata: `${IDP_XML}\uD800` }), circuit_breaker: cb() })] });
    expect(result.routes.map((r) => r.modules)).toEqual([["circuit_breaker"]]);
    expect(result.files.some((f) => f.path.endsWith(".xml"))).toBe(false);
    expect(result.skipped).toEqual([
      {
        what: `edge route ${edgeId(1)}/${routeId(1)} saml`,
        reason: "its IdP metadata holds text that UTF-8 cannot encode (a lone surrogate), so no file can hold it as it is; the SAML module is left out (unmanaged)",
      },
    ]);
  });

  it("leaves out the modules another stack's inventory records, unless takeover", () => {
    const address = `edge_route.${edgeId(1)}/${routeId(1)}.circuit_breaker`;
    const inventory = wb(9, { backends: {}, metadata: buildInventoryBody("green", { [address]: {} }).metadata });
    const routes = [route(1, 1, { saml: saml(routeId(1)), circuit_breaker: cb() })];
    const result = run({ weightedBackends: [inventory], routes });
    expect(result.routes.map((r) => r.modules)).toEqual([["saml"]]);
    expect(fileText(result, `routes/${edgeId(1)}.yaml`)).not.toContain("circuit_breaker");
    expect(result.skipped).toEqual([
      {
        what: `edge route ${edgeId(1)}/${routeId(1)} circuit_breaker`,
        reason: 'it is recorded by stack "green" (docs/ownership.md), and edgeplan never changes another stack\'s modules; pass --takeover to export it',
        stack: "green",
      },
    ]);
    expect(run({ weightedBackends: [inventory], routes, takeover: true }).routes.map((r) => r.modules)).toEqual([["saml", "circuit_breaker"]]);
    expect(run({ weightedBackends: [inventory], routes, stack: "green" }).routes.map((r) => r.modules)).toEqual([["saml", "circuit_breaker"]]);
  });

  it("writes nothing, not even schemas, when nothing can be exported", () => {
    const result = run({ weightedBackends: [wb(1, { metadata: "plain text" })], routes: [route(1, 1)] });
    expect(result.files).toEqual([]);
  });
});

describe("buildExport: determinism", () => {
  it("gives the same files whatever order the live objects come in (property)", () => {
    const input: ExportInput = {
      stack: STACK,
      takeover: true,
      weightedBackends: [
        wb(1, { description: "same" }),
        wb(2, { description: "same", backends: { [wbId(1)]: 5 } }),
        wb(3, { metadata: marked(STACK, "same") }),
        wb(4, { metadata: marked("green", "same", { a: 1 }) }),
        wb(5, { description: "x", backends: { [wbId(4)]: 1, [wbId(3)]: 2 } }),
      ],
      routes: [route(2, 1, { circuit_breaker: cb() }), route(1, 2, { saml: saml(routeId(2)) }), route(1, 3, { circuit_breaker: cb() })],
    };
    const expected = buildExport(input);
    expect(expected.weightedBackends.map((w) => w.name)).toEqual(["bkdwd-000000000000000000000000004", "same", "same-2", "same-3", "x"]);
    fc.assert(
      fc.property(fc.shuffledSubarray([...input.weightedBackends], { minLength: 5 }), fc.shuffledSubarray([...input.routes], { minLength: 3 }), (wbs, routes) => {
        expect(buildExport({ ...input, weightedBackends: wbs, routes })).toEqual(expected);
      }),
      { numRuns: 50 },
    );
  });
});

describe("buildExport: scope and ignore_changes", () => {
  it("writes back the ignore_changes of the manifests read, by name and by route", () => {
    const result = run({
      weightedBackends: [wb(1, { description: "Checkout", metadata: marked(STACK, "checkout") }), wb(2, { metadata: marked(STACK, "search") })],
      routes: [route(1, 1, { circuit_breaker: cb() })],
      ignoreChanges: {
        weightedBackends: new Map([["checkout", ["description", "backends.canary"]]]),
        routes: new Map([[`${edgeId(1)}/${routeId(1)}`, ["circuit_breaker.num_buckets"]]]),
      },
    });
    expect(fileText(result, "weighted-backends/checkout.yaml")).toBe(
      `${WB_HEADER}kind: WeightedBackend\nname: checkout\ndescription: Checkout\nbackends:\n  ${hrId(1)}: 100\nignore_changes:\n  - description\n  - backends.canary\n`,
    );
    expect(fileText(result, "weighted-backends/search.yaml")).not.toContain("ignore_changes");
    expect(fileText(result, `routes/${edgeId(1)}.yaml`)).toContain("ignore_changes:\n  - circuit_breaker.num_buckets\n");
  });

  it("exports only what the scope names", () => {
    const result = run({
      weightedBackends: [wb(1, { metadata: marked(STACK, "checkout") }), wb(2, { metadata: marked(STACK, "search") })],
      routes: [route(1, 1, { circuit_breaker: cb(), saml: saml(routeId(1)) })],
      inScope: (address) => address === "weighted_backend.search" || address.endsWith(".circuit_breaker"),
    });
    expect(result.weightedBackends.map((w) => w.name)).toEqual(["search"]);
    expect(result.routes).toEqual([{ edge: edgeId(1), route: routeId(1), modules: ["circuit_breaker"], file: `routes/${edgeId(1)}.yaml` }]);
    expect(result.files.map((f) => f.path).filter((p) => p.endsWith(".xml"))).toEqual([]);
  });
});
