/**
 * Environments of the project file, end to end: the manifests of examples/environments/ planned and applied as
 * staging and production against two real servers (each loaded with its environment's fixtures), from one folder.
 * `${var.*}` gives each environment its own child backend ids (mapping keys), edge and route; each plan's header
 * names its environment and API; a plan saved in one environment is refused in the other with nothing written; an
 * environment left out or unknown is refused with the list; a variable the environment lacks, or a key that becomes
 * a bad id, is an error at its line.
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT, spawnServer, type SpawnedServer } from "../helpers/server.js";
import { runEdgeplan, tempDir } from "../reliability/cli.js";

const EXAMPLE = join(REPO_ROOT, "examples", "environments");
/** The vars of each environment, as examples/environments/edgeplan.yaml defines them. */
const IDS = {
  staging: {
    edge: "edghts_2sTGa1Qm4kV8cNw3hJ6pXr0bYzE",
    route: "edghtsrt_2sTGe7Lr2oD5fGs9kT1uWq4nHcA",
    blue: "bkdtg_2sTGj3Hv8yN1qPz6mR4eKc7wLbU",
    green: "bkdtg_2sTGn9Bx5tF2sJd8vX3aMh6oQiY",
  },
  production: {
    edge: "edghts_2sTHb4Wk7nR2dLq5gY8tZs1cVmF",
    route: "edghtsrt_2sTHf6Pa3xJ9hEr2nU5oBw8kDgT",
    blue: "bkdtg_2sTHk1Cz4mS7vQy3pL6iHd9fNaW",
    green: "bkdtg_2sTHp8Gu2rA5wTx1jO4eVn7bXsK",
  },
} as const;
type EnvName = keyof typeof IDS;

/** The writes (method and path) of a spawned server's request log. */
function writesOf(server: SpawnedServer): string[] {
  return server
    .stderr()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { method?: string; path?: string })
    .filter((l) => l.method !== undefined && l.method !== "GET")
    .map((l) => `${l.method} ${l.path}`);
}

