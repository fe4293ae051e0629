/**
 * The client against the real server (src/server), started in-process on a free loopback port. Request counts are
 * checked on both sides: the client's stats and the server's request log (one JSON line per request).
 */
import { randomBytes } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { createClient, type ApiClient, type WeightedBackendBody } from "../../src/api/client.js";
import { deleteModule, deleteWb, patchWb, postWb, putModule, sendModule, sendWb } from "../helpers/requests.js";
import { OutcomeUnknownError, RouteNotFoundError } from "../../src/api/errors.js";
import { fetchLive, fetchTouched, readRoutes } from "../../src/api/fetch-live.js";
import type { ClientOptions } from "../../src/api/options.js";
import { systemClock, type Clock } from "../../src/api/rate-limit.js";
import { ApiError } from "../../src/model/errors.js";
import { startServer } from "../../src/server/index.js";
import { CB, SAML, desired, edgeRoute } from "./builders.js";
import { idOf } from "./stub-server.js";
import { moduleFingerprint, weightedBackendFingerprint } from "../../src/model/state.js";

const E1 = idOf("edghts", 101);
const E2 = idOf("edghts", 102);
const R1 = idOf("edghtsrt", 101);
const R2 = idOf("edghtsrt", 102);
const R3 = idOf("edghtsrt", 103);
const CHILD = idOf("bkdhr", 101);

const FIXTURES = {
  edges: [
    {
      id: E1,
      hostports: ["app.example.com:443"],
      routes: [
        { id: R1, match: "/", match_type: "path_prefix" as const },
        { id: R2, match: "/api", match_type: "path_prefix" as const },
      ],
    },
    { id: E2, routes: [{ id: R3, match: "/", match_type: "path_prefix" as const }] },
  ],
  backends: [{ id: CHILD, type: "http_response" as const }],
};

interface LogLine {
  method: string;
  path: string;
  status: number;
  dropped?: boolean;
}

interface Running {
  url: string;
  key: string;
  log: LogLine[];
  rawLog: string[];
  close(): Promise<void>;
}

const running: Running[] = [];
const clients: ApiClient[] = [];
/** Every error message the client produced in these tests, checked for the key at the end. */
const messages: string[] = [];

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(running.map((s) => s.close()));
});

async function server(faults: { failRate?: number; dropRate?: number; rateLimit?: { count: number; windowMs: number } } = {}): Promise<Running> {
  const key = `ep_${randomBytes(18).toString("base64url")}`;
  const log: LogLine[] = [];
  const rawLog: string[] = [];
  const s = await startServer({
    host: "127.0.0.1",
    port: 0,
    apiKeys: [key],
    fixtures: FIXTURES,
    ...faults,
    log: (line: string) => {
      rawLog.push(line);
      log.push(JSON.parse(line) as LogLine);
    },
  });
  const r: Running = { url: s.url, key, log, rawLog, close: () => s.close() };
  running.push(r);
  return r;
}

/** A clock that really waits, and records each wait (to check that Retry-After was honoured). */
function recordingClock(): Clock & { sleeps: number[] } {
  const sleeps: number[] = [];
  return {
    sleeps,
    now: systemClock.now,
    sleep: (ms, signal) => {
      sleeps.push(ms);
      return systemClock.sleep(ms, signal);
    },
  };
}

function client(s: Running, opts: Partial<ClientOptions> = {}): ApiClient {
  const c = createClient({
    baseUrl: s.url,
    apiKey: s.key,
    concurrency: 4,
    rateLimit: null,
    retries: 5,
    timeoutMs: 10_000,
    versionHeader: "Ngrok-Version",
    insecureHttp: false,
    backoff: { baseMs: 2, capMs: 20 },
    ...opts,
  });
  clients.push(c);
  return c;
}

async function errorOf(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    messages.push((err as Error).message, String((err as Error).stack));
    return err as Error;
  }
  throw new Error("expected a rejection");
}

const body = (n: number): WeightedBackendBody => ({ description: `wb ${n}`, metadata: JSON.stringify({ n }), backends: { [CHILD]: n % 10_001 } });

