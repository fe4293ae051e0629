/**
 * Hostile manifests, as a pull request could write them, through the built CLI (`validate`, and `plan` against a
 * real server): path escapes and symbolic links out of the root, environment exfiltration through `${VAR}`, alias
 * bombs, huge files, deep nesting, invalid UTF-8, binary files, devices and pipes, thousands of documents, hostile
 * IdP metadata. Each ends with a clear error at a file:line:col, exit 1, within an outer time limit and a 256 MB
 * heap, prints none of the environment's secrets, and sends nothing made from the manifests: the server's request
 * log holds at most the listing of the weighted backends that `plan` starts while the manifests load.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountForKey } from "../../src/server/index.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { canary, runEdgeplan, tempDir, type CliResult } from "./cli.js";

const EDGE = "edghts_000000000000000000000000001";
const ROUTE = "edghtsrt_000000000000000000000000001";
const CHILD = "bkdhr_000000000000000000000000001";

const IDP_HEAD =
  '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.example.com">' +
  '<md:IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">';
const IDP_TAIL = "</md:IDPSSODescriptor></md:EntityDescriptor>\n";

function samlRoute(idpLine: string): string {
  return `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${ROUTE}\nsaml:\n  ${idpLine}\n  allow_idp_initiated: false\n`;
}

const wb = (name: string, extra = ""): string => `kind: WeightedBackend\nname: ${name}\n${extra}backends:\n  ${CHILD}: 100\n`;

interface HostileCase {
  name: string;
  /** Writes the case under `dir` (a fresh folder); returns the paths to give edgeplan (relative to `dir`). */
  setup(dir: string): string[];
  /** Every one must match stderr (validate and plan alike). */
  errors: RegExp[];
  /** The most stderr may hold (default 8 KiB): one hostile value must not become megabytes of output. */
  maxStderr?: number;
  /** The summary line validate prints, when the case pins it. */
  summary?: RegExp;
}

// Secrets a manifest may try to read from edgeplan's environment.
const API_KEY = canary();
const HOME_SECRET = canary();
const RUNNER_TOKEN = canary();

