/**
 * `ApiClient.listEdges`, the read behind an export of every route: every page of the real server, and a next page
 * elsewhere refused.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createClient, type ApiClient } from "../../src/api/client.js";
import { json, startStub, type Stub } from "../api/stub-server.js";
import { fakeId, startTestServer, type TestServer } from "../helpers/server.js";

const servers: TestServer[] = [];
const stubs: Stub[] = [];
const clients: ApiClient[] = [];

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all([...servers.map((s) => s.close()), ...stubs.map((s) => s.close())]);
});

function client(baseUrl: string, apiKey: string): ApiClient {
  const c = createClient({
    baseUrl,
    apiKey,
    concurrency: 2,
    rateLimit: null,
    retries: 1,
    timeoutMs: 10_000,
    versionHeader: "Ngrok-Version",
    insecureHttp: false,
    backoff: { baseMs: 1, capMs: 2 },
  });
  clients.push(c);
  return c;
}

describe("listEdges", () => {
  it("reads every page, with routes and their modules inline", async () => {
    const edges = Array.from({ length: 205 }, (_, i) => ({
      id: fakeId("edghts", i + 1),
      routes: [{ id: fakeId("edghtsrt", i + 1), match: "/", match_type: "path_prefix" as const }],
    }));
    const server = await startTestServer({ fixtures: { edges } });
    servers.push(server);
    const c = client(server.url, server.apiKey);
    const put = await fetch(`${server.url}/edges/https/${fakeId("edghts", 1)}/routes/${fakeId("edghtsrt", 1)}/circuit_breaker`, {
      method: "PUT",
      headers: { authorization: `Bearer ${server.apiKey}`, "ngrok-version": "2", "content-type": "application/json" },
      body: JSON.stringify({ tripped_duration: 1, rolling_window: 2, num_buckets: 3, error_threshold_percentage: 0.5 }),
    });
    expect(put.status).toBe(200);

    const got = await c.listEdges();
    expect(got.map((e) => e.id).sort()).toEqual(edges.map((e) => e.id).sort());
    expect(c.stats().byStatus).toEqual({ "200": 3 });
    const first = got.find((e) => e.id === fakeId("edghts", 1));
    expect(first?.routes.map((r) => [r.id, r.saml, r.circuit_breaker])).toEqual([
      [fakeId("edghtsrt", 1), null, { enabled: true, tripped_duration: 1, rolling_window: 2, num_buckets: 3, volume_threshold: 0, error_threshold_percentage: 0.5 }],
    ]);
  });

  it("refuses a next page elsewhere, and one that repeats a page", async () => {
    const leaving = await startStub((_req, res) => json(res, 200, { https_edges: [], uri: "x", next_page_uri: "http://127.0.0.1:1/edges/https?before_id=x" }));
    stubs.push(leaving);
    await expect(client(leaving.url, "k").listEdges()).rejects.toThrow(/next_page_uri leaves the list/);

    let url = "";
    const repeating = await startStub((_req, res) => json(res, 200, { https_edges: [], uri: `${url}/edges/https`, next_page_uri: `${url}/edges/https?limit=100` }));
    url = repeating.url;
    stubs.push(repeating);
    await expect(client(repeating.url, "k").listEdges()).rejects.toThrow("next_page_uri repeats an earlier page (/edges/https?limit=100)");
    expect(repeating.requests).toHaveLength(1);
  });
});
