/**
 * The operations endpoints of the server: `/healthz` and `/readyz` without a key, never rate-limited, never in the
 * request log at info level; `/metrics` on `--admin-listen` (and on the API port with `metrics`), whose counters
 * equal the requests sent, by status, and which `promtool check metrics` accepts; readiness 503 while draining.
 */
import { afterEach, describe, expect, it } from "vitest";
import { PROMTOOL, promtoolCheck, sample, total } from "../helpers/metrics.js";
import { apiClient, fakeId, http, startTestServer, type TestServer } from "../helpers/server.js";
import { existsSync } from "node:fs";

const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function server(opts: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const s = await startTestServer(opts);
  servers.push(s);
  return s;
}

describe("probes", () => {
  it("answer without a key, are never rate-limited, and stay out of the request log", async () => {
    const s = await server({ rateLimit: { count: 1, windowMs: 60_000 } });
    const api = apiClient(s.url, s.apiKey);
    expect((await api.get("/backends/weighted")).status).toBe(200);
    expect((await api.get("/backends/weighted")).status).toBe(429);
    for (let i = 0; i < 5; i++) {
      const health = await http(s.url, "GET", "/healthz");
      expect([health.status, health.json]).toEqual([200, { status: "ok" }]);
      const ready = await http(s.url, "GET", "/readyz");
      expect([ready.status, ready.json]).toEqual([200, { status: "ready" }]);
      expect(ready.headers["cache-control"]).toBe("no-store");
    }
    expect((await http(s.url, "HEAD", "/readyz")).status).toBe(200);
    const post = await http(s.url, "POST", "/readyz");
    expect([post.status, post.headers.allow]).toEqual([405, "GET, HEAD"]);
    expect(s.logLines.map((l) => [l.level, l.path, l.status])).toEqual([
      ["info", "/backends/weighted", 200],
      ["info", "/backends/weighted", 429],
    ]);
  });

  it("are logged at debug level when asked", async () => {
    const s = await server({ logLevel: "debug" });
    await http(s.url, "GET", "/readyz");
    expect(s.logLines).toEqual([expect.objectContaining({ level: "debug", msg: "request", method: "GET", path: "/readyz", status: 200 })]);
  });

  it("/metrics is not served on the API port unless asked: it is an API path like any other there", async () => {
    const s = await server();
    expect((await http(s.url, "GET", "/metrics")).status).toBe(401);
    expect((await apiClient(s.url, s.apiKey).get("/metrics")).status).toBe(404);
  });

  it("the admin address serves the probes and the metrics, and nothing else", async () => {
    const s = await server({ adminListen: { host: "127.0.0.1", port: 0 } });
    const admin = s.adminUrl as string;
    expect(admin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await http(admin, "GET", "/healthz")).json).toEqual({ status: "ok" });
    expect((await http(admin, "GET", "/readyz?verbose=1")).json).toEqual({ status: "ready" });
    const metrics = await http(admin, "GET", "/metrics");
    expect(metrics.status).toBe(200);
    expect(metrics.headers["content-type"]).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(sample(metrics.text, "edgeplan_ready")).toBe(1);
    const other = await http(admin, "GET", "/backends/weighted");
    expect([other.status, other.json.msg]).toEqual([404, "Not Found: the admin address serves /healthz, /readyz and /metrics"]);
  });
});