async function get(server: SpawnedServer, path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${server.apiKey}`, "ngrok-version": "2" } });
  expect(res.status, path).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

describe("environments: one manifest folder, two APIs", () => {
  const dir = tempDir("environments");
  const servers = {} as Record<EnvName, SpawnedServer>;
  let env: Record<string, string>;

  beforeAll(async () => {
    cpSync(join(EXAMPLE, "manifests"), join(dir.path, "manifests"), { recursive: true });
    const started = await Promise.all((["staging", "production"] as const).map((name) => spawnServer(["--fixtures", join(EXAMPLE, `fixtures-${name}.yaml`)])));
    [servers.staging, servers.production] = started as [SpawnedServer, SpawnedServer];
    // The example's project file as it is, but for the ports the two servers listen on.
    const project = readFileSync(join(EXAMPLE, "edgeplan.yaml"), "utf8")
      .replace("http://127.0.0.1:4781", servers.staging.url)
      .replace("http://127.0.0.1:4782", servers.production.url);
    writeFileSync(join(dir.path, "edgeplan.yaml"), project);
    env = { EDGEPLAN_API_KEY_STAGING: servers.staging.apiKey, EDGEPLAN_API_KEY_PROD: servers.production.apiKey };
  });
  afterAll(async () => {
    await Promise.all(Object.values(servers).map((s) => s?.stop()));
    dir.remove();
  });

  const edgeplan = (args: string[], extra: Record<string, string> = {}) => runEdgeplan(args, { cwd: dir.path, env: { ...env, ...extra } });

  it("refuses a command that names no environment, or one the file does not define, listing them; nothing is sent", async () => {
    expect(await edgeplan(["plan"])).toMatchObject({
      code: 1,
      stdout: "",
      stderr: "edgeplan: edgeplan.yaml defines 2 environments (staging, production): choose one with --env NAME or EDGEPLAN_ENV\n",
    });
    expect(await edgeplan(["apply", "--env", "qa", "--auto-approve"])).toMatchObject({
      code: 1,
      stdout: "",
      stderr: "edgeplan: --env qa: no such environment in edgeplan.yaml; the environments are staging, production\n",
    });
    expect(await edgeplan(["validate"], { EDGEPLAN_ENV: "prod" })).toMatchObject({
      code: 1,
      stderr: "edgeplan: EDGEPLAN_ENV prod: no such environment in edgeplan.yaml; the environments are staging, production\n",
    });
    expect([...writesOf(servers.staging), ...writesOf(servers.production)]).toEqual([]);
  });

  it("a plan saved in staging is refused in production before any request: exit 1, both named, nothing written", async () => {
    const saved = await edgeplan(["plan", "--env", "staging", "--out", "staging.json"]);
    expect(saved.code, saved.stderr).toBe(0);
    const plan = JSON.parse(readFileSync(join(dir.path, "staging.json"), "utf8")) as { environment: unknown; stack: string };
    expect(plan.environment).toEqual({ name: "staging", api_url: servers.staging.url });
    expect(plan.stack).toBe("web-staging");

    const logged = servers.production.stderr().length;
    const run = await edgeplan(["apply", "--plan", "staging.json", "--env", "production", "--auto-approve"]);
    expect(run).toMatchObject({
      code: 1,
      stdout: "",
      stderr:
        "edgeplan: --plan staging.json: the plan was made for environment staging, and --env names production; nothing was sent. " +
        "apply --plan takes the environment from the plan: leave out --env to apply it in staging, or make a plan for production: " +
        "edgeplan plan --env production --out staging-production.json\n",
    });
    // Not a request of any kind reached production: the check comes before the client is made.
    expect(servers.production.stderr().slice(logged)).toBe("");
    expect((await get(servers.production, "/backends/weighted")).backends).toEqual([]);
    // The log records requests (the listing just above, logged once answered), and it holds no write.
    for (let i = 0; i < 100 && !servers.production.stderr().slice(logged).includes('"path":"/backends/weighted"'); i++) await new Promise((r) => setTimeout(r, 20));
    expect(servers.production.stderr().slice(logged)).toContain('"method":"GET","path":"/backends/weighted"');
    expect(writesOf(servers.production)).toEqual([]);
  });

  it("plans each environment with its ids and says which one and which API at the top of every format", async () => {
    const { staging, production } = servers;
    const text = await edgeplan(["plan", "--env", "staging"]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.split("\n").slice(0, 2)).toEqual([`Environment staging: API ${staging.url}, stack "web-staging".`, ""]);
    expect(text.stdout).toContain(`${IDS.staging.blue}`);
    expect(text.stdout).not.toContain(IDS.production.blue);

    const markdown = await edgeplan(["plan", "--format", "markdown"], { EDGEPLAN_ENV: "production" });
    expect(markdown.stdout.split("\n").slice(0, 3)).toEqual(["### edgeplan plan: environment `production`, stack `web-production`", "", `API: \`${production.url}\``]);
    expect(markdown.stdout).toContain(IDS.production.route);

    const json = JSON.parse((await edgeplan(["plan", "--env", "production", "--format", "json"])).stdout) as { environment: unknown; changes: Array<{ address: string }> };
    expect(json.environment).toEqual({ name: "production", api_url: production.url });
    expect(json.changes.map((c) => c.address)).toEqual([
      `edge_route.${IDS.production.edge}/${IDS.production.route}.circuit_breaker`,
      "inventory.web-production#1",
      "weighted_backend.web",
    ]);

    const html = (await edgeplan(["plan", "--env", "staging", "--format", "html"])).stdout;
    expect(html).toContain("<title>edgeplan plan: staging, stack web-staging</title>");
    const at = /<time datetime="([^"]+)">/.exec(html)?.[1] as string;
    expect(Date.parse(at)).toBeGreaterThan(Date.now() - 60_000);
    expect(html).toContain(
      `<p class="muted environment">environment <code>staging</code>, API <code>${staging.url}</code>, stack <code>web-staging</code>, planned at <time datetime="${at}">${at}</time></p>`,
    );
  });

  it("a policy limited to production judges production's plans only, and reads the environment's name and vars", async () => {
    const project = join(dir.path, "edgeplan.yaml");
    const original = readFileSync(project, "utf8");
    writeFileSync(
      project,
      original +
        "policies:\n" +
        "  - name: two-live-children\n    description: A production split keeps at least two children with traffic.\n    level: deny\n" +
        "    match: {kinds: [weighted_backend], environments: [production]}\n" +
        "    expression: 'change.after.backends.filter(k, change.after.backends[k] > 0).size() >= 2'\n" +
        "  - name: blue-is-live\n    description: The environment's blue child takes the traffic.\n    level: warn\n" +
        "    match: {kinds: [weighted_backend]}\n" +
        '    expression: \'env.name in ["staging", "production"] && change.after.backends[env.vars.blue] == 10000\'\n',
    );
    try {
      const staging = await edgeplan(["plan", "--env", "staging", "--format", "json"]);
      expect(staging.code, staging.stderr).toBe(0);
      const judged = JSON.parse(staging.stdout) as { policies: unknown };
      expect(judged.policies).toEqual({ rules: 2, evaluated: 1, passed: 1, results: [] });
      const production = await edgeplan(["plan", "--env", "production"]);
      expect(production.code).toBe(1);
      expect(production.stdout).toContain("two-live-children");
      expect(production.stdout).toContain("A production split keeps at least two children with traffic.");
      expect(production.stdout).not.toContain("blue-is-live");
      expect([...writesOf(servers.staging), ...writesOf(servers.production)]).toEqual([]);
    } finally {
      writeFileSync(project, original);
    }
  });
  it("applies each environment to its own API; each server holds its environment's objects and nothing of the other's", async () => {
    for (const name of ["staging", "production"] as const) {
      const run = await edgeplan(["apply", "--env", name, "--auto-approve"]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout.split("\n")[0]).toBe(`Environment ${name}: API ${servers[name].url}, stack "web-${name}".`);
    }
    for (const name of ["staging", "production"] as const) {
      const ids = IDS[name];
      const listed = (await get(servers[name], "/backends/weighted")).backends as Array<{ description: string; metadata: string; backends: Record<string, number> }>;
      const web = listed.filter((wb) => wb.description === "Web, blue/green");
      expect(web).toHaveLength(1);
      expect(web[0]?.backends).toEqual({ [ids.blue]: 10000, [ids.green]: 0 });
      expect(JSON.parse(web[0]?.metadata ?? "{}")).toEqual({ edgeplan: { name: "web", stack: `web-${name}` } });
      const edge = (await get(servers[name], `/edges/https/${ids.edge}`)) as { routes: Array<{ id: string; circuit_breaker: Record<string, unknown> | null }> };
      expect(edge.routes.find((r) => r.id === ids.route)?.circuit_breaker).toMatchObject({ tripped_duration: 30, error_threshold_percentage: 0.5 });
    }
    // Planned again, each environment has nothing left to do.
    for (const name of ["staging", "production"] as const) {
      const again = await edgeplan(["plan", "--env", name, "--detailed-exitcode"]);
      expect(again.code, again.stdout).toBe(0);
    }
  });
});

