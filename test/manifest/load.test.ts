/**
 * loadDesired on real folders in a temporary directory: path confinement of idp_metadata_file (absolute paths,
 * `..`, symbolic links made here), size caps, the walk, and the bytes of IdP metadata files.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDesired } from "../../src/manifest/load.js";
import { formatDiagnostic } from "../../src/model/errors.js";
import { CHILD1, EDGE, IDP_XML, ROUTE } from "./pipeline.js";

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(path.join(tmpdir(), "edgeplan-load-"));
});
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
});

/** Writes files under a fresh folder of `tmp`; returns the folder. */
function tree(name: string, files: Record<string, string | Uint8Array>): string {
  const dir = path.join(tmp, name);
  for (const [rel, content] of Object.entries(files)) {
    const p = path.join(dir, rel);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, content);
  }
  return dir;
}

const route = (idpFile: string): string => `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE}\nsaml:\n  idp_metadata_file: ${idpFile}\n  allow_idp_initiated: false\n`;

async function messages(paths: string[], cwd: string): Promise<string[]> {
  const result = await loadDesired(paths, { cwd, env: {} });
  return result.diagnostics.map(formatDiagnostic);
}

describe("idp_metadata_file stays inside the manifest root", () => {
  it("refuses an absolute path, even to a file inside the root", async () => {
    const dir = tree("absolute", { "idp.xml": IDP_XML });
    writeFileSync(path.join(dir, "route.yaml"), route(path.join(dir, "idp.xml")));
    expect(await messages(["."], dir)).toEqual([
      `route.yaml:5:22: saml.idp_metadata_file ${path.join(dir, "idp.xml")} is an absolute path; give a path relative to this manifest, inside the manifest root ./`,
    ]);
  });

  it("refuses .. that leaves the root, and accepts .. that stays inside it", async () => {
    const dir = tree("dotdot", {
      "outside.xml": IDP_XML,
      "manifests/idp/okta.xml": IDP_XML,
      "manifests/team/route.yaml": route("../idp/okta.xml"),
      "manifests/escape.yaml": route("../outside.xml").replace(ROUTE, "edghtsrt_2rFLw8K9OzAhCLBsJjHY7ISpZ8a"),
    });
    expect(await messages(["manifests"], dir)).toEqual([
      "manifests/escape.yaml:5:22: saml.idp_metadata_file ../outside.xml leads outside the manifest root manifests/; keep IdP metadata files inside the folder given to edgeplan",
    ]);
    // The same file given from the parent folder is inside that root.
    expect(await messages(["."], dir)).toEqual([]);
  });

  it("refuses a symbolic link that leads outside the root, made at test time", async () => {
    const dir = tree("symlink", { "secrets/idp.xml": IDP_XML, "manifests/route.yaml": route("idp/okta.xml") });
    mkdirSync(path.join(dir, "manifests/idp"));
    symlinkSync(path.join(dir, "secrets/idp.xml"), path.join(dir, "manifests/idp/okta.xml"));
    expect(await messages(["manifests"], dir)).toEqual([
      "manifests/route.yaml:5:22: saml.idp_metadata_file idp/okta.xml is a symbolic link that leads outside the manifest root manifests/; copy the file into the manifest root instead",
    ]);
    // A link to a folder counts as well; walking the root reports the link itself too.
    const dir2 = tree("symlink-dir", { "secrets/okta.xml": IDP_XML, "manifests/route.yaml": route("idp/okta.xml") });
    symlinkSync(path.join(dir2, "secrets"), path.join(dir2, "manifests/idp"));
    expect(await messages(["manifests"], dir2)).toEqual([
      "manifests/idp:1:1: symbolic link leads outside the manifest root manifests/; copy the files into the root instead",
      "manifests/route.yaml:5:22: saml.idp_metadata_file idp/okta.xml is a symbolic link that leads outside the manifest root manifests/; copy the file into the manifest root instead",
    ]);
  });

  it("follows a symbolic link that stays inside the root", async () => {
    const dir = tree("symlink-inside", { "shared/okta.xml": IDP_XML, "route.yaml": route("idp.xml") });
    symlinkSync("shared/okta.xml", path.join(dir, "idp.xml"));
    const result = await loadDesired(["."], { cwd: dir, env: {} });
    expect(result.diagnostics).toEqual([]);
    const saml = result.desired.edgeRoutes[0]?.saml;
    expect(saml?.state === "present" && saml.settings.idp_metadata).toBe(IDP_XML);
  });

  it("confines a file given by name to its own folder", async () => {
    const dir = tree("file-root", { "idp.xml": IDP_XML, "manifests/route.yaml": route("../idp.xml") });
    expect(await messages(["manifests/route.yaml"], dir)).toEqual([
      "manifests/route.yaml:5:22: saml.idp_metadata_file ../idp.xml leads outside the manifest root manifests/; keep IdP metadata files inside the folder given to edgeplan",
    ]);
  });

  it("refuses a folder and a file over 128 KiB", async () => {
    const big = IDP_XML.replace("<md:IDPSSODescriptor", `<!--${"x".repeat(128 * 1024)}--><md:IDPSSODescriptor`);
    const dir = tree("idp-size", { "idp/big.xml": big, "route.yaml": route("idp/big.xml"), "dir.yaml": route("idp").replace(ROUTE, "edghtsrt_2rFLw8K9OzAhCLBsJjHY7ISpZ8a") });
    expect(await messages(["."], dir)).toEqual([
      "dir.yaml:5:22: saml.idp_metadata_file idp is not a file; name the XML file itself",
      `route.yaml:5:22: saml.idp_metadata_file idp/big.xml is ${Buffer.byteLength(big)} bytes, more than the 131072 bytes (128 KiB) the API accepts; use the IdP's metadata for one entity`,
    ]);
  });
});