describe("metrics", () => {
  it("count every request by route template, method and status after a mixed load, and promtool accepts them", async () => {
    const s = await server({ metrics: true, rateLimit: { count: 30, windowMs: 60_000 }, maxInflight: 4 });
    const api = apiClient(s.url, s.apiKey);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await api.post("/backends/weighted", { backends: {}, description: `m ${i}` })).json.id);
    for (const id of ids) expect((await api.patch(`/backends/weighted/${id}`, { description: "patched" })).status).toBe(200);
    for (const id of ids.slice(0, 3)) expect((await api.get(`/backends/weighted/${id}`)).status).toBe(200);
    expect((await api.get(`/backends/weighted/${fakeId("bkdwd", 1)}`)).status).toBe(404);
    expect((await api.post("/backends/weighted", { backends: {}, colour: "red" })).status).toBe(400);
    expect((await apiClient(s.url, "not-the-key").get("/backends/weighted")).status).toBe(401);
    expect((await api.get("/nowhere")).status).toBe(404);
    // 16 at once against 4 in-flight slots: some are refused by that limit (how many depends on timing).
    const burst = await Promise.all(Array.from({ length: 16 }, () => api.get("/backends/weighted")));
    // The rate limit's budget of 30 is spent by now (the 401 did not count): the next ones are refused by it.
    const late = [await api.get("/edges/https"), await api.get("/edges/https")];
    expect(late.map((r) => r.json.error_code)).toEqual(["ERR_NGROK_226", "ERR_NGROK_226"]);
    const sent = 5 + 5 + 3 + 1 + 1 + 1 + 1 + 16 + 2;
    const refusedBy = (code: string): number => [...burst, ...late].filter((r) => r.json.error_code === code).length;
    const [inflightRefused, rateRefused] = [refusedBy("ERR_NGROK_225"), refusedBy("ERR_NGROK_226")];
    const text = (await api.get("/metrics")).text;

    const count = (route: string, method: string, status: string): number | undefined => sample(text, "edgeplan_http_requests_total", { route, method, status });
    expect(count("/backends/weighted", "POST", "201")).toBe(5);
    expect(count("/backends/weighted", "POST", "400")).toBe(1);
    expect(count("/backends/weighted/{id}", "PATCH", "200")).toBe(5);
    expect(count("/backends/weighted/{id}", "GET", "200")).toBe(3);
    expect(count("/backends/weighted/{id}", "GET", "404")).toBe(1);
    expect(count("unmatched", "GET", "404")).toBe(1);
    expect(total(text, "edgeplan_http_requests_total", { route: "/backends/weighted", method: "GET" })).toBe(17);
    expect(count("/backends/weighted", "GET", "429")).toBe(burst.filter((r) => r.status === 429).length);
    expect(count("/edges/https", "GET", "429")).toBe(2);
    expect(total(text, "edgeplan_http_requests_total")).toBe(sent);
    expect(total(text, "edgeplan_http_request_duration_seconds_count")).toBe(sent);
    expect(sample(text, "edgeplan_http_requests_in_flight")).toBe(0);
    expect(sample(text, "edgeplan_http_requests_refused_total", { limit: "inflight_limit" }) ?? 0).toBe(inflightRefused);
    expect(sample(text, "edgeplan_http_requests_refused_total", { limit: "rate_limit" }) ?? 0).toBe(rateRefused);
    expect(rateRefused).toBeGreaterThanOrEqual(2);
    // Every request that reached its handler ran one transaction: those answered 2xx committed it, the GET of a
    // missing id and the invalid POST (their handlers threw) rolled it back.
    const handled2xx = total(text, "edgeplan_http_requests_total", { status: "200" }) + total(text, "edgeplan_http_requests_total", { status: "201" });
    expect(sample(text, "edgeplan_store_transaction_duration_seconds_count", { outcome: "committed" })).toBe(handled2xx);
    expect(sample(text, "edgeplan_store_transaction_duration_seconds_count", { outcome: "rolled_back" })).toBe(2);
    expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
    // No key, account or id in any label.
    for (const secret of [s.apiKey, s.account, "not-the-key", ...ids]) expect(text).not.toContain(secret);

    if (!existsSync(PROMTOOL) && process.env.CI !== "true") return;
    const check = promtoolCheck(text);
    expect(check.output).toBe("");
    expect(check.code).toBe(0);
  });

  it("take the API key on the API port (401 without one, as any API path), and none on the admin address", async () => {
    const s = await server({ metrics: true, adminListen: { host: "127.0.0.1", port: 0 } });
    const open = await http(s.url, "GET", "/metrics");
    expect([open.status, open.headers["www-authenticate"], open.json.error_code]).toEqual([401, "Bearer", "ERR_NGROK_200"]);
    expect(open.text).not.toContain("edgeplan_");
    expect((await apiClient(s.url, "not-the-key").get("/metrics")).status).toBe(401);
    const keyed = await apiClient(s.url, s.apiKey).get("/metrics");
    expect([keyed.status, sample(keyed.text, "edgeplan_ready")]).toEqual([200, 1]);
    expect((await http(s.adminUrl as string, "GET", "/metrics")).status).toBe(200);
    expect((await http(s.url, "GET", "/healthz")).status).toBe(200);
  });

  it("are per server: two servers in one process count apart", async () => {
    const [a, b] = [await server({ metrics: true }), await server({ metrics: true })];
    await apiClient(a.url, a.apiKey).get("/backends/weighted");
    const [ta, tb] = [(await apiClient(a.url, a.apiKey).get("/metrics")).text, (await apiClient(b.url, b.apiKey).get("/metrics")).text];
    expect(total(ta, "edgeplan_http_requests_total")).toBe(1);
    expect(total(tb, "edgeplan_http_requests_total")).toBe(0);
  });
});

describe("draining", () => {
  it("/readyz answers 503 at once, answers close their connection, then the port refuses connections", async () => {
    const s = await startTestServer({ adminListen: { host: "127.0.0.1", port: 0 } });
    const api = apiClient(s.url, s.apiKey);
    expect((await api.get("/backends/weighted")).headers.connection).toBe("keep-alive");
    const drained = s.drain({ delayMs: 400, timeoutMs: 2000 });
    const ready = await http(s.url, "GET", "/readyz");
    expect([ready.status, ready.json]).toEqual([503, { status: "unavailable", reason: "draining: this replica is shutting down; send requests to another one" }]);
    expect(ready.headers.connection).toBe("close");
    expect((await http(s.adminUrl as string, "GET", "/readyz")).status).toBe(503);
    expect((await http(s.adminUrl as string, "GET", "/healthz")).status).toBe(200);
    const during = await api.post("/backends/weighted", { backends: {} });
    expect([during.status, during.headers.connection]).toEqual([201, "close"]);
    await drained;
    await expect(api.get("/backends/weighted")).rejects.toThrow(/ECONNREFUSED/);
    await expect(http(s.adminUrl as string, "GET", "/healthz")).rejects.toThrow(/ECONNREFUSED/);
  });
});
