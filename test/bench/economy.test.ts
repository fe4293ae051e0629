/**
 * The product changes the benchmarks led to, each held to what it promises: list pages go first for a place in the
 * client (a chain must not wait behind requests that could run beside it), the convergence check lists instead of
 * reading every touched object when that is fewer requests, a certificate's fingerprint comes straight from its
 * DER bytes, metadata is sorted without a JSON round trip yet exactly as one would, and the plan drops unchanged
 * objects early with the verdict the full comparison gives.
 */
import { X509Certificate } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClient } from "../../src/api/client.js";
import { fetchTouched } from "../../src/api/fetch-live.js";
import { certificateSha256 } from "../../src/api/live-state.js";
import { Semaphore, SlidingWindowLimiter } from "../../src/api/rate-limit.js";
import { buildPlan } from "../../src/core/plan.js";
import { sortedJson } from "../../src/model/canonical.js";
import { canonicalJson } from "../../src/model/canonical.js";
import type { DesiredState, LiveState } from "../../src/model/state.js";
import { startServer, type RunningServer } from "../../src/server/index.js";
import { makeSigningCertificate } from "../../src/server/saml-certificate.js";
import { TrafficCounter } from "../../bench/traffic.js";
import { FakeClock } from "../api/fake-clock.js";

describe("Semaphore and limiter: urgent waiters first", () => {
  it("gives a freed place to an urgent waiter before earlier ordinary ones", async () => {
    const sem = new Semaphore(1);
    await sem.acquire();
    const order: string[] = [];
    const a = sem.acquire().then(() => order.push("a"));
    const b = sem.acquire().then(() => order.push("b"));
    const chain = sem.acquire(true).then(() => order.push("chain"));
    sem.release();
    await chain;
    expect(order).toEqual(["chain"]);
    sem.release();
    await a;
    sem.release();
    await b;
    expect(order).toEqual(["chain", "a", "b"]);
    sem.release();
    expect(sem.inUse).toBe(0);
  });

  it("admits an urgent request first when the window frees a place", async () => {
    const clock = new FakeClock();
    const limiter = new SlidingWindowLimiter({ count: 1, windowMs: 100 }, clock);
    const first = await limiter.acquire();
    const order: string[] = [];
    const ordinary = limiter.acquire().then((slot) => {
      order.push("ordinary");
      slot.done();
    });
    const urgent = limiter.acquire(true).then((slot) => {
      order.push("urgent");
      slot.done();
    });
    first.done();
    for (let i = 0; i < 100 && order.length < 2; i++) await clock.advance(50);
    await Promise.all([ordinary, urgent]);
    expect(order).toEqual(["urgent", "ordinary"]);
  });
});

describe("fetchTouched lists the account when that takes fewer requests", () => {
  const key = "economy-key";
  const traffic = new TrafficCounter();
  let server: RunningServer;
  const ids: string[] = [];

  beforeAll(async () => {
    server = await startServer({
      host: "127.0.0.1",
      port: 0,
      apiKeys: [key],
      log: (line) => traffic.line(line),
    });
    await server.store.transaction(async (tx) => {
      for (let i = 0; i < 150; i++) {
        const { id, created_at } = await tx.newId("bkdwd");
        await tx.insertWeightedBackend(server.account, { id, created_at, description: `wb ${i}`, metadata: "", backends: {} });
        ids.push(id);
      }
    });
  });
  afterAll(async () => {
    await server.close();
  });

  const read = async (touched: string[], accountWeightedBackends?: number) => {
    const client = createClient({
      baseUrl: server.url,
      apiKey: key,
      concurrency: 4,
      rateLimit: null,
      retries: 0,
      timeoutMs: 10_000,
      versionHeader: "Ngrok-Version",
      insecureHttp: false,
    });
    traffic.reset();
    try {
      const live = await fetchTouched(client, { weightedBackendIds: touched, modules: [] }, accountWeightedBackends === undefined ? {} : { accountWeightedBackends });
      return { live, traffic: traffic.read() };
    } finally {
      await client.close();
    }
  };

  it("reads 150 touched objects of a 150-object account in 2 list pages, keeping only the touched ones", async () => {
    const gone = "bkdwd_000000000000000000000000001";
    const { live, traffic: t } = await read([...ids, gone], 150);
    expect(t.byKind).toEqual({ "GET /backends/weighted": 2 });
    expect(live.weightedBackends.map((wb) => wb.id)).toEqual([...ids].sort());
  });

  it("reads touched objects by id, one GET each, when they are no more than the list's pages", async () => {
    const some = ids.slice(0, 2);
    const { live, traffic: t } = await read(some, 150);
    expect(t.byKind).toEqual({ "GET /backends/weighted/:id": 2 });
    expect(live.weightedBackends.map((wb) => wb.id)).toEqual([...some].sort());
  });

  it("reads by id when the caller does not say how many objects the account holds", async () => {
    const { traffic: t } = await read(ids.slice(0, 3));
    expect(t.byKind).toEqual({ "GET /backends/weighted/:id": 3 });
  });
});