describe("IdP metadata bytes", () => {
  it("are kept exactly: byte order mark, CRLF line ends, no final newline", async () => {
    const xml = `\uFEFF<?xml version="1.0"?>\r\n${IDP_XML.replace("><md:IDPSSODescriptor", ">\r\n  <md:IDPSSODescriptor")}`;
    const dir = tree("bytes", { "idp.xml": xml, "route.yaml": route("idp.xml") });
    const result = await loadDesired(["."], { cwd: dir, env: {} });
    expect(result.diagnostics).toEqual([]);
    const saml = result.desired.edgeRoutes[0]?.saml;
    expect(saml?.state === "present" && saml.settings.idp_metadata).toBe(xml);
    expect(saml?.state === "present" && saml.idpMetadataFile).toBe("idp.xml");
  });

  it("are read once and checked once when several routes name the same file", async () => {
    const dir = tree("shared-file", {
      "idp.xml": "<EntityDescriptor/>",
      "a.yaml": route("idp.xml"),
      "b.yaml": route("idp.xml").replace(ROUTE, "edghtsrt_2rFLw8K9OzAhCLBsJjHY7ISpZ8a"),
    });
    expect(await messages(["."], dir)).toEqual([
      "idp.xml:1:1: IdP metadata has no IDPSSODescriptor: it does not describe an identity provider (is it a service provider's metadata?); use the IdP's metadata",
    ]);
  });
});

describe("hostile manifest files", () => {
  it("refuses a manifest over 1 MiB without parsing it", async () => {
    const text = `kind: WeightedBackend\nname: a\ndescription: ${"x".repeat(1024 * 1024)}\nbackends: {}\n`;
    expect(text.length).toBe(1048633);
    const dir = tree("huge", { "huge.yaml": text });
    expect(await messages(["."], dir)).toEqual([
      "huge.yaml:1:1: file is 1048633 bytes, more than the 1048576 bytes (1 MiB) a manifest file may hold; split it into several files",
    ]);
  });

  it("refuses nesting a million levels deep without exhausting the stack or the heap", async () => {
    const dir = tree("deep", { "deep.yaml": `kind: WeightedBackend\nname: a\nbackends: ${"[".repeat(1_000_000)}\n` });
    expect(await messages(["."], dir)).toEqual(["deep.yaml:3:74: collections are nested more than 64 levels deep; a manifest needs a few levels, flatten it"]);
  });

  it("refuses an alias bomb that would expand to a billion nodes", async () => {
    let text = "kind: WeightedBackend\nname: a\nbackends: {}\nmetadata:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
    for (let i = 1; i <= 9; i++)
      text += `  l${i}: &l${i} [${Array(10)
        .fill(`*l${i - 1}`)
        .join(", ")}]\n`;
    const dir = tree("bomb", { "bomb.yaml": text });
    expect(await messages(["."], dir)).toEqual([
      "bomb.yaml:1:1: the document expands aliases more than 100 times, as an alias bomb does; write the values out instead of nesting aliases",
    ]);
  });
});

