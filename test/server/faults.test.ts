/**
 * Test faults and limits: latency, fail-rate, drop-rate, the fault seed, rate limit and in-flight limit, each on
 * its own server. What the store holds afterwards is read from the store itself.
 */
import { describe, expect, it } from "vitest";
import { apiClient, fakeId, http, startTestServer } from "../helpers/server.js";
import { faultDraws } from "../../src/server/index.js";

describe("--latency", () => {
  it("delays every request by at least the floor", async () => {
    const s = await startTestServer({ latency: [150, 180] });
    try {
      expect(s.notices.some((n) => n.includes("delayed 150-180 ms"))).toBe(true);
      const api = apiClient(s.url, s.apiKey);
      for (let i = 0; i < 2; i++) {
        const started = performance.now();
        const r = await api.get("/backends/weighted");
        expect(r.status).toBe(200);
        expect(performance.now() - started).toBeGreaterThanOrEqual(149);
      }
    } finally {
      await s.close();
    }
  });
});

describe("--fail-rate", () => {
  it("at 1, answers 503 before doing anything: nothing is written", async () => {
    const s = await startTestServer({
      failRate: 1,
      fixtures: { edges: [{ id: fakeId("edghts", 1), routes: [{ id: fakeId("edghtsrt", 1), match: "/", match_type: "path_prefix" }] }] },
    });
    try {
      expect(s.notices.some((n) => n.includes("100% of requests are answered 503"))).toBe(true);
      const api = apiClient(s.url, s.apiKey);
      const r = await api.post("/backends/weighted", { backends: {} });
      expect(r.status).toBe(503);
      expect(r.json.error_code).toBe("ERR_NGROK_503");
      expect(r.json.details.operation_id).toBe(r.headers["ngrok-operation-id"]);
      const cb = await api.put(`/edges/https/${fakeId("edghts", 1)}/routes/${fakeId("edghtsrt", 1)}/circuit_breaker`, {
        tripped_duration: 1,
        rolling_window: 1,
        num_buckets: 1,
        error_threshold_percentage: 0.5,
      });
      expect(cb.status).toBe(503);
      expect((await http(s.url, "GET", "/backends/weighted")).status).toBe(503);
      expect(await s.read((tx) => tx.countWeightedBackends(s.account))).toBe(0);
      expect((await s.read((tx) => tx.getRoute(s.account, fakeId("edghts", 1), fakeId("edghtsrt", 1))))?.circuit_breaker).toBeNull();
    } finally {
      await s.close();
    }
  });

  it("at 0.5, fails some requests and answers the others", async () => {
    const s = await startTestServer({ failRate: 0.5 });
    try {
      const api = apiClient(s.url, s.apiKey);
      const statuses = new Set<number>();
      for (let i = 0; i < 80 && statuses.size < 2; i++) statuses.add((await api.get("/backends/weighted")).status);
      expect([...statuses].sort()).toEqual([200, 503]);
    } finally {
      await s.close();
    }
  });
});

describe("--fault-seed", () => {
  it("draws reproducible numbers in [0, 1) that differ from seed to seed", () => {
    const take = (seed: number): number[] => {
      const draw = faultDraws(seed);
      return Array.from({ length: 1000 }, () => draw());
    };
    const a = take(42);
    expect(take(42)).toEqual(a);
    expect(take(43)).not.toEqual(a);
    expect(a.every((x) => x >= 0 && x < 1)).toBe(true);
    // Spread over the interval: each tenth holds roughly a tenth of the draws.
    const tenths = Array.from({ length: 10 }, (_, i) => a.filter((x) => Math.floor(x * 10) === i).length);
    for (const n of tenths) expect(n).toBeGreaterThan(60);
  });

  it("makes the same requests in the same order meet the same faults", async () => {
    const statuses = async (): Promise<number[]> => {
      const s = await startTestServer({ failRate: 0.5, faultSeed: 1234 });
      try {
        const api = apiClient(s.url, s.apiKey);
        const seen: number[] = [];
        for (let i = 0; i < 40; i++) seen.push((await api.get("/backends/weighted")).status);
        return seen;
      } finally {
        await s.close();
      }
    };
    const first = await statuses();
    expect(new Set(first)).toEqual(new Set([200, 503]));
    expect(await statuses()).toEqual(first);
  });
});