describe("weighted backends on the real server", () => {
  it("creates, reads, updates with the full body, and deletes", async () => {
    const s = await server();
    const c = client(s);
    const created = await sendWb(c, postWb(body(7)));
    expect(created).toMatchObject({ description: "wb 7", metadata: '{"n":7}', backends: { [CHILD]: 7 } });
    expect(created.uri).toBe(`${s.url}/backends/weighted/${created.id}`);
    expect(await c.getWeightedBackend(created.id)).toEqual(created);
    const updated = await sendWb(c, patchWb(created.id, { ...body(7), description: "changed" }));
    expect(updated).toEqual({ ...created, description: "changed" });
    await c.send(deleteWb(created.id));
    expect(await c.getWeightedBackend(created.id)).toBeNull();
    // A first-attempt 404 is an error: the object was not ours to delete any more.
    const err = await errorOf(c.send(deleteWb(created.id)));
    expect((err as ApiError).status).toBe(404);
    expect((err as ApiError).errorCode).toBe("ERR_NGROK_404");
    expect(s.log.map((l) => `${l.method} ${l.status}`)).toEqual(["POST 201", "GET 200", "PATCH 200", "DELETE 204", "GET 404", "DELETE 404"]);
  });

  it("reports a 400 without retrying it, with the server's code and message", async () => {
    const s = await server();
    const c = client(s);
    const err = await errorOf(sendWb(c, postWb({ description: "", metadata: "", backends: { [CHILD]: 10_001 } })));
    expect(err).toBeInstanceOf(ApiError);
    expect(err).not.toBeInstanceOf(OutcomeUnknownError);
    expect((err as ApiError).status).toBe(400);
    expect((err as ApiError).errorCode).toBe("ERR_NGROK_6512");
    expect((err as ApiError).operationId).toMatch(/^op_[0-9A-Za-z]{27}$/);
    expect(s.log).toHaveLength(1);
    expect(c.stats()).toEqual({ requests: 1, retries: 0, byStatus: { "400": 1 }, status429: 0 });
  });

  it("reads more than 100 objects page by page: one request per page, each object once", async () => {
    const s = await server();
    const c = client(s, { concurrency: 8 });
    const made = await Promise.all(Array.from({ length: 230 }, (_, i) => sendWb(c, postWb(body(i)))));
    const before = c.stats().requests;
    s.log.length = 0;
    const all = await c.listWeightedBackends();
    expect(all).toHaveLength(230);
    expect(new Set(all.map((w) => w.id))).toEqual(new Set(made.map((w) => w.id)));
    // Newest first.
    expect(all.map((w) => w.id)).toEqual([...all.map((w) => w.id)].sort().reverse());
    expect(c.stats().requests - before).toBe(3);
    expect(s.log.map((l) => `${l.method} ${l.path} ${l.status}`)).toEqual(Array(3).fill("GET /backends/weighted 200"));
  });
});

describe("faults", () => {
  it("retries 503s of --fail-rate until every read succeeds, counting each attempt on both sides", async () => {
    const s = await server({ failRate: 0.3 });
    const c = client(s, { retries: 12 });
    const results = await Promise.all(Array.from({ length: 40 }, () => c.getWeightedBackend(idOf("bkdwd", 5))));
    expect(results.every((r) => r === null)).toBe(true);
    const stats = c.stats();
    const served503 = s.log.filter((l) => l.status === 503).length;
    expect(served503).toBeGreaterThan(0);
    expect(stats.byStatus["503"]).toBe(served503);
    expect(stats.byStatus["404"]).toBe(40);
    expect(stats.retries).toBe(served503);
    expect(stats.requests).toBe(s.log.length);
    expect(stats.requests).toBe(40 + served503);
  });

  it("never resends a POST answered 503 by --fail-rate", async () => {
    const s = await server({ failRate: 1 });
    const c = client(s);
    const err = await errorOf(sendWb(c, postWb(body(1))));
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect((err as OutcomeUnknownError).status).toBe(503);
    expect(s.log.map((l) => `${l.method} ${l.status}`)).toEqual(["POST 503"]);
  });

  it("turns a dropped POST into OutcomeUnknownError, never resent: the server holds exactly one", async () => {
    const s = await server({ dropRate: 1 });
    const c = client(s);
    const err = await errorOf(sendWb(c, postWb(body(3))));
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect(err.message).toBe(
      "POST /backends/weighted: the outcome is unknown: the connection closed before the answer (UND_ERR_SOCKET); the request was not resent, because it may have been carried out: list the objects (by owner marker) before creating again",
    );
    expect(s.log.filter((l) => l.method === "POST")).toEqual([expect.objectContaining({ status: 201, dropped: true })]);
    // Reads are not dropped: the one object is there.
    const all = await c.listWeightedBackends();
    expect(all.map((w) => w.description)).toEqual(["wb 3"]);
  });

  it("resends a dropped PATCH (idempotent) and counts a retried DELETE that finds 404 as done", async () => {
    const plain = await server({ dropRate: 1 });
    const c = client(plain, { retries: 2 });
    // Creates are dropped too, so make the object through a first, lost POST and find it by listing.
    await errorOf(sendWb(c, postWb(body(4))));
    const [wb] = await c.listWeightedBackends();
    expect(wb).toBeDefined();
    const id = wb?.id as string;
    plain.log.length = 0;

    // Every PATCH answer is lost: three attempts, then an error; the change itself is on the server.
    const err = await errorOf(sendWb(c, patchWb(id, { ...body(4), description: "patched" })));
    expect((err as ApiError).status).toBe(0);
    expect(err.message).toBe(
      `PATCH /backends/weighted/${id}: 0: no answer from ${plain.url} after 3 attempts: the connection closed before the answer (UND_ERR_SOCKET); check --api-url and that the server is up`,
    );
    expect(plain.log.map((l) => `${l.method} ${l.status}${l.dropped ? " dropped" : ""}`)).toEqual(Array(3).fill("PATCH 200 dropped"));
    expect((await c.getWeightedBackend(id))?.description).toBe("patched");

    plain.log.length = 0;
    await c.send(deleteWb(id));
    expect(plain.log.map((l) => `${l.method} ${l.status}${l.dropped ? " dropped" : ""}`)).toEqual(["DELETE 204 dropped", "DELETE 404"]);
    expect(await c.getWeightedBackend(id)).toBeNull();
  });
});

