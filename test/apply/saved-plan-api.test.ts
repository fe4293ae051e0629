/**
 * A saved plan knows the API and account it was made for. Made against one `edgeplan serve`, applied to a second
 * one (another data file, another key), or to the same server with another account's key: refused with exit 1
 * before any write, naming both the plan's API and the current one; the other server's request log holds no
 * write and its objects are what they were.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { accountFingerprint } from "../../src/api/account.js";
import { randomKey, spawnServer, type SpawnedServer } from "../helpers/server.js";
import { runEdgeplan, tempDir } from "../reliability/cli.js";
import { FIXTURES_YAML, writeWorld } from "../reliability/world.js";

/** The writes (method and path) of a spawned server's request log. */
function writesOf(server: SpawnedServer): string[] {
  return server
    .stderr()
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { method: string; path: string })
    .filter((l) => l.method !== "GET")
    .map((l) => `${l.method} ${l.path}`);
}

async function list(server: SpawnedServer, key: string): Promise<unknown[]> {
  const res = await fetch(`${server.url}/backends/weighted?limit=100`, { headers: { authorization: `Bearer ${key}`, "ngrok-version": "2" } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { backends: unknown[] }).backends;
}

describe("apply --plan at another API or account", () => {
  const dir = tempDir("plan-api");
  const otherKey = randomKey();
  let a: SpawnedServer;
  let b: SpawnedServer;

  beforeAll(async () => {
    writeFileSync(join(dir.path, "fixtures.yaml"), FIXTURES_YAML);
    const fixtures = ["--fixtures", join(dir.path, "fixtures.yaml")];
    [a, b] = await Promise.all([
      spawnServer([...fixtures, "--data", join(dir.path, "a.db"), "--api-key", otherKey]),
      spawnServer([...fixtures, "--data", join(dir.path, "b.db")]),
    ]);
    writeWorld(dir.path, 0);
  });
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    dir.remove();
  });

  it("records the API's URL and the account's fingerprint, never the key", async () => {
    const made = await runEdgeplan(["plan", "manifests", "--out", "p.json"], { cwd: dir.path, env: { EDGEPLAN_API_URL: a.url, EDGEPLAN_API_KEY: a.apiKey } });
    expect(made.code, made.stderr).toBe(0);
    const text = readFileSync(join(dir.path, "p.json"), "utf8");
    const plan = JSON.parse(text) as { api: { url: string; account: string } };
    expect(plan.api).toEqual({ url: a.url, account: accountFingerprint(a.url, a.apiKey) });
    expect(text).not.toContain(a.apiKey);
  });

  it("another server: refused before any write, naming both; that server holds what it held", async () => {
    const before = await list(b, b.apiKey);
    const writesBefore = writesOf(b).length;
    const run = await runEdgeplan(["apply", "--plan", "p.json", "--auto-approve"], { cwd: dir.path, env: { EDGEPLAN_API_URL: b.url, EDGEPLAN_API_KEY: b.apiKey } });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `edgeplan: --plan p.json: the plan was made for another API: it was made for ${a.url} (account ${accountFingerprint(a.url, a.apiKey).slice(0, 12)}), ` +
        `and this apply talks to ${b.url} (account ${accountFingerprint(b.url, b.apiKey).slice(0, 12)}); nothing was sent. ` +
        "Apply it with the --api-url and API key it was made with, or make a plan for this API: edgeplan plan --out p-new.json\n",
    );
    expect(await list(b, b.apiKey)).toEqual(before);
    // The log is there (the listings above are in it), and it holds no write.
    expect(b.stderr()).toMatch(/"method":"GET","path":"\/backends\/weighted"/);
    expect(writesOf(b).slice(writesBefore)).toEqual([]);
  });

  it("the same server with another account's key: refused, nothing written", async () => {
    const writesBefore = writesOf(a).length;
    const run = await runEdgeplan(["apply", "--plan", "p.json", "--auto-approve"], { cwd: dir.path, env: { EDGEPLAN_API_URL: a.url, EDGEPLAN_API_KEY: otherKey } });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `edgeplan: --plan p.json: the plan was made for another account (another API key): it was made for ${a.url} (account ${accountFingerprint(a.url, a.apiKey).slice(0, 12)}), ` +
        `and this apply talks to ${a.url} (account ${accountFingerprint(a.url, otherKey).slice(0, 12)}); nothing was sent. ` +
        "Apply it with the --api-url and API key it was made with, or make a plan for this API: edgeplan plan --out p-new.json\n",
    );
    expect(writesOf(a).slice(writesBefore)).toEqual([]);
    expect(await list(a, otherKey)).toEqual([]);
  });

  it("a plan without its API (stdout's JSON, or the field removed) is refused; with it, the plan applies where it was made", async () => {
    const plan = JSON.parse(readFileSync(join(dir.path, "p.json"), "utf8")) as Record<string, unknown>;
    delete plan.api;
    writeFileSync(join(dir.path, "bare.json"), JSON.stringify(plan));
    const env = { EDGEPLAN_API_URL: a.url, EDGEPLAN_API_KEY: a.apiKey };
    const bare = await runEdgeplan(["apply", "--plan", "bare.json", "--auto-approve"], { cwd: dir.path, env });
    expect(bare.code).toBe(1);
    expect(bare.stderr).toBe(
      "edgeplan: --plan bare.json: the plan does not say which API and account it was made for (only plan --out records them), so it could be applied to the wrong one; " +
        "make it with: edgeplan plan --out bare.json\n",
    );
    const ok = await runEdgeplan(["apply", "--plan", "p.json", "--auto-approve"], { cwd: dir.path, env });
    expect(ok.code, ok.stderr).toBe(0);
  });
});