describe("--drop-rate", () => {
  it("at 1, commits each write and then destroys the connection; reads are answered", async () => {
    const s = await startTestServer({ dropRate: 1 });
    try {
      expect(s.notices.some((n) => n.includes("successful writes are committed"))).toBe(true);
      const api = apiClient(s.url, s.apiKey);
      await expect(api.post("/backends/weighted", { backends: {}, description: "dropped create" })).rejects.toThrow(/socket hang up|ECONNRESET/);
      const stored = await s.read((tx) => tx.listWeightedBackends(s.account, { limit: 10 }));
      expect(stored.map((b) => b.description)).toEqual(["dropped create"]);
      const id = stored[0]?.id as string;
      await expect(api.patch(`/backends/weighted/${id}`, { description: "dropped update" })).rejects.toThrow(/socket hang up|ECONNRESET/);
      expect((await s.read((tx) => tx.getWeightedBackend(s.account, id)))?.description).toBe("dropped update");
      const read = await api.get(`/backends/weighted/${id}`);
      expect(read.status).toBe(200);
      expect(read.json.description).toBe("dropped update");
      // A rejected write is answered: there was nothing to commit.
      const bad = await api.post("/backends/weighted", { nope: 1 });
      expect(bad.status).toBe(400);
      expect(s.logLines.filter((l) => l.dropped === true).map((l) => l.method)).toEqual(["POST", "PATCH"]);
    } finally {
      await s.close();
    }
  });
});

describe("--rate-limit", () => {
  it("answers 429 ERR_NGROK_226 with Retry-After in whole seconds after N requests, per key", async () => {
    const second = "ep_test_rate_second_key";
    const s = await startTestServer({ rateLimit: { count: 3, windowMs: 60_000 }, apiKeys: [second] });
    try {
      const api = apiClient(s.url, s.apiKey);
      for (let i = 0; i < 3; i++) expect((await api.get("/backends/weighted")).status).toBe(200);
      const r = await api.get("/backends/weighted");
      expect(r.status).toBe(429);
      expect(r.json.error_code).toBe("ERR_NGROK_226");
      const retry = Number(r.headers["retry-after"]);
      expect(Number.isInteger(retry)).toBe(true);
      expect(retry).toBeGreaterThanOrEqual(59);
      expect(retry).toBeLessThanOrEqual(60);
      // A refused request does not count, and the other key has its own budget.
      expect((await api.get("/backends/weighted")).status).toBe(429);
      expect((await apiClient(s.url, second).get("/backends/weighted")).status).toBe(200);
    } finally {
      await s.close();
    }
  });

  it("is a rolling window: a request is allowed again once the oldest leaves it", async () => {
    const s = await startTestServer({ rateLimit: { count: 2, windowMs: 700 } });
    try {
      const api = apiClient(s.url, s.apiKey);
      expect((await api.get("/backends/weighted")).status).toBe(200);
      expect((await api.get("/backends/weighted")).status).toBe(200);
      const limited = await api.get("/backends/weighted");
      expect(limited.status).toBe(429);
      expect(limited.headers["retry-after"]).toBe("1");
      await new Promise((r) => setTimeout(r, 750));
      expect((await api.get("/backends/weighted")).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});

describe("--max-inflight", () => {
  it("answers 429 ERR_NGROK_225 with Retry-After while the key has N requests in flight", async () => {
    const s = await startTestServer({ maxInflight: 1, latency: [500, 500] });
    try {
      const api = apiClient(s.url, s.apiKey);
      const slow = api.get("/backends/weighted");
      await new Promise((r) => setTimeout(r, 150));
      const r = await api.get("/backends/weighted");
      expect(r.status).toBe(429);
      expect(r.json.error_code).toBe("ERR_NGROK_225");
      expect(r.headers["retry-after"]).toBe("1");
      expect((await slow).status).toBe(200);
      // The slot is free again once the answer is out.
      expect((await api.get("/backends/weighted")).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});