describe("rate limits", () => {
  it("keeps a run under the server's --rate-limit with zero 429", async () => {
    const s = await server({ rateLimit: { count: 5, windowMs: 1000 } });
    const c = client(s, { rateLimit: { count: 5, windowMs: 1000 }, concurrency: 4 });
    await Promise.all(Array.from({ length: 12 }, () => c.getWeightedBackend(idOf("bkdwd", 9))));
    expect(c.stats()).toEqual({ requests: 12, retries: 0, byStatus: { "404": 12 }, status429: 0 });
    expect(s.log.filter((l) => l.status === 429)).toHaveLength(0);
    expect(s.log).toHaveLength(12);
  });

  it("without the limiter, meets 429 and waits at least Retry-After before retrying", async () => {
    const s = await server({ rateLimit: { count: 3, windowMs: 1000 } });
    const clock = recordingClock();
    const c = client(s, { clock, concurrency: 1 });
    for (let i = 0; i < 4; i++) expect(await c.getWeightedBackend(idOf("bkdwd", 9))).toBeNull();
    const stats = c.stats();
    expect(stats.status429).toBe(1);
    expect(stats.requests).toBe(5);
    expect(s.log.map((l) => l.status)).toEqual([404, 404, 404, 429, 404]);
    // The server said Retry-After: 1 (whole seconds, rounded up): the wait was at least that.
    expect(clock.sleeps).toHaveLength(1);
    expect(clock.sleeps[0]).toBeGreaterThanOrEqual(1000);
  });
});