describe("certificateSha256", () => {
  it("is X509Certificate's fingerprint256 of a certificate the server makes", async () => {
    const pem = await makeSigningCertificate("https://idp.edgeplan.localhost/saml/edghtsrt_2rFLrPDVjzfYgym9MMvkYSSNdqk");
    expect(certificateSha256(pem)).toBe(new X509Certificate(pem).fingerprint256);
  });

  it("is undefined for text that holds no certificate", () => {
    expect(certificateSha256("")).toBeUndefined();
    expect(certificateSha256("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")).toBeUndefined();
    expect(certificateSha256("-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n")).toBeUndefined();
  });
});

describe("sortedJson", () => {
  const roundTrip = (v: unknown): unknown => JSON.parse(canonicalJson(v) ?? "null");

  it("gives what the JSON round trip gives, for any JSON value", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(JSON.stringify(sortedJson(v))).toBe(JSON.stringify(roundTrip(v)));
      }),
      { numRuns: 300 },
    );
  });

  it("gives what the JSON round trip gives for values JSON changes or drops", () => {
    const odd = { "-0": -0, nan: Number.NaN, inf: Number.POSITIVE_INFINITY, date: new Date(0), gone: undefined, list: [1, undefined, 3], z: 1, a: { y: 2, b: 1 } };
    expect(sortedJson(odd)).toEqual(roundTrip(odd));
    const proto = JSON.parse('{"__proto__": {"x": 1}, "b": 2}') as unknown;
    const sorted = sortedJson(proto) as Record<string, unknown>;
    expect(Object.keys(sorted)).toEqual(["__proto__", "b"]);
    expect(Object.getPrototypeOf(sorted)).toBe(Object.prototype);
  });

  it("sorts keys at every depth", () => {
    expect(JSON.stringify(sortedJson({ b: { d: 1, c: [{ f: 1, e: 2 }] }, a: 0 }))).toBe('{"a":0,"b":{"c":[{"e":2,"f":1}],"d":1}}');
  });
});

describe("buildPlan drops unchanged objects early, with the same verdicts", () => {
  const stack = "s";
  const pos = { file: "m.yaml", line: 1, col: 1 };
  const child = "bkdhr_2rFLmpE8q3WRHfs3a2LFkfhVsOU";
  const live = (metadata: string): LiveState => ({
    weightedBackends: [{ id: "bkdwd_32ELHcDT2RYt50eSIeXINRyuhnf", created_at: "2025-09-04T10:11:37Z", description: "d", metadata, backends: { [child]: 100 } }],
    routes: [],
  });
  const desired = (metadata: Record<string, unknown>, weight = 100): DesiredState => ({
    weightedBackends: [{ kind: "WeightedBackend", name: "web", description: "d", metadata, backends: { [child]: weight }, protect: false, source: pos }],
    edgeRoutes: [],
  });
  const plan = (d: DesiredState, l: LiveState) => buildPlan(d, l, { stack, prune: false, takeover: false, maxShift: 50 });
  const written = '{"edgeplan":{"name":"web","stack":"s"},"team":"a","tags":{"x":1,"y":2}}';

  it("sees no change whatever the key order on either side", () => {
    expect(plan(desired({ tags: { y: 2, x: 1 }, team: "a" }), live(written)).changes).toEqual([]);
    expect(plan(desired({ team: "a", tags: { x: 1, y: 2 } }), live('{"team":"a","tags":{"y":2,"x":1},"edgeplan":{"stack":"s","name":"web"}}')).changes).toEqual([]);
  });

  it("sees no change for a manifest value that JSON leaves out", () => {
    expect(plan(desired({ team: "a", tags: { x: 1, y: 2 }, gone: undefined }), live(written)).changes).toEqual([]);
  });

  it("updates on a metadata, description or weight difference", () => {
    const metadata = plan(desired({ team: "b", tags: { x: 1, y: 2 } }), live(written)).changes;
    expect(metadata.map((c) => [c.address, c.action])).toEqual([["weighted_backend.web", "update"]]);
    expect(plan(desired({ team: "a", tags: { x: 1, y: 2 } }, 50), live(written)).changes).toHaveLength(1);
  });
});