describe("variables of an environment in the manifests", () => {
  const dir = tempDir("environment-vars");
  afterAll(() => dir.remove());

  it("a variable the environment lacks is an error at its line naming it, the environment and its vars; a key that becomes a bad id is refused at the key", async () => {
    writeFileSync(
      join(dir.path, "edgeplan.yaml"),
      "environments:\n  staging:\n    api_url: http://127.0.0.1:9\n    vars:\n      blue: bkdtg_2sTGj3Hv8yN1qPz6mR4eKc7wLbU\n      broken: bkdtg_short\n",
    );
    writeFileSync(join(dir.path, "web.yaml"), "kind: WeightedBackend\nname: web\nbackends:\n  ${var.blue}: 9000\n  ${var.green}: 1000\n");
    const missing = await runEdgeplan(["plan", "web.yaml"], { cwd: dir.path, env: { EDGEPLAN_API_KEY: "k" } });
    expect(missing).toMatchObject({
      code: 1,
      stdout: "",
      stderr:
        "web.yaml:5:3: ${var.green}: environment staging has no variable green (its vars: blue, broken); add it under environments.staging.vars in edgeplan.yaml\n" +
        "edgeplan: 1 error in the manifests; nothing was sent to the API but the listings of its weighted backends and edges\n",
    });

    writeFileSync(join(dir.path, "web.yaml"), "kind: WeightedBackend\nname: web\nbackends:\n  ${var.blue}: 9000\n  ${var.broken}: 1000\n");
    const bad = await runEdgeplan(["validate", "web.yaml"], { cwd: dir.path });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^web\.yaml:5:3: backends: key "bkdtg_short" is not a well-formed backend id; /);
  });

  it("with no environment defined, ${var.NAME} says to define one", async () => {
    writeFileSync(join(dir.path, "edgeplan.yaml"), "stack: web\n");
    writeFileSync(join(dir.path, "web.yaml"), "kind: WeightedBackend\nname: web\nbackends:\n  ${var.blue}: 1\n");
    expect(await runEdgeplan(["validate", "web.yaml"], { cwd: dir.path })).toMatchObject({
      code: 1,
      stderr: "web.yaml:4:3: ${var.blue}: no environment is chosen, so there are no vars; define environments: with vars in edgeplan.yaml and pass --env NAME\n",
    });
    expect(await runEdgeplan(["validate", "--env", "staging", "web.yaml"], { cwd: dir.path })).toMatchObject({
      code: 1,
      stderr: "edgeplan: --env staging: edgeplan.yaml defines no environments; add it under environments: in edgeplan.yaml, or leave out --env\n",
    });
  });
});
