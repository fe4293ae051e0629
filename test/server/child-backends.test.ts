/**
 * The child backends' reads (docs/api.md section 2): get and list of the four fixture types over real sockets, with
 * the fields their fixtures gave and empty values for the rest, the paging of every list, 404 for an id the account
 * does not hold, and the same auth as every other request. Runs on both stores.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, fakeId, http, randomKey, startTestServer, type ApiClient, type TestServer } from "../helpers/server.js";

const HR = fakeId("bkdhr", 1);
const TG = fakeId("bkdtg", 1);
const FO = fakeId("bkdfo", 1);
const SC = fakeId("bkdsc", 1);
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

let s: TestServer;
let api: ApiClient;
/** Ids of the 23 id-less http response backends, in creation order. */
let created: string[];

beforeAll(async () => {
  s = await startTestServer({
    fixtures: {
      backends: [
        {
          id: HR,
          type: "http_response",
          description: "maintenance page",
          metadata: '{"team":"web"}',
          body: "down for maintenance",
          headers: { "retry-after": "60" },
          status_code: 503,
        },
        { id: TG, type: "tunnel_group", labels: { env: "prod" } },
        { id: FO, type: "failover", backends: [HR, TG] },
        { id: SC, type: "static_address", address: "10.0.0.1:443", tls: { enabled: true } },
        ...Array.from({ length: 23 }, () => ({ type: "http_response" as const })),
      ],
    },
  });
  api = apiClient(s.url, s.apiKey);
  const all: string[] = [];
  let path: string | null = "/backends/http_response";
  while (path !== null) {
    const r = await api.get(path);
    all.push(...(r.json.backends as { id: string }[]).map((b) => b.id));
    path = r.json.next_page_uri === null ? null : (r.json.next_page_uri as string).slice(s.url.length);
  }
  created = all.filter((id) => id !== HR).reverse();
});
afterAll(() => s.close());

describe("get", () => {
  it("answers each type with its fields in the API's order, as its fixture gave them", async () => {
    const hr = await api.get(`/backends/http_response/${HR}`);
    expect(hr.status, hr.text).toBe(200);
    expect(Object.keys(hr.json)).toEqual(["id", "uri", "created_at", "description", "metadata", "body", "headers", "status_code"]);
    expect(hr.json).toMatchObject({
      id: HR,
      uri: `${s.url}/backends/http_response/${HR}`,
      description: "maintenance page",
      metadata: '{"team":"web"}',
      body: "down for maintenance",
      headers: { "retry-after": "60" },
      status_code: 503,
    });
    expect(hr.json.created_at).toMatch(RFC3339);

    const tg = await api.get(`/backends/tunnel_group/${TG}`);
    expect(tg.status).toBe(200);
    expect(tg.json).toEqual({
      id: TG,
      uri: `${s.url}/backends/tunnel_group/${TG}`,
      created_at: tg.json.created_at,
      description: "",
      metadata: "",
      labels: { env: "prod" },
      tunnels: [],
    });

    const fo = await api.get(`/backends/failover/${FO}`);
    expect(fo.json).toEqual({ id: FO, uri: `${s.url}/backends/failover/${FO}`, created_at: fo.json.created_at, description: "", metadata: "", backends: [HR, TG] });

    const sc = await api.get(`/backends/static/${SC}`);
    expect(sc.json).toEqual({
      id: SC,
      uri: `${s.url}/backends/static/${SC}`,
      created_at: sc.json.created_at,
      description: "",
      metadata: "",
      address: "10.0.0.1:443",
      tls: { enabled: true },
    });
  });

  it("answers the fields a fixture left out with empty values, status 200", async () => {
    const r = await api.get(`/backends/http_response/${created[0]}`);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ description: "", metadata: "", body: "", headers: {}, status_code: 200 });
  });

  it("answers 404 ERR_NGROK_404 for an id the account does not hold, naming it", async () => {
    const missing = fakeId("bkdhr", 999);
    const r = await api.get(`/backends/http_response/${missing}`);
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({
      error_code: "ERR_NGROK_404",
      status_code: 404,
      msg: `HTTP response backend ${missing} was not found in this account; check the id`,
      details: { resource: missing },
    });
    const other = await startTestServer({ fixtures: { backends: [{ id: SC, type: "static_address" }] } });
    try {
      // Another account holds it: the same answer as an id nobody holds.
      const theirs = await api.get(`/backends/failover/${FO}`);
      expect(theirs.status).toBe(200);
      const r2 = await apiClient(other.url, other.apiKey).get(`/backends/failover/${FO}`);
      expect(r2.status).toBe(404);
      expect(r2.json.error_code).toBe("ERR_NGROK_404");
    } finally {
      await other.close();
    }
  });

  it("answers 404 ERR_NGROK_222 for an id of another type's prefix or a malformed one", async () => {
    for (const path of [`/backends/static/${HR}`, `/backends/tunnel_group/${FO}`, "/backends/failover/bkdfo_short"]) {
      const r = await api.get(path);
      expect(r.status, path).toBe(404);
      expect(r.json.error_code, path).toBe("ERR_NGROK_222");
    }
  });

  it("takes no query parameters and no other method", async () => {
    const q = await api.get(`/backends/http_response/${HR}?limit=1`);
    expect(q.status).toBe(400);
    expect(q.json.error_code).toBe("ERR_NGROK_231");
    const del = await api.del(`/backends/http_response/${HR}`);
    expect(del.status).toBe(405);
    expect(del.headers.allow).toBe("GET");
    const post = await api.post("/backends/static", { address: "x:1" });
    expect(post.status).toBe(405);
    expect((await api.get(`/backends/http_response/${HR}`)).status).toBe(200);
  });
});

