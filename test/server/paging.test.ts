/**
 * Paging (docs/api.md "Paging") over 250 weighted backends and over edges: every object exactly once, newest first,
 * `next_page_uri` with sorted query keys and null at the end.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, fakeId, http, startTestServer, type ApiClient, type TestServer } from "../helpers/server.js";

let s: TestServer;
let api: ApiClient;
const created: string[] = [];

beforeAll(async () => {
  s = await startTestServer({
    fixtures: { edges: [1, 2, 3, 4, 5].map((n) => ({ id: fakeId("edghts", n), routes: [] })) },
  });
  api = apiClient(s.url, s.apiKey);
  for (let i = 0; i < 250; i++) {
    const r = await api.post("/backends/weighted", { backends: {}, description: `wb ${i}` });
    expect(r.status).toBe(201);
    created.push(r.json.id as string);
  }
});
afterAll(() => s.close());

/** Follows next_page_uri from `first` to the end (at most 100 pages); returns the ids in order and the pages. */
async function walk(first: string, key = "backends"): Promise<{ ids: string[]; pages: { size: number; next: string | null }[] }> {
  const ids: string[] = [];
  const pages: { size: number; next: string | null }[] = [];
  let path: string | null = first;
  for (let n = 0; path !== null && n < 100; n++) {
    const r = await api.get(path);
    expect(r.status, r.text).toBe(200);
    const items = r.json[key] as { id: string }[];
    ids.push(...items.map((i) => i.id));
    const next = r.json.next_page_uri as string | null;
    pages.push({ size: items.length, next });
    expect(r.json.uri).toBe(`${s.url}${first.split("?")[0]}`);
    if (next !== null) {
      expect(next.startsWith(s.url)).toBe(true);
      path = next.slice(s.url.length);
    } else path = null;
  }
  return { ids, pages };
}

describe("paging of weighted backends", () => {
  it("limit 100 gives pages of 100, 100, 50; each object once, newest first; null at the end", async () => {
    const { ids, pages } = await walk("/backends/weighted?limit=100");
    expect(pages.map((p) => p.size)).toEqual([100, 100, 50]);
    expect(ids).toEqual([...created].reverse());
    expect(pages[0]?.next).toBe(`${s.url}/backends/weighted?before_id=${ids[99]}&limit=100`);
    expect(pages[2]?.next).toBeNull();
  });

  it("limit 7 gives 35 pages of 7 and one of 5", async () => {
    const { ids, pages } = await walk("/backends/weighted?limit=7");
    expect(pages).toHaveLength(36);
    expect(pages.slice(0, 35).every((p) => p.size === 7)).toBe(true);
    expect(pages[35]).toEqual({ size: 5, next: null });
    expect(ids).toEqual([...created].reverse());
    expect(new Set(ids).size).toBe(250);
  });

  it("defaults to 100 and writes the limit into next_page_uri", async () => {
    const r = await api.get("/backends/weighted");
    expect(r.json.backends).toHaveLength(100);
    expect(r.json.next_page_uri).toBe(`${s.url}/backends/weighted?before_id=${created[150]}&limit=100`);
  });

  it("before_id returns the items whose id sorts before it", async () => {
    const r = await api.get(`/backends/weighted?limit=3&before_id=${created[10]}`);
    expect((r.json.backends as { id: string }[]).map((b) => b.id)).toEqual([created[9], created[8], created[7]]);
    const end = await api.get(`/backends/weighted?before_id=${created[0]}`);
    expect(end.json).toEqual({ backends: [], uri: `${s.url}/backends/weighted`, next_page_uri: null });
    const exact = await api.get(`/backends/weighted?before_id=${created[3]}&limit=3`);
    expect(exact.json.next_page_uri).toBeNull();
  });

  it("accepts beforeId, the generated client's spelling, as before_id, and refuses both at once", async () => {
    const r = await api.get(`/backends/weighted?limit=3&beforeId=${created[10]}`);
    expect(r.status, r.text).toBe(200);
    expect((r.json.backends as { id: string }[]).map((b) => b.id)).toEqual([created[9], created[8], created[7]]);
    expect(r.json.next_page_uri).toBe(`${s.url}/backends/weighted?before_id=${created[7]}&limit=3`);
    const both = await api.get(`/backends/weighted?before_id=${created[10]}&beforeId=${created[10]}`);
    expect(both.status).toBe(400);
    expect(both.json.error_code).toBe("ERR_NGROK_231");
    expect(both.json.msg).toBe("before_id and beforeId name the same parameter; give one of them");
  });

  it("refuses a limit outside 1..100 (ERR_NGROK_233) and other parameters (ERR_NGROK_231)", async () => {
    for (const limit of ["0", "101", "-1", "abc", "", "1.5", "07x"]) {
      const r = await api.get(`/backends/weighted?limit=${limit}`);
      expect(r.status, limit).toBe(400);
      expect(r.json.error_code).toBe("ERR_NGROK_233");
    }
    for (const q of ["page=2", "limit=5&sort=asc", "limit=5&limit=6"]) {
      const r = await api.get(`/backends/weighted?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.json.error_code).toBe("ERR_NGROK_231");
    }
    expect((await api.get("/backends/weighted?limit=1")).json.backends).toHaveLength(1);
    expect((await api.get("/backends/weighted?limit=100")).json.backends).toHaveLength(100);
  });

  it("another account's list is empty", async () => {
    const other = await startTestServer();
    try {
      const r = await http(other.url, "GET", "/backends/weighted", { headers: { Authorization: `Bearer ${other.apiKey}`, "Ngrok-Version": "2" } });
      expect(r.json).toEqual({ backends: [], uri: `${other.url}/backends/weighted`, next_page_uri: null });
    } finally {
      await other.close();
    }
  });
});

describe("paging of edges", () => {
  it("pages https_edges by the same rules", async () => {
    const { ids, pages } = await walk("/edges/https?limit=2", "https_edges");
    expect(pages.map((p) => p.size)).toEqual([2, 2, 1]);
    expect(ids).toEqual([5, 4, 3, 2, 1].map((n) => fakeId("edghts", n)));
    expect(pages[0]?.next).toBe(`${s.url}/edges/https?before_id=${fakeId("edghts", 4)}&limit=2`);
    const bad = await api.get("/edges/https?limit=0");
    expect(bad.json.error_code).toBe("ERR_NGROK_233");
  });
});
