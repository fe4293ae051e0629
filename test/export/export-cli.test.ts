/**
 * `edgeplan export` end to end: the real server (in this process, on loopback, port 0) seeded with weighted backends
 * of this stack, of no stack and of another stack (with references between them) and routes with both modules;
 * the built CLI exports, validates, plans and applies the result.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, CLI, fakeId, REPO_ROOT, startTestServer, type ApiClient, type TestServer } from "../helpers/server.js";
import { IDP_XML } from "./builders.js";

const STACK = "blue";
const E1 = fakeId("edghts", 1);
const E2 = fakeId("edghts", 2);
const R1 = fakeId("edghtsrt", 1);
const R2 = fakeId("edghtsrt", 2);
const R3 = fakeId("edghtsrt", 3);
const R4 = fakeId("edghtsrt", 4);
const HR = fakeId("bkdhr", 1);
const TG = fakeId("bkdtg", 1);
/** With a byte-order mark, a CRLF and a trailing newline: the file must hold exactly these bytes. */
const IDP_BOM = `\uFEFF${IDP_XML}`;

let server: TestServer;
let api: ApiClient;
let cwd: string;
const ids: Record<string, string> = {};

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}
const runs: Run[] = [];

/** Runs the built CLI in `cwd` with only the API's address and key in its environment. */
function edgeplan(args: string[], timeoutMs = 30_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? "", EDGEPLAN_API_URL: server.url, EDGEPLAN_API_KEY: server.apiKey, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (s: string) => (stdout += s));
    child.stderr.setEncoding("utf8").on("data", (s: string) => (stderr += s));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`edgeplan ${args.join(" ")} did not end within ${timeoutMs} ms`));
    }, timeoutMs);
    child.once("close", (code) => {
      clearTimeout(timer);
      const run = { code, stdout, stderr };
      runs.push(run);
      resolve(run);
    });
  });
}

/** `edgeplan <command> --stack blue --rate-limit off ...` (the test makes more requests than the default budget). */
const cli = (command: string, ...args: string[]): Promise<Run> => edgeplan([command, "--stack", STACK, "--rate-limit", "off", ...args]);

async function post(name: string, body: { description?: string; metadata?: string; backends: Record<string, number> }): Promise<void> {
  const r = await api.post("/backends/weighted", body);
  expect(r.status).toBe(201);
  ids[name] = r.json.id as string;
}

const marker = (stack: string, name: string, extra: Record<string, unknown> = {}, protect = false): string =>
  JSON.stringify({ ...extra, edgeplan: protect ? { stack, name, protect: true } : { stack, name } });

const lower = (id: string): string => id.toLowerCase().replace("_", "-");
const WB_HEADER =
  "# yaml-language-server: $schema=../schemas/weighted-backend.schema.json\n# Written by edgeplan export: a new export into this folder replaces this file; remove this line to keep it.\n";
const ADOPT = "# Adopted by id: it carries no owner marker yet; the next apply adds one.\n";
const CB_R1 = { tripped_duration: 120, rolling_window: 300, num_buckets: 5, volume_threshold: 20, error_threshold_percentage: 0.2 };
const CB_R2 = { enabled: false, tripped_duration: 10, rolling_window: 60, num_buckets: 6, error_threshold_percentage: 0.5 };