const CASES: HostileCase[] = [
  {
    name: "idp_metadata_file escaping the root with ..",
    setup(dir) {
      mkdirSync(join(dir, "outside"));
      writeFileSync(join(dir, "outside", "idp.xml"), IDP_HEAD + IDP_TAIL);
      mkdirSync(join(dir, "manifests"));
      writeFileSync(join(dir, "manifests", "route.yaml"), samlRoute("idp_metadata_file: ../outside/idp.xml"));
      return ["manifests"];
    },
    errors: [/^manifests\/route\.yaml:5:22: saml\.idp_metadata_file \.\.\/outside\/idp\.xml leads outside the manifest root manifests\//m],
  },
  {
    name: "idp_metadata_file as an absolute path",
    setup(dir) {
      writeFileSync(join(dir, "route.yaml"), samlRoute("idp_metadata_file: /etc/passwd"));
      return ["."];
    },
    errors: [/^route\.yaml:5:22: saml\.idp_metadata_file \/etc\/passwd is an absolute path/m],
  },
  {
    name: "idp_metadata_file that is a symbolic link out of the root",
    setup(dir) {
      writeFileSync(join(dir, "secret.txt"), `${RUNNER_TOKEN}\n`);
      mkdirSync(join(dir, "manifests"));
      symlinkSync(join(dir, "secret.txt"), join(dir, "manifests", "idp.xml"));
      writeFileSync(join(dir, "manifests", "route.yaml"), samlRoute("idp_metadata_file: idp.xml"));
      return ["manifests"];
    },
    errors: [/^manifests\/route\.yaml:5:22: saml\.idp_metadata_file idp\.xml is a symbolic link that leads outside the manifest root/m],
  },
  {
    name: "a folder inside the root that is a symbolic link out of it",
    setup(dir) {
      mkdirSync(join(dir, "elsewhere"));
      writeFileSync(join(dir, "elsewhere", "stolen.yaml"), `kind: ${RUNNER_TOKEN}\n`);
      mkdirSync(join(dir, "manifests"));
      writeFileSync(join(dir, "manifests", "ok.yaml"), wb("ok"));
      symlinkSync(join(dir, "elsewhere"), join(dir, "manifests", "linked"));
      return ["manifests"];
    },
    errors: [/^manifests\/linked:1:1: symbolic link leads outside the manifest root manifests\//m],
  },
  {
    name: "a manifest named on the command line that is a symbolic link to a secrets file",
    setup(dir) {
      writeFileSync(join(dir, "credentials"), `kind: ${RUNNER_TOKEN}\ntoken: ${RUNNER_TOKEN}\n`);
      mkdirSync(join(dir, "manifests"));
      symlinkSync(join(dir, "credentials"), join(dir, "manifests", "prod.yaml"));
      return ["manifests/prod.yaml"];
    },
    errors: [/^manifests\/prod\.yaml:1:1: symbolic link leads outside the manifest root manifests\//m],
  },
  {
    name: "a manifest named on the command line that is a symbolic link to /dev/zero",
    setup(dir) {
      symlinkSync("/dev/zero", join(dir, "zero.yaml"));
      return ["zero.yaml"];
    },
    errors: [/^zero\.yaml:1:1: symbolic link leads outside the manifest root \.\//m],
  },
  {
    name: "a manifest named on the command line that is a named pipe",
    setup(dir) {
      execFileSync("mkfifo", [join(dir, "pipe.yaml")]);
      return ["pipe.yaml"];
    },
    errors: [/^pipe\.yaml:1:1: not a regular file \(a device, pipe or socket\); name a YAML file$/m],
  },
  {
    name: "${VAR} reading the runner's secrets (HOME, EDGEPLAN_API_KEY, GITHUB_TOKEN)",
    setup(dir) {
      writeFileSync(
        join(dir, "steal.yaml"),
        wb("steal", 'description: "${HOME} ${EDGEPLAN_API_KEY}"\nmetadata:\n  token: "${GITHUB_TOKEN}"\n  missing: "${EDGEPLAN_VAR_NOT_SET}"\n'),
      );
      return ["steal.yaml"];
    },
    errors: [
      /^steal\.yaml:3:14: \$\{HOME\}: only EDGEPLAN_VAR_\* variables can be used, so that a manifest cannot read the runner's secrets/m,
      /^steal\.yaml:3:14: \$\{EDGEPLAN_API_KEY\}: only EDGEPLAN_VAR_\* variables can be used/m,
      /^steal\.yaml:5:10: \$\{GITHUB_TOKEN\}: only EDGEPLAN_VAR_\* variables can be used/m,
      // A variable's value is a secret: refused where it would be written or shown, set or not.
      /^steal\.yaml:6:12: \$\{EDGEPLAN_VAR_NOT_SET\}: metadata\.missing is written to the API or shown, and EDGEPLAN_VAR_\* values are secrets/m,
    ],
  },
  {
    name: "a variable of 500 KB named 80,000 times (a substitution bomb)",
    setup(dir) {
      writeFileSync(join(dir, "edgeplan.yaml"), `environments:\n  staging:\n    vars:\n      big: "${"x".repeat(500_000)}"\n`);
      writeFileSync(join(dir, "bomb.yaml"), wb("bomb", `description: "${"${var.big}".repeat(80_000)}"\n`));
      return ["bomb.yaml"];
    },
    errors: [
      /^bomb\.yaml:3:14: variables would add more than 1048576 characters to this document, more than a manifest file may hold; check the values of the variables it names$/m,
    ],
  },
  {
    name: "a YAML alias bomb (billion laughs)",
    setup(dir) {
      const lines = ["kind: WeightedBackend", "name: bomb", 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
      for (let i = 1; i <= 9; i++) lines.push(`a${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(",")}]`);
      lines.push("backends: {}");
      writeFileSync(join(dir, "bomb.yaml"), `${lines.join("\n")}\n`);
      return ["bomb.yaml"];
    },
    errors: [/^bomb\.yaml:1:1: the document expands aliases more than 100 times, as an alias bomb does/m],
  },
  {
    name: "a 50 MB file",
    setup(dir) {
      const huge = Buffer.alloc(50 * 1024 * 1024, "a");
      Buffer.from("kind: WeightedBackend\nname: huge\ndescription: ").copy(huge);
      writeFileSync(join(dir, "huge.yaml"), huge);
      return ["huge.yaml"];
    },
    errors: [/^huge\.yaml:1:1: file is 52428800 bytes, more than the 1048576 bytes \(1 MiB\) a manifest file may hold; split it into several files$/m],
  },
  {
    name: "100,000 nested [",
    setup(dir) {
      writeFileSync(join(dir, "deep.yaml"), `kind: WeightedBackend\nname: deep\nbackends: ${"[".repeat(100_000)}\n`);
      return ["deep.yaml"];
    },
    errors: [/^deep\.yaml:3:\d+: collections are nested more than 64 levels deep/m],
  },
  {
    name: "invalid UTF-8",
    setup(dir) {
      writeFileSync(join(dir, "latin1.yaml"), Buffer.concat([Buffer.from("kind: WeightedBackend\nname: caf"), Buffer.from([0xe9]), Buffer.from("\nbackends: {}\n")]));
      return ["latin1.yaml"];
    },
    errors: [/^latin1\.yaml:2:10: file is not valid UTF-8 text; save it as UTF-8$/m],
  },
  {
    name: "a binary file named .yaml",
    setup(dir) {
      const bytes = Buffer.alloc(4096);
      for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + 7) % 256;
      writeFileSync(join(dir, "image.yaml"), bytes);
      return ["image.yaml"];
    },
    errors: [/^image\.yaml:\d+:\d+: file holds NUL bytes: it is binary, not YAML text/m],
  },
  {
    name: "a file of 10,000 documents, every one invalid",
    setup(dir) {
      const docs = Array.from({ length: 10_000 }, (_, i) => `kind: WeightedBackend\nname: Bad_${i}\nbackends: {}\n`);
      writeFileSync(join(dir, "many.yaml"), docs.join("---\n"));
      return ["many.yaml"];
    },
    errors: [/^many\.yaml:2:7: name: name "Bad_0" is not valid/m, /^many\.yaml:39998:7: name: name "Bad_9999" is not valid/m],
    maxStderr: 4 * 1024 * 1024,
    summary: /^1 file, 10000 objects: 10000 errors, 0 warnings$/m,
  },
  {
    name: "IdP metadata nested 18,000 elements deep",
    setup(dir) {
      writeFileSync(join(dir, "idp.xml"), IDP_HEAD + "<x>".repeat(18_000) + "</x>".repeat(18_000) + IDP_TAIL);
      writeFileSync(join(dir, "route.yaml"), samlRoute("idp_metadata_file: idp.xml"));
      return ["."];
    },
    errors: [/^idp\.xml:1:1: IdP metadata nests elements more than 100 levels deep/m],
  },
  {
    name: "IdP metadata with an external entity (XXE)",
    setup(dir) {
      writeFileSync(
        join(dir, "idp.xml"),
        `<?xml version="1.0"?>\n<!DOCTYPE md [<!ENTITY leak SYSTEM "file:///etc/passwd">]>\n${IDP_HEAD}<md:Extensions>&leak;</md:Extensions>${IDP_TAIL}`,
      );
      writeFileSync(join(dir, "route.yaml"), samlRoute("idp_metadata_file: idp.xml"));
      return ["."];
    },
    errors: [/^idp\.xml:2:1: IdP metadata holds a DOCTYPE\b.*; .*remove it$/m],
  },
  {
    name: "values of a megabyte (name, child key, variable name)",
    setup(dir) {
      const big = "a".repeat(300_000);
      writeFileSync(join(dir, "name.yaml"), `kind: WeightedBackend\nname: ${big}\nbackends: {}\n`);
      writeFileSync(join(dir, "var.yaml"), `kind: WeightedBackend\nname: v\ndescription: "\${${"A".repeat(300_000)}}"\nbackends: {}\n`);
      writeFileSync(join(dir, "kind.yaml"), `kind: ${big}\nname: k\n`);
      return ["."];
    },
    errors: [
      /^kind\.yaml:1:7: unknown kind "a{20,60}\.\.\.\[2999\d\d more characters\]\.\.\.a{5,15}"; use WeightedBackend or EdgeRoute$/m,
      /^name\.yaml:2:7: name: name "a{20,60}\.\.\.\[2999\d\d more characters\]\.\.\.a{5,15}" is longer than 63 characters; shorten it$/m,
      /^var\.yaml:3:14: \$\{A{20,60}\.\.\.\[2999\d\d more characters\]\.\.\.A{5,15}\}: only EDGEPLAN_VAR_\* variables can be used/m,
    ],
    maxStderr: 4096,
  },
];

const SECRET_ENV = { HOME: HOME_SECRET, EDGEPLAN_API_KEY: API_KEY, GITHUB_TOKEN: RUNNER_TOKEN };

function expectHostileOutcome(c: HostileCase, r: CliResult): void {
  expect(c.errors.length, `${c.name}: a case names the errors it expects`).toBeGreaterThan(0);
  for (const e of c.errors) expect(r.stderr).toMatch(e);
  expect(r.code).toBe(1);
  expect(r.signal).toBeNull();
  expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
  expect(r.stderr.length).toBeLessThanOrEqual(c.maxStderr ?? 8192);
  for (const secret of [API_KEY, HOME_SECRET, RUNNER_TOKEN]) {
    expect(r.stdout).not.toContain(secret);
    expect(r.stderr).not.toContain(secret);
  }
}

describe("hostile manifests", () => {
  let server: TestServer;
  const dirs: Array<{ remove(): void }> = [];

  beforeAll(async () => {
    server = await startTestServer({
      apiKeys: [API_KEY],
      fixtures: { edges: [{ id: EDGE, routes: [{ id: ROUTE, match: "/", match_type: "path_prefix" }] }], backends: [{ id: CHILD, type: "http_response" }] },
    });
    // The fixtures go to the server's first key; the manifests name the child in API_KEY's account, where plans run.
    await server.read((tx) => tx.ensureBackend(accountForKey(API_KEY), CHILD));
  });
  afterAll(async () => {
    await server?.close();
    for (const d of dirs) d.remove();
  });

  function prepare(c: HostileCase): { cwd: string; paths: string[] } {
    const dir = tempDir("hostile");
    dirs.push(dir);
    return { cwd: dir.path, paths: c.setup(dir.path) };
  }

  describe.concurrent("validate", () => {
    for (const c of CASES) {
      it(c.name, async () => {
        const { cwd, paths } = prepare(c);
        const r = await runEdgeplan(["validate", ...paths], { cwd, env: SECRET_ENV });
        expectHostileOutcome(c, r);
        expect(r.stdout).toMatch(c.summary ?? /^\d+ files?, \d+ objects?: [1-9]\d* errors?, \d+ warnings?/);
      });
    }
  });

  // `plan` lists the account's weighted backends and reads the first page of its edges while the manifests load (those
  // reads do not depend on them); no other request, and nothing made from the manifests, may reach the server.
  describe.concurrent("plan against a live server sends nothing but the listings", () => {
    for (const c of CASES) {
      it(c.name, async () => {
        const { cwd, paths } = prepare(c);
        const r = await runEdgeplan(["plan", ...paths], { cwd, env: { ...SECRET_ENV, EDGEPLAN_API_URL: server.url } });
        expectHostileOutcome(c, r);
        expect(r.stderr).toMatch(/^edgeplan: [1-9]\d* errors? in the manifests; nothing was sent to the API but the listings of its weighted backends and edges$/m);
        expect(r.stdout).toBe("");
        // Checked in the same test: another request from any case (they run at once) fails every one of them.
        expect(server.logLines.map((l) => `${String(l.method)} ${String(l.path)}`).filter((l) => l !== "GET /backends/weighted" && l !== "GET /edges/https")).toEqual([]);
      });
    }
  });

  // The counter above must be able to see a request: a valid manifest, planned against the same server, is read.
  it("a valid manifest planned against the same server is seen in its request log", async () => {
    const dir = tempDir("hostile-ok");
    dirs.push(dir);
    writeFileSync(join(dir.path, "ok.yaml"), wb("ok"));
    const before = server.logLines.length;
    const r = await runEdgeplan(["plan", "--format", "json", "ok.yaml"], { cwd: dir.path, env: { ...SECRET_ENV, EDGEPLAN_API_URL: server.url } });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).summary.create).toBe(1);
    expect(server.logLines.length).toBeGreaterThan(before);
    expect(server.logLines.every((l) => l.status === 200)).toBe(true);
  });
});
