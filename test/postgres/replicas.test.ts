/**
 * Several replicas of `edgeplan serve --database URL` (the built CLI, each its own process) on one PostgreSQL
 * database act as one API: start-up migrates and loads fixtures once, what one replica writes the other reads and
 * pages, concurrent writes to one object leave one whole body, a replica killed in a burst of writes loses no
 * acknowledged write, and the rate limit is one budget across replicas. Runs in the `postgres` project only.
 */
import { readFileSync } from "node:fs";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { apiClient, fakeId, freshDatabase, runCli, spawnServer, type ApiClient, type SpawnedServer } from "../helpers/server.js";

const FIXTURES = new URL("../server/fixtures/fixtures.yaml", import.meta.url).pathname;
const IDP = readFileSync(new URL("../server/fixtures/idp-metadata.xml", import.meta.url), "utf8");
const KEY = "ep_test_replicas_key";
const running: SpawnedServer[] = [];
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
});

async function replica(database: string, args: string[] = [], env: Record<string, string> = {}): Promise<SpawnedServer> {
  const s = await spawnServer(["--quiet", "--pool-size", "4", "--database", database, ...args], env, { apiKey: KEY });
  running.push(s);
  return s;
}

async function sql<R extends pg.QueryResultRow>(database: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Every weighted backend of the key's account, page by page (limit 10), as the API lists them. */
async function listAll(api: ApiClient): Promise<string[]> {
  const ids: string[] = [];
  let path: string | null = "/backends/weighted?limit=10";
  for (let page = 0; path !== null && page < 1000; page++) {
    const r = await api.get(path);
    expect(r.status).toBe(200);
    ids.push(...r.json.backends.map((b: { id: string }) => b.id));
    path = r.json.next_page_uri === null ? null : (r.json.next_page_uri as string).replace(api.url, "");
  }
  return ids;
}

describe("start-up", () => {
  it("migrates once and loads fixtures once when three replicas start together, and again changes nothing", async () => {
    const db = await freshDatabase();
    const three = await Promise.all([0, 1, 2].map(() => replica(db, ["--fixtures", FIXTURES])));
    const created = three.map((s) => Number(/\((\d+) created now/.exec(s.stderr())?.[1]));
    expect(created.reduce((a, b) => a + b, 0)).toBe(10);
    expect(created.filter((n) => n === 10)).toHaveLength(1);
    expect(await sql(db, "SELECT version FROM edgeplan_schema")).toEqual([{ version: 2 }]);
    for (const s of three) expect((await apiClient(s.url, KEY).get("/edges/https")).json.https_edges).toHaveLength(2);
    const again = await replica(db, ["--fixtures", FIXTURES]);
    expect(again.stderr()).toContain("(0 created now, 10 already there)");
    expect((await sql<{ n: number }>(db, "SELECT count(*)::int AS n FROM edges"))[0]?.n).toBe(2);
  });

  it("refuses a database whose schema is newer than it knows, changing nothing", async () => {
    const db = await freshDatabase();
    await (await replica(db)).stop();
    await sql(db, "UPDATE edgeplan_schema SET version = 99");
    const r = await runCli(["serve", "--port", "0", "--api-key", KEY, "--database", db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("edgeplan: the database has edgeplan schema 99, newer than this edgeplan knows (2); upgrade edgeplan, or point --database at another database\n");
    expect(await sql(db, "SELECT version FROM edgeplan_schema")).toEqual([{ version: 99 }]);
  });

  it("brings a database of schema 1 to 2: its child backends are read with their fields empty", async () => {
    const db = await freshDatabase();
    await (await replica(db, ["--fixtures", FIXTURES])).stop();
    await sql(db, "ALTER TABLE fixture_backends DROP COLUMN fields");
    await sql(db, "UPDATE edgeplan_schema SET version = 1");
    const s = await replica(db);
    expect(await sql(db, "SELECT version FROM edgeplan_schema")).toEqual([{ version: 2 }]);
    const id = "bkdhr_000000000000000000000000001";
    const r = await apiClient(s.url, KEY).get(`/backends/http_response/${id}`);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ id, description: "", metadata: "", body: "", headers: {}, status_code: 200 });
  });

  it("takes the URL from EDGEPLAN_SERVE_DATABASE_URL and says which store and limits it runs with", async () => {
    const db = await freshDatabase();
    const s = await spawnServer(["--rate-limit", "100/1s"], { EDGEPLAN_SERVE_DATABASE_URL: db }, { apiKey: KEY });
    running.push(s);
    expect(s.stderr()).toContain("store: PostgreSQL (10 connections); --rate-limit is shared by every replica of the database, --max-inflight counts per replica");
    expect((await apiClient(s.url, KEY).post("/backends/weighted", { backends: {} })).status).toBe(201);
    expect((await sql<{ n: number }>(db, "SELECT count(*)::int AS n FROM weighted_backends"))[0]?.n).toBe(1);
  });
});

describe("two replicas on one database", () => {
  it("create on one, read, list and page on the other: one list, newest first, ids unique", async () => {
    const db = await freshDatabase();
    const [a, b] = [apiClient((await replica(db)).url, KEY), apiClient((await replica(db)).url, KEY)];
    const made: string[] = [];
    for (let i = 0; i < 25; i++) {
      const r = await (i % 2 === 0 ? a : b).post("/backends/weighted", { backends: {}, description: `made ${i}` });
      expect(r.status).toBe(201);
      made.push(r.json.id as string);
    }
    expect((await b.get(`/backends/weighted/${made[0]}`)).json.description).toBe("made 0");
    expect((await a.get(`/backends/weighted/${made[1]}`)).json.description).toBe("made 1");
    expect(await listAll(b)).toEqual([...made].reverse());
    expect(await listAll(a)).toEqual([...made].reverse());
    // Created at once through both: still unique, and the list is sorted.
    const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).post("/backends/weighted", { backends: {} })));
    const all = await listAll(a);
    expect(all).toHaveLength(65);
    expect(new Set(all).size).toBe(65);
    expect([...all].sort().reverse()).toEqual(all);
    for (const r of burst) expect(all).toContain(r.json.id);
  });

  it("concurrent PATCHes of one object through both leave one whole body, children included", async () => {
    const db = await freshDatabase();
    const [a, b] = [apiClient((await replica(db, ["--fixtures", FIXTURES])).url, KEY), apiClient((await replica(db)).url, KEY)];
    const weighted = async (): Promise<string> => (await b.post("/backends/weighted", { backends: {} })).json.id as string;
    const [c1, c2, c3, c4] = [fakeId("bkdhr", 1), await weighted(), await weighted(), await weighted()];
    const id = (await a.post("/backends/weighted", { backends: {} })).json.id as string;
    for (let round = 0; round < 20; round++) {
      const x = { description: `a ${round}`, metadata: `{"from":"a","round":${round}}`, backends: { [c1 as string]: round, [c2 as string]: 1 } };
      const y = { description: `b ${round}`, metadata: `{"from":"b","round":${round}}`, backends: { [c3 as string]: round, [c4 as string]: 2 } };
      const [ra, rb] = await Promise.all([a.patch(`/backends/weighted/${id}`, x), b.patch(`/backends/weighted/${id}`, y)]);
      expect([ra.status, rb.status]).toEqual([200, 200]);
      const got = (await b.get(`/backends/weighted/${id}`)).json;
      const whole = { description: got.description, metadata: got.metadata, backends: got.backends };
      expect([x, y]).toContainEqual(whole);
      const children = await sql<{ child: string }>(db, "SELECT child FROM backend_children WHERE parent = $1 ORDER BY child", [id]);
      expect(children.map((r) => r.child)).toEqual(Object.keys(whole.backends).sort());
    }
  });

  it("two PATCHes that would close a loop through both replicas: exactly one succeeds", async () => {
    const db = await freshDatabase();
    const [a, b] = [apiClient((await replica(db)).url, KEY), apiClient((await replica(db)).url, KEY)];
    for (let round = 0; round < 10; round++) {
      const p = (await a.post("/backends/weighted", { backends: {} })).json.id as string;
      const q = (await b.post("/backends/weighted", { backends: {} })).json.id as string;
      const [ra, rb] = await Promise.all([a.patch(`/backends/weighted/${p}`, { backends: { [q]: 1 } }), b.patch(`/backends/weighted/${q}`, { backends: { [p]: 1 } })]);
      expect([ra.status, rb.status].sort()).toEqual([200, 400]);
      expect([ra, rb].find((r) => r.status === 400)?.json.error_code).toBe("ERR_NGROK_6524");
    }
  });

  it("SIGKILL of one replica in a burst of writes loses no acknowledged write", async () => {
    const db = await freshDatabase();
    const doomed = await replica(db);
    const survivor = apiClient((await replica(db)).url, KEY);
    const api = apiClient(doomed.url, KEY);
    const acknowledged: string[] = [];
    let failed = 0;
    const worker = async (w: number): Promise<void> => {
      for (let i = 0; i < 100; i++) {
        try {
          const r = await api.post("/backends/weighted", { backends: {}, description: `burst ${w}.${i}` });
          if (r.status === 201) acknowledged.push(r.json.id as string);
        } catch {
          failed++;
          return;
        }
      }
    };
    const burst = Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(worker));
    for (let i = 0; i < 500 && acknowledged.length < 60; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    await doomed.kill9();
    await burst;
    expect(doomed.proc.signalCode).toBe("SIGKILL");
    expect(failed).toBeGreaterThan(0);
    expect(acknowledged.length).toBeGreaterThanOrEqual(60);
    const listed = new Set(await listAll(survivor));
    expect(acknowledged.filter((id) => !listed.has(id))).toEqual([]);
  });

  it("--rate-limit is one budget per account across replicas: 10/5s admits 10 requests, not 20", async () => {
    const db = await freshDatabase();
    const [a, b] = [apiClient((await replica(db, ["--rate-limit", "10/5s"])).url, KEY), apiClient((await replica(db, ["--rate-limit", "10/5s"])).url, KEY)];
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await (i % 2 === 0 ? a : b).get("/backends/weighted")).status);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(200));
    expect(statuses.slice(10)).toEqual(Array(10).fill(429));
    const refused = await b.get("/backends/weighted");
    expect(refused.json.error_code).toBe("ERR_NGROK_226");
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers["retry-after"])).toBeLessThanOrEqual(5);
  });

  it("keeps the SAML certificate and never the private key in the database", async () => {
    const db = await freshDatabase();
    const [a, b] = [apiClient((await replica(db, ["--fixtures", FIXTURES])).url, KEY), apiClient((await replica(db)).url, KEY)];
    const path = `/edges/https/${fakeId("edghts", 1)}/routes/${fakeId("edghtsrt", 1)}/saml`;
    const put = await a.put(path, { idp_metadata: IDP });
    expect(put.status).toBe(200);
    expect((await b.get(path)).json.request_signing_certificate_pem).toBe(put.json.request_signing_certificate_pem);
    const [row] = await sql<{ saml: string }>(db, "SELECT saml FROM routes WHERE id = $1", [fakeId("edghtsrt", 1)]);
    expect(row?.saml).toContain("BEGIN CERTIFICATE");
    expect(row?.saml).not.toContain("PRIVATE KEY");
    expect(JSON.parse(row?.saml ?? "{}")).not.toHaveProperty("private_key_pem");
  });
});