describe("finding manifests", () => {
  it("walks folders in sorted order, skips hidden folders and node_modules, and shows paths from the current folder", async () => {
    const wb = (name: string): string => `kind: WeightedBackend\nname: ${name}\nbackends: {${CHILD1}: 1}\n`;
    const dir = tree("walk", {
      "repo/manifests/b.yaml": wb("b"),
      "repo/manifests/a/z.yml": wb("az"),
      "repo/manifests/a.YAML": wb("a"),
      "repo/manifests/.hidden/h.yaml": wb("hidden"),
      "repo/manifests/node_modules/n.yaml": wb("modules"),
      "repo/manifests/notes.txt": "kind: WeightedBackend\n",
      "repo/manifests/fixtures.yaml": "edges: []\nbackends: []\n",
    });
    const result = await loadDesired(["repo/manifests"], { cwd: dir, env: {} });
    expect(result.diagnostics).toEqual([]);
    expect(result.files).toEqual(["repo/manifests/a/z.yml", "repo/manifests/a.YAML", "repo/manifests/b.yaml"]);
    expect(result.skipped).toEqual(["repo/manifests/fixtures.yaml"]);
    expect(result.desired.weightedBackends.map((w) => w.name)).toEqual(["az", "a", "b"]);
    expect(result.root).toBe(path.join(dir, "repo/manifests"));
    const fromInside = await loadDesired(["."], { cwd: path.join(dir, "repo/manifests/a"), env: {} });
    expect(fromInside.files).toEqual(["z.yml"]);
  });

  it("reads a file reached twice once, and gives the deepest common folder as root of several paths", async () => {
    const dir = tree("twice", {
      "x/one.yaml": `kind: WeightedBackend\nname: one\nbackends: {${CHILD1}: 1}\n`,
      "y/two.yaml": `kind: WeightedBackend\nname: two\nbackends: {${CHILD1}: 1}\n`,
    });
    const result = await loadDesired(["x", "x/one.yaml", "y"], { cwd: dir, env: {} });
    expect(result.diagnostics).toEqual([]);
    expect(result.files).toEqual(["x/one.yaml", "y/two.yaml"]);
    expect(result.root).toBe(dir);
  });

  it("leaves out a folder below the root that holds its own edgeplan.yaml (another project), and reads it as a root", async () => {
    const wb = (name: string): string => `kind: WeightedBackend\nname: ${name}\nbackends: {}\n`;
    const dir = tree("nested-project", {
      "a.yaml": wb("a"),
      "envs/edgeplan.yaml": "environments:\n  staging: {vars: {x: y}}\n",
      "envs/manifests/b.yaml": "kind: WeightedBackend\nname: b\nbackends: {${var.x}: 1}\n",
    });
    expect((await loadDesired(["."], { cwd: dir, env: {} })).files).toEqual(["a.yaml"]);
    const nested = await loadDesired(["envs"], { cwd: dir, env: {}, vars: { name: "staging", vars: { x: "c" } } });
    expect(nested.files).toEqual(["envs/manifests/b.yaml"]);
  });

  it("reads a file given by name even when it has no kind", async () => {
    const dir = tree("explicit", { "fixtures.yaml": "edges: []\n" });
    expect(await messages(["fixtures.yaml"], dir)).toEqual(["fixtures.yaml:1:1: missing kind; add kind: WeightedBackend or kind: EdgeRoute"]);
  });

  it("reports a path that does not exist, a link leading out of the root, and a folder without manifests", async () => {
    const dir = tree("paths", {
      "outside/x.yaml": "kind: WeightedBackend\n",
      "empty/readme.md": "#\n",
      "m/ok.yaml": `kind: WeightedBackend\nname: ok\nbackends: {${CHILD1}: 1}\n`,
    });
    symlinkSync(path.join(dir, "outside/x.yaml"), path.join(dir, "m/link.yaml"));
    expect(await messages(["nope", "m"], dir)).toEqual([
      "m/link.yaml:1:1: symbolic link leads outside the manifest root m/; copy the files into the root instead",
      "nope:1:1: no such file or folder; check the path given to edgeplan",
    ]);
    expect(await messages(["empty"], dir)).toEqual(["empty:1:1: warning: no manifests found in empty; give the files or folders that hold the manifests"]);
  });

  it("reads the environment it is given, not the process's", async () => {
    const check = "rollout: {max_step: 50, interval: 1m, check: {url: 'https://status.example.com/?t=${EDGEPLAN_VAR_D}'}}";
    const dir = tree("env", { "a.yaml": `kind: WeightedBackend\nname: a\nbackends: {${CHILD1}: 1}\n${check}\n` });
    process.env.EDGEPLAN_VAR_D = "from the process";
    try {
      expect((await loadDesired(["."], { cwd: dir, env: { EDGEPLAN_VAR_D: "given" } })).diagnostics).toEqual([]);
      expect(await messages(["."], dir)).toEqual([
        "a.yaml:4:52: warning: ${EDGEPLAN_VAR_D}: EDGEPLAN_VAR_D is not set; a plan does not need it, but apply sends it in rollout.check.url: set it where apply runs",
      ]);
      // Without an env option, the process environment is used.
      expect((await loadDesired(["."], { cwd: dir })).diagnostics).toEqual([]);
    } finally {
      delete process.env.EDGEPLAN_VAR_D;
    }
  });
});
