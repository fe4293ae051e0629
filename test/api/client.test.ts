import { afterEach, describe, expect, it } from "vitest";
import { createClient, type ApiClient } from "../../src/api/client.js";
import { deleteModule, deleteWb, patchWb, postWb, putModule, sendModule, sendWb } from "../helpers/requests.js";
import { NoAnswerError, OutcomeUnknownError, RouteNotFoundError } from "../../src/api/errors.js";
import { Reachability } from "../../src/api/reachability.js";
import { readRoutes } from "../../src/api/fetch-live.js";
import type { ClientOptions } from "../../src/api/options.js";
import type { Clock } from "../../src/api/rate-limit.js";
import { ApiError } from "../../src/model/errors.js";
import { apiError, drop, idOf, json, startStub, weightedBackend, type Handler, type Stub } from "./stub-server.js";

const KEY = "ep_stub_SECRET_4f9a1c2b7d";
const WB = idOf("bkdwd", 1);
const EDGE = idOf("edghts", 1);
const ROUTE = idOf("edghtsrt", 1);

/** Real time for `now`, but waits return at once and are recorded: backoff and Retry-After are asserted, not waited. */
function instantClock(): Clock & { sleeps: number[] } {
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => performance.now(),
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
  };
}

let stubs: Stub[] = [];
let clients: ApiClient[] = [];

afterEach(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(stubs.map((s) => s.close()));
  clients = [];
  stubs = [];
});

async function setup(
  handle: Handler,
  opts: Partial<ClientOptions> = {},
): Promise<{ stub: Stub; client: ApiClient; clock: ReturnType<typeof instantClock>; lines: string[] }> {
  const stub = await startStub(handle);
  stubs.push(stub);
  const clock = instantClock();
  const lines: string[] = [];
  const client = createClient({
    baseUrl: stub.url,
    apiKey: KEY,
    concurrency: 2,
    rateLimit: null,
    retries: 3,
    timeoutMs: 5000,
    versionHeader: "Ngrok-Version",
    insecureHttp: false,
    clock,
    random: () => 0.5,
    backoff: { baseMs: 100, capMs: 1000 },
    log: (l) => lines.push(l),
    ...opts,
  });
  clients.push(client);
  return { stub, client, clock, lines };
}

async function errorOf(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error("expected a rejection");
}