beforeAll(async () => {
  server = await startTestServer({
    fixtures: {
      edges: [
        {
          id: E1,
          routes: [
            { id: R1, match: "/", match_type: "path_prefix" },
            { id: R2, match: "/api", match_type: "path_prefix" },
            { id: R3, match: "/static", match_type: "path_prefix" },
          ],
        },
        { id: E2, routes: [{ id: R4, match: "/admin", match_type: "exact_path" }] },
      ],
      backends: [
        { id: HR, type: "http_response" },
        { id: TG, type: "tunnel_group" },
      ],
    },
  });
  api = apiClient(server.url, server.apiKey);
  cwd = await mkdtemp(path.join(tmpdir(), "edgeplan-export-"));

  await post("checkout", { description: "Checkout", metadata: marker(STACK, "checkout", { team: "payments" }), backends: { [HR]: 9000, [TG]: 1000 } });
  await post("green", { description: "Shared", metadata: marker("green", "shared"), backends: { [HR]: 1 } });
  await post("storefront", { description: "Storefront (EU)", metadata: '{"team":"web"}', backends: { [ids.checkout as string]: 50, [ids.green as string]: 50 } });
  await post("core", { metadata: marker(STACK, "core", {}, true), backends: { [ids.storefront as string]: 1 } });
  await post("text", { description: "Notes", metadata: "free text", backends: { [HR]: 1 } });
  await post("bare", { backends: { [TG]: 5 } });

  const put = async (edge: string, route: string, module: string, body: unknown): Promise<void> => {
    const r = await api.put(`/edges/https/${edge}/routes/${route}/${module}`, body);
    expect(r.status).toBe(200);
  };
  await put(E1, R1, "saml", { idp_metadata: IDP_BOM, authorized_groups: ["eng", "ops"], allow_idp_initiated: false, cookie_prefix: "${team}-" });
  await put(E1, R1, "circuit_breaker", CB_R1);
  await put(E1, R2, "circuit_breaker", CB_R2);
  await put(E2, R4, "saml", { idp_metadata: IDP_XML, force_authn: true });
});

