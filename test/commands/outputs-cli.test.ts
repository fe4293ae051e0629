/**
 * What a script and a new user read from the built CLI: `apply --format json` and `validate --format json` as one
 * JSON document each, and the messages of the usual first mistakes (a route id typo, an API URL with a path,
 * https:// to a plain HTTP server, `--api-key`, a manifest given as fixtures, a certificate given as IdP metadata),
 * each with its exact text on stderr and its exit code.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ApplyDocumentSchema } from "../../src/model/apply-schema.js";
import { ValidateDocumentSchema } from "../../src/model/validate-schema.js";
import { closeWorlds, EDGE, HR1, HR2, R1, startWorld, wbYaml } from "../apply/e2e.js";
import { fakeId, REPO_ROOT } from "../helpers/server.js";

afterAll(closeWorlds);

const IDP = "idp/okta.xml";
const routeYaml = (edge: string, route: string, idp = IDP): string =>
  `kind: EdgeRoute\nedge: ${edge}\nroute: ${route}\nsaml:\n  idp_metadata_file: ${idp}\n  authorized_groups: [admins]\n  allow_idp_initiated: false\n`;
const OKTA = readFileSync(join(REPO_ROOT, "examples", "saml", "idp", "okta.xml"), "utf8");
const PEM = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2xvdWQ=\n-----END CERTIFICATE-----\n";

/** The text of a regular expression that matches `text` exactly. */
const literal = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

describe("apply --format json (built CLI, real server)", () => {
  it("prints ONE document, the plan and the report, that its schema accepts; the plan for the question goes to stderr", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 60, [HR2]: 40 }) });
    const run = await w.cli(["apply", "m", "--auto-approve", "--format", "json", "--quiet"]);
    expect(run.code).toBe(0);
    const doc = JSON.parse(run.stdout) as { plan: { summary: { create: number } }; report: Record<string, unknown> };
    expect(ApplyDocumentSchema.safeParse(doc).error).toBeUndefined();
    expect(Object.keys(doc)).toEqual(["format_version", "kind", "plan", "report"]);
    expect(doc.plan.summary.create).toBe(1);
    const id = (await w.owned()).get("x")?.id;
    expect(doc.report).toMatchObject({
      stack: "default",
      status: "converged",
      counts: { done: 1, failed: 0, skipped: 0, not_started: 0 },
      changes: [{ address: "weighted_backend.x", action: "create", status: "done", id, message: `created ${id}` }],
    });
    expect(run.stderr).toContain("Plan: 1 to create, 0 to update, 0 to delete.\n");
    const schema = JSON.parse(readFileSync(join(REPO_ROOT, "schemas", "apply.schema.json"), "utf8")) as { required: string[]; title: string };
    expect(schema).toMatchObject({ title: "edgeplan apply", required: ["format_version", "kind", "plan", "report"] });
  });

  it("a refused apply (no terminal, no --auto-approve) prints the document with report null, and exits 1", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
    const run = await w.cli(["apply", "m", "--format", "json"]);
    expect(run.code).toBe(1);
    const doc = JSON.parse(run.stdout) as { report: unknown };
    expect(ApplyDocumentSchema.safeParse(doc).error).toBeUndefined();
    expect(doc.report).toBeNull();
    expect(await w.owned()).toEqual(new Map());
  });
});

describe("validate --format json (built CLI)", () => {
  it("a good folder: ok, the files, no diagnostic; exit 0", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }), "route.yaml": routeYaml(EDGE, R1), [IDP]: OKTA, "notes.yaml": "owner: platform\n" });
    const run = await w.cli(["validate", "m", "--format", "json"]);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(run.stdout)).toEqual({
      format_version: 1,
      kind: "validate",
      environment: null,
      ok: true,
      files: ["m/route.yaml", "m/x.yaml"],
      objects: 2,
      skipped: ["m/notes.yaml"],
      counts: { errors: 0, warnings: 0 },
      diagnostics: [],
    });
  });

  it("a bad folder: every diagnostic with its file, line, column and severity; exit 1", async () => {
    const w = await startWorld();
    w.manifests({ "a.yaml": "kind: WeightedBackend\nname: Bad_Name\nbackends:\n  bkdhr_x: 10001\n", "route.yaml": routeYaml(EDGE, R1, "idp/cert.pem"), "idp/cert.pem": PEM });
    const run = await w.cli(["validate", "m", "--format", "json"]);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 1, stderr: "" });
    const doc = JSON.parse(run.stdout) as unknown;
    expect(ValidateDocumentSchema.safeParse(doc).error).toBeUndefined();
    expect(doc).toEqual({
      format_version: 1,
      kind: "validate",
      environment: null,
      ok: false,
      files: ["m/a.yaml", "m/route.yaml"],
      objects: 2,
      skipped: [],
      counts: { errors: 3, warnings: 0 },
      diagnostics: [
        {
          file: "m/a.yaml",
          line: 2,
          col: 7,
          severity: "error",
          message: "name: name \"Bad_Name\" is not valid; use lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters",
        },
        {
          file: "m/a.yaml",
          line: 4,
          col: 3,
          severity: "error",
          message:
            'backends: key "bkdhr_x" is not a well-formed backend id; use an id of bkdwd_, bkdhr_, bkdtg_, bkdfo_, bkdsc_ followed by 27 letters and digits, or the name of a WeightedBackend',
        },
        {
          file: "m/idp/cert.pem",
          line: 1,
          col: 1,
          severity: "error",
          message:
            "IdP metadata is a PEM file (CERTIFICATE), not the IdP's SAML metadata XML; the signing certificate is part of the metadata: download the IdP's metadata (an XML EntityDescriptor) and name that file",
        },
      ],
    });
  });
});