describe("requests", () => {
  it("sends the bearer key, the version header, and JSON bodies with their content type", async () => {
    const { stub, client } = await setup((req, res) => json(res, 201, weightedBackend(WB, stub.url, JSON.parse(req.body) as object)), {
      versionHeader: "Service-Version",
    });
    const wb = await sendWb(client, postWb({ description: "d", metadata: "{}", backends: { [idOf("bkdhr", 1)]: 5 } }));
    expect(wb.backends).toEqual({ [idOf("bkdhr", 1)]: 5 });
    const [req] = stub.requests;
    expect(req?.method).toBe("POST");
    expect(req?.url).toBe("/backends/weighted");
    expect(req?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(req?.headers["service-version"]).toBe("2");
    expect(req?.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(req?.body ?? "")).toEqual({ description: "d", metadata: "{}", backends: { [idOf("bkdhr", 1)]: 5 } });
  });

  it("keeps a base URL's path prefix and encodes ids in paths", async () => {
    const { stub, client } = await setup((_req, res) => apiError(res, 404, "ERR_NGROK_222", "malformed id"));
    const stubWithPrefix = createClient({
      baseUrl: `${stub.url}/api/`,
      apiKey: KEY,
      concurrency: 1,
      rateLimit: null,
      retries: 0,
      timeoutMs: 5000,
      versionHeader: "Ngrok-Version",
      insecureHttp: false,
    });
    clients.push(stubWithPrefix);
    expect(await stubWithPrefix.getWeightedBackend("a/../b")).toBeNull();
    expect(await client.getWeightedBackend(WB)).toBeNull();
    expect(stub.requests.map((r) => r.url)).toEqual(["/api/backends/weighted/a%2F..%2Fb", `/backends/weighted/${WB}`]);
  });

  it("keeps at most `concurrency` requests in flight", async () => {
    const { stub, client } = await setup((_req, res) => setTimeout(() => json(res, 200, weightedBackend(WB, stub.url)), 20), {
      concurrency: 3,
    });
    await Promise.all(Array.from({ length: 12 }, () => client.getWeightedBackend(WB)));
    expect(stub.requests).toHaveLength(12);
    expect(stub.maxInFlight).toBe(3);
  });

  it("logs one line per attempt: method, path, status, ms, attempt, operation id", async () => {
    const { client, lines } = await setup((_req, res, n) =>
      n === 1 ? apiError(res, 503, "ERR_NGROK_9999", "busy") : json(res, 200, weightedBackend(WB, "http://x"), { "ngrok-operation-id": "op_two" }),
    );
    await client.getWeightedBackend(WB);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^GET /backends/weighted/${WB} 503 \\d+ms attempt 1 op_stub$`));
    expect(lines[1]).toMatch(new RegExp(`^GET /backends/weighted/${WB} 200 \\d+ms attempt 2 op_two$`));
  });
});

describe("retries", () => {
  it("retries 502, 503 and 504 on a GET with full-jitter backoff, and counts them", async () => {
    const statuses = [502, 503, 504];
    const { stub, client, clock } = await setup((_req, res, n) =>
      n <= 3 ? apiError(res, statuses[n - 1] as number, undefined, "upstream") : json(res, 200, weightedBackend(WB, stub.url)),
    );
    const wb = await client.getWeightedBackend(WB);
    expect(wb?.id).toBe(WB);
    expect(stub.requests).toHaveLength(4);
    // random() = 0.5 of windows 100, 200, 400.
    expect(clock.sleeps).toEqual([50, 100, 200]);
    expect(client.stats()).toEqual({ requests: 4, retries: 3, byStatus: { "502": 1, "503": 1, "504": 1, "200": 1 }, status429: 0 });
  });

  it("honours Retry-After as a floor, in seconds or as an HTTP date", async () => {
    const date = new Date(Date.now() + 30_000).toUTCString();
    const { stub, client, clock } = await setup((_req, res, n) =>
      n === 1
        ? apiError(res, 429, "ERR_NGROK_226", "slow down", { "retry-after": "3" })
        : n === 2
          ? apiError(res, 429, "ERR_NGROK_226", "slow down", { "retry-after": date })
          : json(res, 200, weightedBackend(WB, stub.url)),
    );
    await client.getWeightedBackend(WB);
    expect(clock.sleeps[0]).toBe(3000);
    // An HTTP date has second precision: the wait is the time left until then, at least 28 s here.
    expect(clock.sleeps[1]).toBeGreaterThan(28_000);
    expect(clock.sleeps[1]).toBeLessThanOrEqual(30_000);
    expect(client.stats().status429).toBe(2);
  });

  it("gives up after `retries` retries with the last answer's error", async () => {
    const { stub, client } = await setup((_req, res) => apiError(res, 503, "ERR_NGROK_9999", "down for maintenance"), { retries: 2 });
    const err = await errorOf(client.getWeightedBackend(WB));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toBe(`GET /backends/weighted/${WB}: 503 ERR_NGROK_9999: down for maintenance (gave up after 3 attempts) (operation op_stub)`);
    expect(stub.requests).toHaveLength(3);
  });

  it("does not wait for a Retry-After longer than two minutes", async () => {
    const { stub, client, clock } = await setup((_req, res) => apiError(res, 429, "ERR_NGROK_226", "quota", { "retry-after": "3600" }));
    const err = await errorOf(client.getWeightedBackend(WB));
    expect((err as ApiError).status).toBe(429);
    expect(stub.requests).toHaveLength(1);
    expect(clock.sleeps).toEqual([]);
  });

  it("never retries other 4xx", async () => {
    const { stub, client } = await setup((_req, res) => apiError(res, 400, "ERR_NGROK_6512", "backends.x: weight 10001 is out of range 0 to 10000"));
    const err = await errorOf(sendWb(client, patchWb(WB, { description: "", metadata: "", backends: {} })));
    expect(err.message).toBe(`PATCH /backends/weighted/${WB}: 400 ERR_NGROK_6512: backends.x: weight 10001 is out of range 0 to 10000 (operation op_stub)`);
    expect(stub.requests).toHaveLength(1);
  });

  it("resends a PATCH or PUT whose answer was lost", async () => {
    const { stub, client } = await setup((req, res, n) => (n === 1 ? drop(res) : json(res, 200, weightedBackend(WB, stub.url, JSON.parse(req.body) as object))));
    const wb = await sendWb(client, patchWb(WB, { description: "x", metadata: "", backends: {} }));
    expect(wb.description).toBe("x");
    expect(stub.requests.map((r) => r.method)).toEqual(["PATCH", "PATCH"]);
    expect(client.stats().byStatus).toEqual({ network: 1, "200": 1 });
  });

  it("retries a refused connection, then says no answer came (for a POST too: it was never sent)", async () => {
    const { stub } = await setup(() => undefined);
    const url = stub.url;
    await stub.close();
    stubs = [];
    const clock = instantClock();
    const client = createClient({
      baseUrl: url,
      apiKey: KEY,
      concurrency: 1,
      rateLimit: null,
      retries: 2,
      timeoutMs: 2000,
      versionHeader: "Ngrok-Version",
      insecureHttp: false,
      clock,
      random: () => 0,
    });
    clients.push(client);
    const err = await errorOf(sendWb(client, postWb({ description: "", metadata: "", backends: {} })));
    expect(err).toBeInstanceOf(ApiError);
    expect(err).not.toBeInstanceOf(OutcomeUnknownError);
    expect(err.message).toBe(
      `POST /backends/weighted: 0: no answer from ${url} after 3 attempts: connection refused (ECONNREFUSED); check --api-url and that the server is up`,
    );
    expect(client.stats()).toEqual({ requests: 3, retries: 2, byStatus: { network: 3 }, status429: 0 });
  });
});

describe("the API gone", () => {
  /** A client of a port nobody listens on any more, with its reachability watch. */
  async function refusedClient(): Promise<{ client: ApiClient; url: string; reachability: Reachability }> {
    const { stub } = await setup(() => undefined);
    await stub.close();
    stubs = [];
    const reachability = new Reachability();
    const client = createClient({
      baseUrl: stub.url,
      apiKey: KEY,
      concurrency: 1,
      rateLimit: null,
      retries: 2,
      timeoutMs: 2000,
      versionHeader: "Ngrok-Version",
      insecureHttp: false,
      clock: instantClock(),
      random: () => 0,
      reachability,
    });
    clients.push(client);
    return { client, url: stub.url, reachability };
  }

  it("after 3 requests in a row got no answer, each after its retries, the next is not sent at all", async () => {
    const { client, url, reachability } = await refusedClient();
    for (let i = 1; i <= 3; i++) {
      expect(reachability.gone.aborted).toBe(false);
      const err = await errorOf(client.getWeightedBackend(WB));
      expect(err).toBeInstanceOf(NoAnswerError);
      expect(client.stats().requests).toBe(3 * i);
    }
    expect(reachability.cause()).toEqual({ origin: url, what: "connection refused (ECONNREFUSED)", attempts: 3, requests: 3 });
    const err = await errorOf(sendWb(client, postWb({ description: "", metadata: "", backends: {} })));
    expect(err).toBeInstanceOf(NoAnswerError);
    expect(err.message).toBe(`POST /backends/weighted: 0: not sent: the API at ${url} stopped answering (connection refused (ECONNREFUSED))`);
    expect((err as NoAnswerError).notSent).toBe(true);
    expect(client.stats().requests).toBe(9);
  });

  it("any answer, even an error, ends a run of requests that got none", async () => {
    let up = false;
    const reach = new Reachability();
    const { client } = await setup((_req, res) => (up ? json(res, 404, { error_code: "ERR_NGROK_404", status_code: 404, msg: "not found", details: {} }) : drop(res)), {
      reachability: reach,
      retries: 0,
    });
    await errorOf(client.getWeightedBackend(WB));
    await errorOf(client.getWeightedBackend(WB));
    up = true;
    expect(await client.getWeightedBackend(WB)).toBeNull();
    up = false;
    await errorOf(client.getWeightedBackend(WB));
    await errorOf(client.getWeightedBackend(WB));
    expect(reach.gone.aborted).toBe(false);
    await errorOf(client.getWeightedBackend(WB));
    expect(reach.gone.aborted).toBe(true);
  });
});

describe("send", () => {
  it("refuses, before sending anything, a request that is not a write edgeplan makes", async () => {
    const { stub, client } = await setup((_req, res) => json(res, 200, {}));
    const refusals = [
      { method: "GET", path: "/backends/weighted", body: null },
      { method: "PUT", path: `/backends/weighted/${WB}`, body: { description: "", metadata: "", backends: {} } },
      { method: "PATCH", path: `/backends/weighted/${WB}?x=1`, body: { description: "", metadata: "", backends: {} } },
      { method: "DELETE", path: "/backends/weighted/a b", body: null },
      { method: "DELETE", path: `/backends/weighted/${WB}`, body: { description: "", metadata: "", backends: {} } },
      { method: "PUT", path: `/edges/https/${EDGE}/routes/${ROUTE}/saml`, body: null },
    ];
    const messages: string[] = [];
    for (const r of refusals) messages.push((await errorOf(client.send(r as never))).message);
    expect(messages).toEqual([
      "GET /backends/weighted: not a write edgeplan makes (a weighted backend's POST, PATCH or DELETE, or a module's PUT or DELETE); make the plan again with edgeplan plan",
      `PUT /backends/weighted/${WB}: not a write edgeplan makes (a weighted backend's POST, PATCH or DELETE, or a module's PUT or DELETE); make the plan again with edgeplan plan`,
      `PATCH /backends/weighted/${WB}?x=1: not a write edgeplan makes (a weighted backend's POST, PATCH or DELETE, or a module's PUT or DELETE); make the plan again with edgeplan plan`,
      "DELETE /backends/weighted/a b: not a write edgeplan makes (a weighted backend's POST, PATCH or DELETE, or a module's PUT or DELETE); make the plan again with edgeplan plan",
      `DELETE /backends/weighted/${WB}: a DELETE carries no body; make the plan again with edgeplan plan`,
      `PUT /edges/https/${EDGE}/routes/${ROUTE}/saml: the request has no body; make the plan again with edgeplan plan`,
    ]);
    expect(stub.requests).toEqual([]);
  });

  it("answers a module's write with the module's schema, and an unknown route with RouteNotFoundError", async () => {
    const { client } = await setup((_req, res, n) => (n === 1 ? json(res, 200, { enabled: "yes" }) : apiError(res, 404, "ERR_NGROK_404", "route not found", {})));
    const bad = await errorOf(client.send(putModule(EDGE, ROUTE, "circuit_breaker", { enabled: true })));
    expect(bad.message).toContain(`PUT /edges/https/${EDGE}/routes/${ROUTE}/circuit_breaker: 200: the answer does not match the API contract (enabled:`);
    const missing = await errorOf(client.send(deleteModule(EDGE, ROUTE, "saml")));
    expect(missing).toBeInstanceOf(RouteNotFoundError);
  });
});

describe("POST outcome unknown", () => {
  it("never resends a POST whose answer was lost", async () => {
    const { stub, client } = await setup((_req, res) => drop(res));
    const err = await errorOf(sendWb(client, postWb({ description: "", metadata: "", backends: {} })));
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect(err.message).toBe(
      "POST /backends/weighted: the outcome is unknown: the connection closed before the answer (UND_ERR_SOCKET); the request was not resent, because it may have been carried out: list the objects (by owner marker) before creating again",
    );
    expect(stub.requests).toHaveLength(1);
  });

  it("never resends a POST answered 5xx, even 503", async () => {
    const { stub, client } = await setup((_req, res) => apiError(res, 503, "ERR_NGROK_9999", "unavailable"));
    const err = await errorOf(sendWb(client, postWb({ description: "", metadata: "", backends: {} })));
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect((err as OutcomeUnknownError).status).toBe(503);
    expect(err.message).toContain("the outcome is unknown: the server answered 503 ERR_NGROK_9999: unavailable (operation op_stub)");
    expect(stub.requests).toHaveLength(1);
  });

  it("never resends a POST that timed out", async () => {
    const { stub, client } = await setup(() => undefined, { timeoutMs: 150 });
    const err = await errorOf(sendWb(client, postWb({ description: "", metadata: "", backends: {} })));
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect(err.message).toContain("the outcome is unknown: no answer within the timeout (TIMEOUT)");
    expect(stub.requests).toHaveLength(1);
  });

  it("resends a POST answered 429: the server refused it without acting", async () => {
    const { stub, client } = await setup((_req, res, n) =>
      n === 1 ? apiError(res, 429, "ERR_NGROK_226", "slow down", { "retry-after": "1" }) : json(res, 201, weightedBackend(WB, stub.url)),
    );
    expect((await sendWb(client, postWb({ description: "", metadata: "", backends: {} }))).id).toBe(WB);
    expect(stub.requests.map((r) => r.method)).toEqual(["POST", "POST"]);
  });
});

describe("DELETE after a lost answer", () => {
  it("counts a 404 on a retry after a lost answer as done", async () => {
    const { stub, client } = await setup((_req, res, n) => (n === 1 ? drop(res) : apiError(res, 404, "ERR_NGROK_404", "not found")));
    await client.send(deleteWb(WB));
    expect(stub.requests.map((r) => r.method)).toEqual(["DELETE", "DELETE"]);
  });

  it("reports a 404 on the first attempt", async () => {
    const { client } = await setup((_req, res) => apiError(res, 404, "ERR_NGROK_404", "weighted backend not found"));
    const err = await errorOf(client.send(deleteWb(WB)));
    expect((err as ApiError).status).toBe(404);
    expect(err.message).toBe(`DELETE /backends/weighted/${WB}: 404 ERR_NGROK_404: weighted backend not found (operation op_stub)`);
  });

  it("reports a 404 after a 429: the first attempt did nothing, so someone else deleted it", async () => {
    const { client } = await setup((_req, res, n) => (n === 1 ? apiError(res, 429, "ERR_NGROK_226", "slow") : apiError(res, 404, "ERR_NGROK_404", "gone")));
    expect(((await errorOf(client.send(deleteWb(WB)))) as ApiError).status).toBe(404);
  });

  it("treats module-not-set on a retried module delete as done", async () => {
    const { stub, client } = await setup((_req, res, n) =>
      n === 1 ? apiError(res, 504, undefined, "gateway timeout") : apiError(res, 404, "ERR_NGROK_7400", "module not set"),
    );
    await client.send(deleteModule(EDGE, ROUTE, "saml"));
    expect(stub.requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      `DELETE /edges/https/${EDGE}/routes/${ROUTE}/saml`,
      `DELETE /edges/https/${EDGE}/routes/${ROUTE}/saml`,
    ]);
  });
});

describe("answers", () => {
  it("refuses an answer that does not match the wire schema", async () => {
    const { client } = await setup((_req, res) => json(res, 200, { id: WB, backends: { x: "heavy" } }));
    const err = await errorOf(client.getWeightedBackend(WB));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toMatch(
      new RegExp(`^GET /backends/weighted/${WB}: 200: the answer does not match the API contract \\(uri: .+\\); check that --api-url points at the API$`),
    );
  });

  it("reads a child backend by its type's path with its type's schema: null for 404, a contract error for a wrong shape", async () => {
    const SC = idOf("bkdsc", 1);
    const body = { id: SC, uri: `http://x/backends/static/${SC}`, created_at: "2025-01-01T00:00:00Z", description: "", metadata: "", address: "a:1", tls: { enabled: true } };
    let n = 0;
    const { client, stub } = await setup((_req, res) => {
      n++;
      if (n === 1) json(res, 200, body);
      else if (n === 2) apiError(res, 404, "ERR_NGROK_404", `static address backend ${SC} was not found`);
      else json(res, 200, { ...body, tls: true });
    });
    expect(await client.getChildBackend("static_address", SC)).toEqual(body);
    expect(await client.getChildBackend("static_address", SC)).toBeNull();
    const err = await errorOf(client.getChildBackend("static_address", SC));
    expect(err.message).toMatch(
      new RegExp(`^GET /backends/static/${SC}: 200: the answer does not match the API contract \\(tls: .+\\); check that --api-url points at the API$`),
    );
    expect(stub.requests.map((r) => `${r.method} ${r.url}`)).toEqual(Array(3).fill(`GET /backends/static/${SC}`));
  });

  it("stops reading an answer that never ends: a GET fails at once, a POST's outcome is unknown; neither is resent", async () => {
    // Bounded: 1 MiB chunks until the client hangs up, at most 100 of them.
    const endless: Handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(1024 * 1024, " ");
      let sent = 0;
      const more = (): void => {
        while (sent < 100 && !res.destroyed && res.write(chunk)) sent++;
        if (sent >= 100 || res.destroyed) res.end();
      };
      res.on("drain", () => {
        sent++;
        more();
      });
      more();
    };
    const { stub, client } = await setup(endless);
    const err = await errorOf(client.getWeightedBackend(WB));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toBe(`GET /backends/weighted/${WB}: 0: the answer from ${stub.url} is larger than any answer of the API (67108864 bytes); check --api-url`);
    expect(stub.requests).toHaveLength(1);
    const post = await errorOf(sendWb(client, postWb({ description: "", metadata: "", backends: {} })));
    expect(post).toBeInstanceOf(OutcomeUnknownError);
    expect(stub.requests).toHaveLength(2);
  });

  it("refuses an answer that is not JSON", async () => {
    const { client } = await setup((_req, res) => {
      res.writeHead(200, { "content-type": "text/plain" });
      res.end("login");
    });
    expect((await errorOf(client.getWeightedBackend(WB))).message).toBe(`GET /backends/weighted/${WB}: 200: the answer is not JSON; check that --api-url points at the API`);
  });

  it("says that another server answered with an HTML page, and never prints the page", async () => {
    const page = (status: number, type: string) => (_req: unknown, res: import("node:http").ServerResponse) => {
      res.writeHead(status, { "content-type": type });
      res.end("<!DOCTYPE html>\n<html><body><h1>Bad Gateway</h1><p>nginx</p></body></html>");
    };
    const said = (status: number, url: string) => `${status}: the server at ${url} answered ${status} with an HTML page, not the API's JSON: is --api-url the API's address?`;
    for (const [status, type] of [
      [502, "text/html; charset=utf-8"],
      [404, "text/html"],
      [200, "text/html"],
      [404, "text/plain"],
    ] as const) {
      const { stub, client } = await setup(page(status, type));
      const message = (await errorOf(client.getWeightedBackend(WB))).message;
      const retried = status === 502 ? " (gave up after 4 attempts)" : "";
      expect(message).toBe(`GET /backends/weighted/${WB}: ${said(status, stub.url)}${retried}`);
    }
  });

  it("explains 401 and 403 as a key problem", async () => {
    const { client } = await setup((_req, res, n) =>
      apiError(res, n === 1 ? 401 : 403, n === 1 ? "ERR_NGROK_203" : "ERR_NGROK_403", "unknown key", { "www-authenticate": "Bearer" }),
    );
    for (const status of [401, 403]) {
      const err = await errorOf(client.listWeightedBackends());
      expect(err.message).toBe(
        `GET /backends/weighted?limit=100: ${status} ${status === 401 ? "ERR_NGROK_203" : "ERR_NGROK_403"}: unknown key; the API key was refused: check EDGEPLAN_API_KEY (or --api-key-file) and that the key belongs to this account (operation op_stub)`,
      );
    }
  });

  it("never lets the key out, even when a server echoes it", async () => {
    const { client, lines } = await setup((req, res) => apiError(res, 400, "ERR_NGROK_201", `bad credential: ${req.headers.authorization ?? ""}`));
    const err = await errorOf(client.getWeightedBackend(WB));
    expect(err.message).toBe(`GET /backends/weighted/${WB}: 400 ERR_NGROK_201: bad credential: Bearer [redacted] (operation op_stub)`);
    expect(String(err.stack)).not.toContain(KEY);
    expect(JSON.stringify(err)).not.toContain(KEY);
    expect(lines.join("\n")).not.toContain(KEY);
  });

  it("reads the operation id from the header, else from the error body", async () => {
    const { client } = await setup((_req, res, n) =>
      n === 1 ? apiError(res, 400, "ERR_NGROK_215", "bad", { "ngrok-operation-id": "op_header" }) : apiError(res, 400, "ERR_NGROK_215", "bad"),
    );
    expect(((await errorOf(client.getWeightedBackend(WB))) as ApiError).operationId).toBe("op_header");
    expect(((await errorOf(client.getWeightedBackend(WB))) as ApiError).operationId).toBe("op_stub");
  });
});

describe("paging", () => {
  it("follows next_page_uri and keeps each object once", async () => {
    const { stub, client } = await setup((req, res) => {
      const page = req.url.includes("before_id") ? 2 : 1;
      json(res, 200, {
        backends: page === 1 ? [weightedBackend(idOf("bkdwd", 3), stub.url), weightedBackend(idOf("bkdwd", 2), stub.url)] : [weightedBackend(idOf("bkdwd", 1), stub.url)],
        uri: `${stub.url}/backends/weighted`,
        next_page_uri: page === 1 ? `${stub.url}/backends/weighted?before_id=${idOf("bkdwd", 2)}&limit=100` : null,
      });
    });
    const all = await client.listWeightedBackends();
    expect(all.map((w) => w.id)).toEqual([idOf("bkdwd", 3), idOf("bkdwd", 2), idOf("bkdwd", 1)]);
    expect(stub.requests.map((r) => r.url)).toEqual(["/backends/weighted?limit=100", `/backends/weighted?before_id=${idOf("bkdwd", 2)}&limit=100`]);
  });

  it("refuses a next_page_uri on another origin and sends it nothing", async () => {
    const other = await startStub();
    stubs.push(other);
    const { stub, client } = await setup((_req, res) =>
      json(res, 200, { backends: [], uri: `${stub.url}/backends/weighted`, next_page_uri: `${other.url}/backends/weighted?before_id=x&limit=100` }),
    );
    const err = await errorOf(client.listWeightedBackends());
    expect(err.message).toBe(
      `GET /backends/weighted?limit=100: 200: next_page_uri leaves the list (${other.url}/backends/weighted, expected ${stub.url}/backends/weighted); not followed; check that --api-url points at the API`,
    );
    expect(other.requests).toHaveLength(0);
  });

  it("refuses a next_page_uri that repeats a page", async () => {
    const { stub, client } = await setup((_req, res) =>
      json(res, 200, { backends: [], uri: `${stub.url}/backends/weighted`, next_page_uri: `${stub.url}/backends/weighted?limit=100` }),
    );
    expect((await errorOf(client.listWeightedBackends())).message).toContain("next_page_uri repeats an earlier page (/backends/weighted?limit=100)");
    expect(stub.requests).toHaveLength(1);
  });

  it("stops a list that never ends after 1,000 pages, and asks for no page beyond", async () => {
    const { stub, client } = await setup((req, res) => {
      const n = Number(/before_id=(\d+)/.exec(req.url)?.[1] ?? 0);
      json(res, 200, { backends: [], uri: `${stub.url}/backends/weighted`, next_page_uri: `${stub.url}/backends/weighted?before_id=${n + 1}&limit=100` });
    });
    expect((await errorOf(client.listWeightedBackends())).message).toContain("the list did not end after 1000 pages");
    expect(stub.requests).toHaveLength(1000);
  }, 60_000);

  it("reads the first page of the edge list alone, and says whether it holds every edge", async () => {
    const edge = (id: string) => ({ id, uri: `${stub.url}/edges/https/${id}`, created_at: "2025-09-04T10:11:37Z", description: "", metadata: "", hostports: [], routes: [] });
    let more = true;
    const { stub, client } = await setup((_req, res) =>
      json(res, 200, { https_edges: [edge(EDGE)], uri: `${stub.url}/edges/https`, next_page_uri: more ? `${stub.url}/edges/https?before_id=${EDGE}&limit=100` : null }),
    );
    const first = await client.firstEdges();
    expect({ ids: first.edges.map((e) => e.id), complete: first.complete }).toEqual({ ids: [EDGE], complete: false });
    more = false;
    expect((await client.firstEdges()).complete).toBe(true);
    expect(stub.requests.map((r) => r.url)).toEqual(["/edges/https?limit=100", "/edges/https?limit=100"]);
  });
});

describe("edges and modules", () => {
  it("says an unknown edge does not exist", async () => {
    const { client } = await setup((_req, res) => apiError(res, 404, "ERR_NGROK_404", "not found"));
    const err = await errorOf(client.getEdge(EDGE));
    expect(err.message).toBe(`GET /edges/https/${EDGE}: 404 ERR_NGROK_404: edge ${EDGE} does not exist (operation op_stub)`);
  });

  it("says an edge does not exist for a 404 without an error code too", async () => {
    const { client } = await setup((_req, res) => json(res, 404, { status_code: 404, msg: "Not Found", details: { path: `/edges/https/${EDGE}` } }));
    const err = await errorOf(client.getEdge(EDGE));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toBe(`GET /edges/https/${EDGE}: 404: edge ${EDGE} does not exist`);
  });

  it("reads an unset module as null, and a missing route as RouteNotFoundError", async () => {
    const { stub, client } = await setup((_req, res) =>
      json(res, 200, {
        id: EDGE,
        uri: `${stub.url}/edges/https/${EDGE}`,
        created_at: "2025-09-04T10:11:37Z",
        description: "",
        metadata: "",
        hostports: [],
        routes: [
          {
            id: ROUTE,
            edge_id: EDGE,
            uri: `${stub.url}/edges/https/${EDGE}/routes/${ROUTE}`,
            created_at: "2025-09-04T10:11:37Z",
            match: "/",
            match_type: "path_prefix",
            saml: null,
            circuit_breaker: null,
          },
        ],
      }),
    );
    const [route] = await readRoutes(client, [{ edge: EDGE, route: ROUTE, modules: ["saml", "circuit_breaker"] }]);
    expect([route?.saml, route?.circuit_breaker]).toEqual([null, null]);
    const missing = idOf("edghtsrt", 2);
    const err = await errorOf(readRoutes(client, [{ edge: EDGE, route: missing, modules: ["saml"] }]));
    expect(err).toBeInstanceOf(RouteNotFoundError);
    expect(err.message).toBe(`route ${missing} does not exist on edge ${EDGE}; routes and edges are not created by edgeplan: check the ids in the manifests`);
  });

  it("sends the full module settings on PUT and validates the answer", async () => {
    const cb = { enabled: true, tripped_duration: 120, rolling_window: 300, num_buckets: 5, volume_threshold: 20, error_threshold_percentage: 0.2 };
    const { stub, client } = await setup((req, res) => json(res, 200, JSON.parse(req.body) as object));
    expect(await sendModule(client, putModule(EDGE, ROUTE, "circuit_breaker", cb), "circuit_breaker")).toEqual(cb);
    expect(stub.requests[0]?.method).toBe("PUT");
    expect(JSON.parse(stub.requests[0]?.body ?? "")).toEqual(cb);
  });
});