afterAll(async () => {
  await server?.close();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe("edgeplan export", () => {
  it("writes every weighted backend it can and every route module, and says what it skipped", async () => {
    const r = await cli("export");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(
      [
        `routes/${E1}.yaml`,
        `routes/${E2}.yaml`,
        `routes/idp/${R1}.xml`,
        `routes/idp/${R4}.xml`,
        "schemas/edge-route.schema.json",
        "schemas/weighted-backend.schema.json",
        `weighted-backends/${lower(ids.bare as string)}.yaml`,
        "weighted-backends/checkout.yaml",
        "weighted-backends/core.yaml",
        "weighted-backends/storefront-eu.yaml",
      ]
        .map((p) => `wrote exported/${p}\n`)
        .join(""),
    );
    expect(r.stderr).toBe(
      `note: skipped 1 object of another stack (stack "green": 1), as edgeplan never changes another stack's objects; --verbose lists them, --takeover exports them pinned by id\n` +
        `note: skipped weighted backend ${ids.text}: its metadata "free text" is text but not JSON of an object, which a manifest cannot hold ` +
        `(metadata is a mapping or JSON text of an object), and adopting it would replace that text with edgeplan's owner marker; ` +
        `store it as a JSON object (or clear it) in the API, then export again\n` +
        `exported 4 weighted backends (2 owned by stack "blue", 2 pinned by id: the plan adopts 2) and 3 routes of 2 edges to exported; skipped 2 (see the notes above)\n` +
        "next: edgeplan plan --stack blue exported\n",
    );

    const wb = (name: string): Promise<string> => readFile(path.join(cwd, "exported", "weighted-backends", `${name}.yaml`), "utf8");
    expect(await wb("checkout")).toBe(
      `${WB_HEADER}kind: WeightedBackend\nname: checkout\ndescription: Checkout\nmetadata:\n  team: payments\nbackends:\n  ${HR}: 9000\n  ${TG}: 1000\n`,
    );
    expect(await wb("core")).toBe(`${WB_HEADER}kind: WeightedBackend\nname: core\nprotect: true\nbackends:\n  storefront-eu: 1\n`);
    expect(await wb("storefront-eu")).toBe(
      `${WB_HEADER}${ADOPT}kind: WeightedBackend\nname: storefront-eu\nid: ${ids.storefront}\ndescription: Storefront (EU)\n` +
        `metadata:\n  team: web\nbackends:\n  ${ids.green}: 50\n  checkout: 50\n`,
    );
    expect(await readFile(path.join(cwd, "exported", "routes", `${E1}.yaml`), "utf8")).toBe(
      "# yaml-language-server: $schema=../schemas/edge-route.schema.json\n" +
        "# Written by edgeplan export: a new export into this folder replaces this file; remove this line to keep it.\n" +
        `kind: EdgeRoute\nedge: ${E1}\nroute: ${R1}\n` +
        "saml:\n  enabled: true\n  options_passthrough: false\n  cookie_prefix: $${team}-\n  inactivity_timeout: 0\n  maximum_duration: 0\n" +
        `  idp_metadata_file: idp/${R1}.xml\n  force_authn: false\n  allow_idp_initiated: false\n  authorized_groups:\n    - eng\n    - ops\n` +
        "  nameid_format: urn:oasis:names:tc:SAML:2.0:nameid-format:persistent\n" +
        "circuit_breaker:\n  enabled: true\n  tripped_duration: 120\n  rolling_window: 300\n  num_buckets: 5\n  volume_threshold: 20\n  error_threshold_percentage: 0.2\n" +
        "---\n" +
        `kind: EdgeRoute\nedge: ${E1}\nroute: ${R2}\n` +
        "circuit_breaker:\n  enabled: false\n  tripped_duration: 10\n  rolling_window: 60\n  num_buckets: 6\n  volume_threshold: 0\n  error_threshold_percentage: 0.5\n",
    );
    // The schemas the files point at are there, and are the ones `edgeplan schema` publishes.
    const schema = await readFile(path.join(cwd, "exported", "schemas", "weighted-backend.schema.json"), "utf8");
    expect(schema).toBe(await readFile(path.join(REPO_ROOT, "schemas", "weighted-backend.schema.json"), "utf8"));
  });

  it("holds the SAML IdP metadata byte for byte as the server does", async () => {
    for (const [edge, route] of [
      [E1, R1],
      [E2, R4],
    ] as const) {
      const held = await api.get(`/edges/https/${edge}/routes/${route}/saml`);
      const bytes = await readFile(path.join(cwd, "exported", "routes", "idp", `${route}.xml`));
      expect(bytes.equals(Buffer.from(held.json.idp_metadata as string, "utf8"))).toBe(true);
    }
    const r1 = await readFile(path.join(cwd, "exported", "routes", "idp", `${R1}.xml`));
    expect(r1.subarray(0, 3).equals(Buffer.from([0xef, 0xbb, 0xbf]))).toBe(true);
  });

  it("validates", async () => {
    const r = await edgeplan(["validate", "exported"]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("6 files, 7 objects: 0 errors, 0 warnings\n");
    expect(r.code).toBe(0);
  });

  it("plans nothing but the adoptions", async () => {
    const json = await cli("plan", "exported", "--format", "json");
    expect(json.code).toBe(0);
    const plan = JSON.parse(json.stdout) as { summary: unknown; changes: Array<{ address: string; action: string; id: string }> };
    expect(plan.summary).toEqual({
      create: 0,
      update: 0,
      delete: 0,
      adopt: 2,
      takeover: 0,
      rename: 0,
      rollout: 0,
      module_replace: 0,
      module_delete: 0,
      orphans_kept: 0,
      // The two adoptions, and the inventory write that records the exported modules (the modules' adoption).
      total: 3,
    });
    expect(plan.changes.filter((c) => !c.address.startsWith("inventory.")).map((c) => [c.address, c.action, c.id])).toEqual([
      [`weighted_backend.${lower(ids.bare as string)}`, "adopt", ids.bare],
      ["weighted_backend.storefront-eu", "adopt", ids.storefront],
    ]);
    const text = await cli("plan", "exported", "--detailed-exitcode");
    expect(text.code).toBe(2);
    expect(text.stdout).toContain("Plan: 1 to create (1 inventory record), 0 to update, 0 to delete, 2 to adopt.\n");
  });

  it("writes into a folder that holds other files, leaving them as they are", async () => {
    await mkdir(path.join(cwd, "full"));
    await writeFile(path.join(cwd, "full", "keep.txt"), "mine\n");
    const r = await cli("export", "--out", "full");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("wrote full/weighted-backends/checkout.yaml\n");
    expect((await readdir(path.join(cwd, "full"))).sort()).toEqual(["keep.txt", "routes", "schemas", "weighted-backends"]);
    expect(await readFile(path.join(cwd, "full", "keep.txt"), "utf8")).toBe("mine\n");
    // Its own files, exported again into the same folder, are replaced without --force.
    const again = await cli("export", "--out", "full");
    expect(again.code).toBe(0);
    expect(again.stdout).toBe(r.stdout);

    await writeFile(path.join(cwd, "a-file"), "x");
    const file = await cli("export", "--out", "a-file");
    expect(file.code).toBe(1);
    expect(file.stderr).toBe("edgeplan: --out a-file: it exists and is not a folder; choose another --out or remove it\n");
    // No temporary folder or file is left behind.
    expect((await readdir(cwd)).filter((n) => n.includes(".tmp"))).toEqual([]);
  });

  it("refuses to overwrite files it did not write, naming them, and overwrites them with --force", async () => {
    const own = path.join(cwd, "own");
    await mkdir(path.join(own, "weighted-backends"), { recursive: true });
    await mkdir(path.join(own, "routes", "idp"), { recursive: true });
    const mine = "kind: WeightedBackend\nname: checkout\nbackends: {}\n";
    await writeFile(path.join(own, "weighted-backends", "checkout.yaml"), mine);
    await writeFile(path.join(own, "routes", "idp", `${R1}.xml`), "<mine/>\n");
    const refused = await cli("export", "--out", "own");
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    // After the notes on what is skipped, the one error.
    expect(refused.stderr.split("\n").filter((line) => !line.startsWith("note: "))).toEqual([
      `edgeplan: --out own: export would overwrite 2 files it did not write: own/routes/idp/${R1}.xml, own/weighted-backends/checkout.yaml; nothing was written. ` +
        "Move them away, choose another --out, or pass --force to overwrite them",
      "",
    ]);
    expect((await readdir(own)).sort()).toEqual(["routes", "weighted-backends"]);
    expect(await readdir(path.join(own, "weighted-backends"))).toEqual(["checkout.yaml"]);
    expect(await readFile(path.join(own, "weighted-backends", "checkout.yaml"), "utf8")).toBe(mine);

    const forced = await cli("export", "--out", "own", "--force");
    expect(forced.code).toBe(0);
    expect(forced.stdout).toContain("wrote own/weighted-backends/checkout.yaml\n");
    expect(await readFile(path.join(own, "weighted-backends", "checkout.yaml"), "utf8")).toBe(
      `${WB_HEADER}kind: WeightedBackend\nname: checkout\ndescription: Checkout\nmetadata:\n  team: payments\nbackends:\n  ${HR}: 9000\n  ${TG}: 1000\n`,
    );
    expect(await readFile(path.join(own, "routes", "idp", `${R1}.xml`), "utf8")).toBe(IDP_BOM);
  });

  it("exports only the routes given with --route, into an empty folder, and notes a route without modules", async () => {
    await mkdir(path.join(cwd, "empty"));
    const r = await cli("export", "--out", "empty", "--route", `${E1}/${R2}`, "--route", `${E1}/${R3}`);
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n").filter((l) => l.includes("/routes/"))).toEqual([`wrote empty/routes/${E1}.yaml`]);
    expect(r.stdout).toContain("wrote empty/weighted-backends/checkout.yaml\n");
    expect(r.stderr).toContain(`note: edge route ${E1}/${R3} has no module set; there is nothing to export for it\n`);
    expect(r.stderr).toContain("and 1 route of 1 edge to empty;");
    expect(await readFile(path.join(cwd, "empty", "routes", `${E1}.yaml`), "utf8")).toBe(
      "# yaml-language-server: $schema=../schemas/edge-route.schema.json\n" +
        "# Written by edgeplan export: a new export into this folder replaces this file; remove this line to keep it.\n" +
        `kind: EdgeRoute\nedge: ${E1}\nroute: ${R2}\n` +
        "circuit_breaker:\n  enabled: false\n  tripped_duration: 10\n  rolling_window: 60\n  num_buckets: 6\n  volume_threshold: 0\n  error_threshold_percentage: 0.5\n",
    );
  });

  it("exports the routes the manifests under [paths...] name", async () => {
    await mkdir(path.join(cwd, "manifests"));
    await writeFile(path.join(cwd, "manifests", "admin.yaml"), `kind: EdgeRoute\nedge: ${E2}\nroute: ${R4}\ncircuit_breaker: absent\n`);
    const r = await cli("export", "manifests", "--out", "from-paths");
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n").filter((l) => l.includes("/routes/"))).toEqual([`wrote from-paths/routes/${E2}.yaml`, `wrote from-paths/routes/idp/${R4}.xml`]);
    const text = await readFile(path.join(cwd, "from-paths", "routes", `${E2}.yaml`), "utf8");
    expect(text).toContain(`route: ${R4}\nsaml:\n  enabled: true\n`);
    expect(text).toContain("  force_authn: true\n");
    expect(text).not.toContain("circuit_breaker");
  });

  it("refuses a malformed --route and a route that does not exist, writing nothing", async () => {
    const bad = await cli("export", "--out", "bad", "--route", R1);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toBe(`edgeplan: --route "${R1}": expected EDGE_ID/ROUTE_ID, e.g. edghts_2G4e8ay6UX87bXwr8GXBHKATNk6/edghtsrt_32ELHwJPhCQPmmUX0L0b2M0hXZw\n`);
    const missing = await cli("export", "--out", "bad", "--route", `${E2}/${R1}`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(
      `edgeplan: cannot export: route ${R1} does not exist on edge ${E2}, given with --route; export reads existing routes only: check the ids (GET /edges/https lists them)\n`,
    );
    expect((await readdir(cwd)).filter((n) => n.startsWith("bad") || n.includes(".tmp-"))).toEqual([]);
  });

  it("with --takeover, pins another stack's object by id, and the plan takes it over", async () => {
    const r = await cli("export", "--takeover", "--out", "takeover");
    expect(r.code).toBe(0);
    expect(await readFile(path.join(cwd, "takeover", "weighted-backends", "shared.yaml"), "utf8")).toBe(
      `${WB_HEADER}# Taken over by id from stack "green" (where it is "shared"): plan and apply need --takeover.\n` +
        `kind: WeightedBackend\nname: shared\nid: ${ids.green}\ndescription: Shared\nbackends:\n  ${HR}: 1\n`,
    );
    // The child that was an id is now a reference by name.
    expect(await readFile(path.join(cwd, "takeover", "weighted-backends", "storefront-eu.yaml"), "utf8")).toContain("backends:\n  checkout: 50\n  shared: 50\n");
    expect(r.stderr).toContain("next: edgeplan plan --stack blue --takeover takeover\n");
    const plan = await cli("plan", "takeover", "--takeover", "--format", "json");
    expect(plan.code).toBe(0);
    expect(JSON.parse(plan.stdout).summary).toMatchObject({ create: 0, update: 0, delete: 0, adopt: 2, takeover: 1, module_replace: 0, total: 4 });
  });

  it("after apply of the export, a second plan has nothing to do, and a new export writes every object by name", async () => {
    const apply = await cli("apply", "exported", "--auto-approve");
    expect(apply.stderr).not.toContain("error");
    expect(apply.code).toBe(0);
    const plan = await cli("plan", "exported", "--detailed-exitcode");
    expect(plan.code).toBe(0);
    expect(plan.stdout).toContain("No changes.");

    const again = await cli("export", "--out", "again");
    expect(again.code).toBe(0);
    expect(again.stderr).toContain('exported 4 weighted backends (4 owned by stack "blue") and 3 routes of 2 edges to again;');
    expect(await readFile(path.join(cwd, "again", "weighted-backends", "storefront-eu.yaml"), "utf8")).toBe(
      `${WB_HEADER}kind: WeightedBackend\nname: storefront-eu\ndescription: Storefront (EU)\nmetadata:\n  team: web\nbackends:\n  ${ids.green}: 50\n  checkout: 50\n`,
    );
  });

  it("never prints the API key", () => {
    expect(runs.length).toBeGreaterThan(10);
    for (const r of runs) {
      expect(r.stdout).not.toContain(server.apiKey);
      expect(r.stderr).not.toContain(server.apiKey);
    }
  });
});