describe("edges, modules and live state", () => {
  it("puts, reads and deletes modules; reports unset modules and missing routes", async () => {
    const s = await server();
    const c = client(s);
    // Modules are read inline with their edge's routes.
    const moduleOf = async (kind: "saml" | "circuit_breaker"): Promise<unknown> => (await c.getEdge(E1)).routes.find((r) => r.id === R1)?.[kind];
    expect(await moduleOf("saml")).toBeNull();
    const saml = await sendModule(c, putModule(E1, R1, "saml", SAML), "saml");
    expect(saml).toMatchObject({ ...SAML, entity_id: expect.stringContaining(R1) as string });
    expect(await moduleOf("saml")).toEqual(saml);
    expect(await sendModule(c, putModule(E1, R1, "circuit_breaker", CB), "circuit_breaker")).toEqual(CB);
    await c.send(deleteModule(E1, R1, "circuit_breaker"));
    expect(await moduleOf("circuit_breaker")).toBeNull();
    const notSet = await errorOf(c.send(deleteModule(E1, R1, "circuit_breaker")));
    expect((notSet as ApiError).errorCode).toBe("ERR_NGROK_7400");

    const noRoute = await errorOf(readRoutes(c, [{ edge: E1, route: R3, modules: ["saml"] }]));
    expect(noRoute).toBeInstanceOf(RouteNotFoundError);
    // The routes and edges the account has, to say which one was meant.
    expect((noRoute as RouteNotFoundError).missing).toEqual([{ edge: E1, route: R3, edgeExists: true, near: [R1, R2] }]);
    const noEdge = await errorOf(sendModule(c, putModule(idOf("edghts", 999), R1, "circuit_breaker", CB), "circuit_breaker"));
    expect((noEdge as RouteNotFoundError).missing).toEqual([{ edge: idOf("edghts", 999), route: R1, edgeExists: false }]);
    expect(noEdge.message).toBe(
      `edge ${idOf("edghts", 999)} does not exist (named with route ${R1}); routes and edges are not created by edgeplan: check the ids in the manifests`,
    );
  });

  it("fetchLive issues exactly the list pages plus one page of edges for managed modules on several edges", async () => {
    const s = await server();
    const c = client(s);
    const saml = await sendModule(c, putModule(E1, R1, "saml", SAML), "saml");
    await sendModule(c, putModule(E1, R2, "circuit_breaker", CB), "circuit_breaker");
    await sendModule(c, putModule(E2, R3, "saml", SAML), "saml");
    const wb = await sendWb(c, postWb(body(2)));

    const reader = client(s);
    s.log.length = 0;
    const live = await fetchLive(
      reader,
      desired([edgeRoute(E1, R1, "present", "present"), edgeRoute(E1, R2, "unmanaged", "present"), edgeRoute(E2, R3, "absent", "unmanaged")]),
    );
    expect(reader.stats().requests).toBe(2);
    expect(s.log.map((l) => `${l.method} ${l.path}`).sort()).toEqual(["GET /backends/weighted", "GET /edges/https"]);

    expect(live.weightedBackends.map((w) => w.id)).toEqual([wb.id]);
    expect(live.routes.map((r) => r.route)).toEqual([R1, R2, R3]);
    expect(live.routes[0]?.saml).toEqual(saml);
    expect(live.routes[0]?.circuit_breaker).toBeNull();
    expect(live.routes[0]?.samlCertificateSha256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(live.routes[1]?.circuit_breaker).toEqual(CB);
    expect(live.routes[2]?.saml).not.toBeNull();

    // Re-reading what an apply touched: one GET per weighted backend, one edge read per edge.
    s.log.length = 0;
    await sendWb(c, patchWb(wb.id, { ...body(2), description: "after" }));
    s.log.length = 0;
    const touched = await fetchTouched(reader, { weightedBackendIds: [wb.id], modules: [{ edge: E1, route: R2, module: "circuit_breaker" }] });
    expect(s.log.map((l) => `${l.method} ${l.path}`).sort()).toEqual([`GET /backends/weighted/${wb.id}`, `GET /edges/https/${E1}`]);
    expect(touched.weightedBackends[0]?.description).toBe("after");
    const [now, then] = [touched.weightedBackends[0], live.weightedBackends[0]];
    expect(now && weightedBackendFingerprint(now)).not.toBe(then && weightedBackendFingerprint(then));
    const [route, before] = [touched.routes[0], live.routes[1]];
    expect(route && moduleFingerprint(route, "circuit_breaker")).toBe(before && moduleFingerprint(before, "circuit_breaker"));
  });

  it("fetchLive names routes and edges that do not exist", async () => {
    const s = await server();
    const err = await errorOf(fetchLive(client(s), desired([edgeRoute(E1, R3, "present", "unmanaged"), edgeRoute(idOf("edghts", 998), R1, "absent", "absent")])));
    expect(err).toBeInstanceOf(RouteNotFoundError);
    expect((err as RouteNotFoundError).missing).toEqual([
      { edge: E1, route: R3, edgeExists: true, near: [R1, R2] },
      { edge: idOf("edghts", 998), route: R1, edgeExists: false, near: [E2, E1] },
    ]);
  });
});

describe("the API key", () => {
  it("a refused key is explained as a key problem, without the key", async () => {
    const s = await server();
    const wrong = `ep_${randomBytes(18).toString("base64url")}`;
    const c = client(s, { apiKey: wrong });
    const err = await errorOf(c.listWeightedBackends());
    expect((err as ApiError).status).toBe(401);
    expect((err as ApiError).errorCode).toBe("ERR_NGROK_203");
    expect(err.message).toMatch(
      /^GET \/backends\/weighted\?limit=100: 401 ERR_NGROK_203: .+; the API key was refused: check EDGEPLAN_API_KEY \(or --api-key-file\) and that the key belongs to this account \(operation op_[0-9A-Za-z]{27}\)$/,
    );
    expect(err.message).not.toContain(wrong);
    expect(c.stats().requests).toBe(1);
  });

  it("never appears in any error, stack or verbose line of these tests", async () => {
    const s = await server({ dropRate: 1 });
    const lines: string[] = [];
    const c = client(s, { log: (l) => lines.push(l) });
    await errorOf(sendWb(c, postWb(body(1))));
    await errorOf(c.send(deleteWb(idOf("bkdwd", 77))));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/^POST \/backends\/weighted error UND_ERR_SOCKET \d+ms attempt 1$/);
    expect(lines[1]).toMatch(new RegExp(`^DELETE /backends/weighted/${idOf("bkdwd", 77)} 404 \\d+ms attempt 1 op_[0-9A-Za-z]{27}$`));
    expect(messages.length).toBeGreaterThan(10);
    for (const r of running) {
      for (const text of [...messages, ...lines, ...r.rawLog]) expect(text).not.toContain(r.key);
    }
  });
});