describe("list", () => {
  it("lists only its type, newest first, with the list's uri", async () => {
    for (const [path, id] of [
      ["/backends/tunnel_group", TG],
      ["/backends/failover", FO],
      ["/backends/static", SC],
    ] as const) {
      const r = await api.get(path);
      expect(r.status, path).toBe(200);
      expect(r.json.uri).toBe(`${s.url}${path}`);
      expect(r.json.next_page_uri).toBeNull();
      expect((r.json.backends as { id: string }[]).map((b) => b.id)).toEqual([id]);
    }
    const all = await api.get("/backends/http_response");
    expect((all.json.backends as { id: string }[]).map((b) => b.id)).toEqual([...created].reverse().concat(HR));
    expect(all.json.backends.at(-1)).toEqual((await api.get(`/backends/http_response/${HR}`)).json);
  });

  it("pages with limit and before_id (or beforeId), next_page_uri with sorted keys, null at the end", async () => {
    const newestFirst = [...created].reverse().concat(HR);
    const sizes: number[] = [];
    const seen: string[] = [];
    let path: string | null = "/backends/http_response?limit=10";
    while (path !== null) {
      const r = await api.get(path);
      expect(r.status, r.text).toBe(200);
      const ids = (r.json.backends as { id: string }[]).map((b) => b.id);
      sizes.push(ids.length);
      seen.push(...ids);
      const next = r.json.next_page_uri as string | null;
      if (next !== null) expect(next).toBe(`${s.url}/backends/http_response?before_id=${ids.at(-1)}&limit=10`);
      path = next === null ? null : next.slice(s.url.length);
    }
    expect(sizes).toEqual([10, 10, 4]);
    expect(seen).toEqual(newestFirst);
    const before = await api.get(`/backends/http_response?limit=2&beforeId=${newestFirst[5]}`);
    expect((before.json.backends as { id: string }[]).map((b) => b.id)).toEqual(newestFirst.slice(6, 8));
  });

  it("refuses a bad limit and unknown parameters with the codes of every list", async () => {
    const bad = await api.get("/backends/static?limit=101");
    expect(bad.status).toBe(400);
    expect(bad.json.error_code).toBe("ERR_NGROK_233");
    const unknown = await api.get("/backends/failover?page=2");
    expect(unknown.status).toBe(400);
    expect(unknown.json.error_code).toBe("ERR_NGROK_231");
  });

  it("sees only the key's account", async () => {
    const other = await startTestServer();
    try {
      const r = await apiClient(other.url, other.apiKey).get("/backends/http_response");
      expect(r.json).toEqual({ backends: [], uri: `${other.url}/backends/http_response`, next_page_uri: null });
    } finally {
      await other.close();
    }
  });
});

describe("auth", () => {
  it("answers 401 without a key, with another scheme and with an unknown key, for get and list", async () => {
    for (const path of ["/backends/http_response", `/backends/http_response/${HR}`, "/backends/static", `/backends/static/${SC}`]) {
      const none = await http(s.url, "GET", path, { headers: { "Ngrok-Version": "2" } });
      expect(none.status, path).toBe(401);
      expect(none.json.error_code).toBe("ERR_NGROK_200");
      const basic = await http(s.url, "GET", path, { headers: { "Ngrok-Version": "2", Authorization: "Basic eDp5" } });
      expect(basic.json.error_code).toBe("ERR_NGROK_201");
      const unknown = await apiClient(s.url, randomKey()).get(path);
      expect(unknown.status).toBe(401);
      expect(unknown.json.error_code).toBe("ERR_NGROK_203");
      expect(unknown.text).not.toContain("ep_test_");
    }
  });
});

describe("fixtures", () => {
  it("refuses a field of another type, naming the type's own fields", async () => {
    await expect(startTestServer({ fixtures: { backends: [{ type: "tunnel_group", address: "x:1" } as never] } })).rejects.toThrow(
      "backends[0].address: a tunnel_group backend has no field address; its fields are description, metadata, labels",
    );
  });
});
