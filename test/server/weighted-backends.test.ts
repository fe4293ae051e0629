/**
 * Weighted backends (docs/api.md section 1) over raw HTTP: every operation, the rules 1-4, the limits, and account
 * isolation. What the server holds afterwards is read back through the API (and the store where the API cannot
 * show it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, fakeId, startTestServer, type ApiClient, type HttpResponse, type TestServer } from "../helpers/server.js";

const HR = fakeId("bkdhr", 1);
const TG = fakeId("bkdtg", 1);
const FO = fakeId("bkdfo", 1);
const SC = fakeId("bkdsc", 1);

let s: TestServer;
let api: ApiClient;
let other: ApiClient;
const OTHER_KEY = "ep_test_other_account_key";

beforeAll(async () => {
  s = await startTestServer({
    apiKeys: [OTHER_KEY],
    fixtures: {
      backends: [
        { id: HR, type: "http_response" },
        { id: TG, type: "tunnel_group" },
        { id: FO, type: "failover" },
        { id: SC, type: "static_address" },
      ],
    },
  });
  api = apiClient(s.url, s.apiKey);
  other = apiClient(s.url, OTHER_KEY);
});
afterAll(() => s.close());

async function create(body: Record<string, unknown>): Promise<string> {
  const r = await api.post("/backends/weighted", body);
  expect(r.status, r.text).toBe(201);
  return r.json.id as string;
}

function expectError(r: HttpResponse, status: number, code: string, field?: string): void {
  expect(r.status, r.text).toBe(status);
  expect(r.json.error_code).toBe(code);
  expect(r.json.details.operation_id).toBe(r.headers["ngrok-operation-id"]);
  if (field !== undefined) {
    expect(r.json.details.field).toBe(field);
    expect(r.json.msg).toContain(field);
  }
}

describe("create, get, list, update, delete", () => {
  it("creates with every field and answers the full object", async () => {
    const r = await api.post("/backends/weighted", {
      description: "checkout canary",
      metadata: '{"team":"payments"}',
      backends: { [HR]: 9000, [TG]: 1000 },
    });
    expect(r.status).toBe(201);
    expect(Object.keys(r.json)).toEqual(["id", "uri", "created_at", "description", "metadata", "backends"]);
    expect(r.json).toEqual({
      id: expect.stringMatching(/^bkdwd_[0-9A-Za-z]{27}$/),
      uri: `${s.url}/backends/weighted/${r.json.id}`,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/),
      description: "checkout canary",
      metadata: '{"team":"payments"}',
      backends: { [HR]: 9000, [TG]: 1000 },
    });
    const got = await api.get(`/backends/weighted/${r.json.id}`);
    expect(got.status).toBe(200);
    expect(got.json).toEqual(r.json);
  });

  it("fills description and metadata with empty strings and takes an empty map", async () => {
    const r = await api.post("/backends/weighted", { backends: {} });
    expect(r.status).toBe(201);
    expect(r.json.description).toBe("");
    expect(r.json.metadata).toBe("");
    expect(r.json.backends).toEqual({});
  });

  it("requires backends on create (ERR_NGROK_215)", async () => {
    expectError(await api.post("/backends/weighted", { description: "x" }), 400, "ERR_NGROK_215", "backends");
    expectError(await api.post("/backends/weighted", { backends: [HR] }), 400, "ERR_NGROK_215", "backends");
  });

  it("refuses the generated fields on create (ERR_NGROK_214)", async () => {
    for (const field of ["id", "uri", "created_at"]) {
      expectError(await api.post("/backends/weighted", { backends: {}, [field]: "x" }), 400, "ERR_NGROK_214", field);
    }
  });

  it("lists what was created, newest first", async () => {
    const a = await create({ backends: {}, description: "list-a" });
    const b = await create({ backends: {}, description: "list-b" });
    const r = await api.get("/backends/weighted");
    expect(r.status).toBe(200);
    expect(r.json.uri).toBe(`${s.url}/backends/weighted`);
    expect(r.json.next_page_uri).toBeNull();
    const ids = (r.json.backends as { id: string }[]).map((x) => x.id);
    expect(ids.indexOf(b)).toBeLessThan(ids.indexOf(a));
    expect(ids.indexOf(a)).toBeGreaterThanOrEqual(0);
    expect([...ids].sort().reverse()).toEqual(ids);
  });

  it("PATCH leaves absent fields unchanged, except backends, which an absent value empties", async () => {
    const created = await api.post("/backends/weighted", { description: "keep me", metadata: "m1", backends: { [HR]: 5 } });
    const id = created.json.id as string;
    const r = await api.patch(`/backends/weighted/${id}`, { metadata: "m2" });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ...created.json, metadata: "m2", backends: {} });
    expect((await api.get(`/backends/weighted/${id}`)).json).toEqual(r.json);
  });

  it("PATCH replaces the whole map when backends is sent, and keeps created_at", async () => {
    const created = await api.post("/backends/weighted", { backends: { [HR]: 5, [TG]: 6 } });
    const id = created.json.id as string;
    const r = await api.patch(`/backends/weighted/${id}`, { id, description: "now", backends: { [FO]: 7, [SC]: 0 } });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ...created.json, description: "now", backends: { [FO]: 7, [SC]: 0 } });
  });

  it("PATCH refuses an id in the body that is not the path id (ERR_NGROK_215), and generated fields (ERR_NGROK_214)", async () => {
    const id = await create({ backends: {}, description: "orig" });
    expectError(await api.patch(`/backends/weighted/${id}`, { id: fakeId("bkdwd", 5), description: "x" }), 400, "ERR_NGROK_215", "id");
    expectError(await api.patch(`/backends/weighted/${id}`, { created_at: "2020-01-01T00:00:00Z" }), 400, "ERR_NGROK_214", "created_at");
    expectError(await api.patch(`/backends/weighted/${id}`, { uri: "x" }), 400, "ERR_NGROK_214", "uri");
    expect((await api.get(`/backends/weighted/${id}`)).json.description).toBe("orig");
  });

  it("PATCH and DELETE of an id that does not exist answer 404 ERR_NGROK_404", async () => {
    const id = fakeId("bkdwd", 424242);
    expectError(await api.patch(`/backends/weighted/${id}`, { description: "x" }), 404, "ERR_NGROK_404");
    expectError(await api.del(`/backends/weighted/${id}`), 404, "ERR_NGROK_404");
  });

  it("DELETE answers 204 with an empty body; the object is gone", async () => {
    const id = await create({ backends: { [HR]: 1 } });
    const r = await api.del(`/backends/weighted/${id}`);
    expect(r.status).toBe(204);
    expect(r.text).toBe("");
    expect(r.headers["content-type"]).toBeUndefined();
    expectError(await api.get(`/backends/weighted/${id}`), 404, "ERR_NGROK_404");
    expectError(await api.del(`/backends/weighted/${id}`), 404, "ERR_NGROK_404");
  });
});

describe("children (rule 1)", () => {
  it("takes weighted and every kind of fixture backend as children", async () => {
    const w = await create({ backends: {} });
    const r = await api.post("/backends/weighted", { backends: { [w]: 1, [HR]: 2, [TG]: 3, [FO]: 4, [SC]: 10000 } });
    expect(r.status).toBe(201);
    expect(r.json.backends).toEqual({ [w]: 1, [HR]: 2, [TG]: 3, [FO]: 4, [SC]: 10000 });
  });

  it("refuses a key that is not a backend id (ERR_NGROK_6526)", async () => {
    for (const key of ["checkout", "edghts_000000000000000000000000001", "bkdhr_short", "__proto__"]) {
      expectError(await api.post("/backends/weighted", { backends: { [key]: 1 } }), 400, "ERR_NGROK_6526", `backends.${key}`);
    }
  });

  it("refuses an id that does not exist (ERR_NGROK_6501)", async () => {
    for (const key of [fakeId("bkdhr", 77), fakeId("bkdwd", 77)]) {
      expectError(await api.post("/backends/weighted", { backends: { [key]: 1 } }), 400, "ERR_NGROK_6501", `backends.${key}`);
    }
  });

  it("refuses a weight that is not an integer 0..10000 (ERR_NGROK_6512)", async () => {
    for (const weight of [10001, -1, 1.5, "5", null, true]) {
      const r = await api.post("/backends/weighted", { backends: { [HR]: weight } });
      expectError(r, 400, "ERR_NGROK_6512", `backends.${HR}`);
    }
    const r = await api.post("/backends/weighted", { backends: { [HR]: 10001 } });
    expect(r.json.msg).toBe(`backends.${HR}: weight 10001 is out of range 0 to 10000`);
  });

  it("refuses a reference to itself and cycles, direct and indirect (ERR_NGROK_6524), changing nothing", async () => {
    const c = await create({ backends: { [HR]: 1 } });
    const b = await create({ backends: { [c]: 1 } });
    const a = await create({ backends: { [b]: 1 } });
    expectError(await api.patch(`/backends/weighted/${a}`, { backends: { [a]: 1 } }), 400, "ERR_NGROK_6524", `backends.${a}`);
    // direct: b -> a -> b
    const direct = await api.patch(`/backends/weighted/${b}`, { description: "changed", backends: { [a]: 1 } });
    expectError(direct, 400, "ERR_NGROK_6524", `backends.${a}`);
    // indirect: c -> a -> b -> c
    const indirect = await api.patch(`/backends/weighted/${c}`, { description: "changed", backends: { [HR]: 2, [a]: 1 } });
    expectError(indirect, 400, "ERR_NGROK_6524", `backends.${a}`);
    expect(indirect.json.msg).toContain(`${c} -> ${a} -> ${b} -> ${c}`);
    // Nothing changed (rule 4).
    expect((await api.get(`/backends/weighted/${b}`)).json).toMatchObject({ description: "", backends: { [c]: 1 } });
    expect((await api.get(`/backends/weighted/${c}`)).json).toMatchObject({ description: "", backends: { [HR]: 1 } });
    // A diamond is not a cycle.
    const d = await create({ backends: { [b]: 1, [c]: 1 } });
    expect((await api.patch(`/backends/weighted/${d}`, { backends: { [b]: 1, [c]: 2, [a]: 3 } })).status).toBe(200);
  });

  it("a rejected write changes nothing (rule 4)", async () => {
    const created = await api.post("/backends/weighted", { description: "before", metadata: "m", backends: { [HR]: 3 } });
    const id = created.json.id as string;
    const r = await api.patch(`/backends/weighted/${id}`, { description: "after", backends: { [HR]: 1, [fakeId("bkdtg", 99)]: 1 } });
    expectError(r, 400, "ERR_NGROK_6501");
    expect((await api.get(`/backends/weighted/${id}`)).json).toEqual(created.json);
  });
});

describe("delete while referenced (rule 3)", () => {
  it("answers 400 ERR_NGROK_6502 and deletes nothing; after the parent stops referencing it, deletes", async () => {
    const child = await create({ backends: { [HR]: 1 } });
    const parent = await create({ backends: { [child]: 1 } });
    const r = await api.del(`/backends/weighted/${child}`);
    expectError(r, 400, "ERR_NGROK_6502");
    expect(r.json.msg).toContain(parent);
    expect((await api.get(`/backends/weighted/${child}`)).status).toBe(200);
    expect((await api.patch(`/backends/weighted/${parent}`, { backends: { [HR]: 1 } })).status).toBe(200);
    expect((await api.del(`/backends/weighted/${child}`)).status).toBe(204);
  });

  it("a deleted parent no longer holds its children", async () => {
    const child = await create({ backends: {} });
    const parent = await create({ backends: { [child]: 1 } });
    expect((await api.del(`/backends/weighted/${parent}`)).status).toBe(204);
    expect((await api.del(`/backends/weighted/${child}`)).status).toBe(204);
  });
});

describe("limits", () => {
  it("description up to 255 bytes and metadata up to 4096 bytes; beyond: ERR_NGROK_215", async () => {
    expect((await api.post("/backends/weighted", { backends: {}, description: "é".repeat(127) + "a" })).status).toBe(201);
    expectError(await api.post("/backends/weighted", { backends: {}, description: "é".repeat(128) }), 400, "ERR_NGROK_215", "description");
    expect((await api.post("/backends/weighted", { backends: {}, metadata: "m".repeat(4096) })).status).toBe(201);
    expectError(await api.post("/backends/weighted", { backends: {}, metadata: "m".repeat(4097) }), 400, "ERR_NGROK_215", "metadata");
    const id = await create({ backends: {} });
    expectError(await api.patch(`/backends/weighted/${id}`, { description: "d".repeat(256) }), 400, "ERR_NGROK_215", "description");
  });

  it("at most 100 children (ERR_NGROK_6511)", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 101; i++) ids.push((await s.read((tx) => tx.ensureBackend(s.account, fakeId("bkdhr", 1000 + i)))).id);
    const hundred = Object.fromEntries(ids.slice(0, 100).map((id) => [id, 1]));
    expect((await api.post("/backends/weighted", { backends: hundred })).status).toBe(201);
    const r = await api.post("/backends/weighted", { backends: Object.fromEntries(ids.map((id) => [id, 1])) });
    expectError(r, 400, "ERR_NGROK_6511", "backends");
  });

  it("at most 10,000 weighted backends per account (ERR_NGROK_6511)", async () => {
    const full = await startTestServer();
    try {
      await full.read(async (tx) => {
        for (let i = await tx.countWeightedBackends(full.account); i < 9_999; i++) {
          const { id, created_at } = await tx.newId("bkdwd");
          await tx.insertWeightedBackend(full.account, { id, created_at, description: "", metadata: "", backends: {} });
        }
      });
      const c = apiClient(full.url, full.apiKey);
      expect((await c.post("/backends/weighted", { backends: {} })).status).toBe(201);
      const r = await c.post("/backends/weighted", { backends: {} });
      expectError(r, 400, "ERR_NGROK_6511");
      expect(await full.read((tx) => tx.countWeightedBackends(full.account))).toBe(10_000);
    } finally {
      await full.close();
    }
  });
});

describe("accounts", () => {
  it("another account's id answers 404 as an id that does not exist, and is never listed or usable", async () => {
    const theirs = await other.post("/backends/weighted", { backends: {}, description: "theirs" });
    expect(theirs.status).toBe(201);
    const id = theirs.json.id as string;
    expectError(await api.get(`/backends/weighted/${id}`), 404, "ERR_NGROK_404");
    expectError(await api.patch(`/backends/weighted/${id}`, { description: "mine" }), 404, "ERR_NGROK_404");
    expectError(await api.del(`/backends/weighted/${id}`), 404, "ERR_NGROK_404");
    expectError(await api.post("/backends/weighted", { backends: { [id]: 1 } }), 400, "ERR_NGROK_6501");
    const mine = (await api.get("/backends/weighted")).json.backends as { id: string }[];
    expect(mine.some((b) => b.id === id)).toBe(false);
    expect((await other.get("/backends/weighted")).json.backends).toEqual([theirs.json]);
    // The other account has no fixture backends: the first key's account got them.
    expectError(await other.post("/backends/weighted", { backends: { [HR]: 1 } }), 400, "ERR_NGROK_6501");
  });
});