describe("the messages of the first mistakes (built CLI, real server)", () => {
  it("a route or an edge that does not exist: the manifest's route: value, and what to do", async () => {
    const w = await startWorld();
    const typo = fakeId("edghtsrt", 8009);
    const noEdge = fakeId("edghts", 8009);
    w.manifests({ "a.yaml": routeYaml(EDGE, typo), "b.yaml": `# the other edge\n${routeYaml(noEdge, R1)}`, [IDP]: OKTA });
    const run = await w.cli(["plan", "m"]);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: "" });
    expect(run.stderr).toBe(
      `edgeplan: m/a.yaml:3:8: route ${typo} does not exist on edge ${EDGE}; did you mean ${R1}? edgeplan does not create routes or edges: correct the route id, or create the route on the edge first\n` +
        `m/b.yaml:4:8: edge ${noEdge} does not exist (named with route ${R1}); did you mean ${EDGE}? edgeplan does not create routes or edges: correct the edge id, or create the edge first\n`,
    );
  });

  it("an API URL with a path: the URL must be the API's base", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
    const url = w.server.url;
    const run = await w.cli(["plan", "m", "--api-url", `${url}/api`]);
    expect(run.code).toBe(1);
    const expected =
      `edgeplan: GET /backends/weighted?limit=100: 404: Not Found; the API URL must be the API's base (scheme://host[:port]), ` + `not ${url}/api: try ${url} (operation op_`;
    expect(run.stderr).toMatch(new RegExp(`^${literal(expected)}\\w+\\)\\n$`));
  });

  it("https:// to a plain HTTP server: the server does not speak TLS", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
    const https = w.server.url.replace(/^http:/, "https:");
    const run = await w.cli(["plan", "m", "--api-url", https]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `edgeplan: GET /backends/weighted?limit=100: 0: the server at ${https} does not speak TLS (ERR_SSL_WRONG_VERSION_NUMBER); use http:// (loopback) or check the port\n`,
    );
  });

  it("--api-key: where the key goes, without the key", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
    const message =
      "edgeplan: --api-key: the API key is not given on the command line (shell history and the process list would show it): " +
      "put it in a file and pass --api-key-file FILE, or set EDGEPLAN_API_KEY\n";
    for (const args of [
      ["plan", "m", "--api-key", "sekret-value-1"],
      ["apply", "m", "--api-key=sekret-value-1"],
    ]) {
      const run = await w.cli(args);
      expect({ code: run.code, stdout: run.stdout, stderr: run.stderr }).toEqual({ code: 1, stdout: "", stderr: message });
    }
    expect(w.log()).toEqual([]);
  });

  it("serve --fixtures given a manifest: a manifest, not a fixtures file, and what a fixtures file holds", async () => {
    const w = await startWorld();
    w.manifests({ "route.yaml": `# yaml-language-server: $schema=../schemas/edge-route.schema.json\n${routeYaml(EDGE, R1)}---\n${routeYaml(EDGE, R1)}` });
    const run = await w.cli(["serve", "--port", "0", "--api-key", "k1", "--fixtures", "m/route.yaml"]);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 1, stdout: "" });
    expect(run.stderr).toBe(
      "edgeplan: m/route.yaml:2:1: this is a manifest (kind: EdgeRoute), not a fixtures file: manifests go to plan and apply. " +
        "A fixtures file holds what the API cannot create, the edges with their routes and the backends: " +
        "`edges: [{id, hostports, routes: [{id, match, match_type}]}]` and `backends: [{id, type}]` (see examples/fixtures.yaml)\n",
    );
    w.manifests({ "fixtures.yaml": "owner: platform\nedges: []\n" });
    const stray = await w.cli(["serve", "--port", "0", "--api-key", "k1", "--fixtures", "m/fixtures.yaml"]);
    expect({ code: stray.code, stdout: stray.stdout, stderr: stray.stderr }).toEqual({
      code: 1,
      stdout: "",
      stderr: 'edgeplan: m/fixtures.yaml:1:1: Unrecognized key: "owner"; a fixtures file holds only edges and backends (see examples/fixtures.yaml)\n',
    });
  });

  it("plan --local keeps its state out of git with .edgeplan/.gitignore, and leaves the project's .gitignore alone", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
    execFileSync("git", ["init", "-q"], { cwd: w.dir });
    const run = await w.cli(["plan", "m", "--local"]);
    expect(run.code).toBe(0);
    expect(readFileSync(join(w.dir, ".edgeplan", ".gitignore"), "utf8")).toBe("*\n");
    expect(existsSync(join(w.dir, ".gitignore"))).toBe(false);
    expect(execFileSync("git", ["status", "--porcelain", "--untracked-files=all"], { cwd: w.dir, encoding: "utf8" })).toBe("?? m/x.yaml\n");
  });
});
