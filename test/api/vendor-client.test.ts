/**
 * The vendor's generated TypeScript client (`@ngrok/ngrok-api` 0.11.0) against the real server over a socket: the
 * module operations with its `{edge_id, id, module}` bodies, its paging (it sends `beforeId`), and its error shape.
 * The server comes from the shared test helper, so this file runs against whichever store that helper provides.
 */
import { readFileSync } from "node:fs";
import { Ngrok } from "@ngrok/ngrok-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiClient, fakeId, startTestServer, type ApiClient, type TestServer } from "../helpers/server.js";

const IDP = readFileSync(new URL("../server/fixtures/idp-metadata.xml", import.meta.url), "utf8");
const EDGE = fakeId("edghts", 1);
const ROUTE = fakeId("edghtsrt", 1);
const SP = "https://sp.test.example";

let s: TestServer;
let raw: ApiClient;
let ngrok: Ngrok;

beforeAll(async () => {
  s = await startTestServer({
    spBase: SP,
    fixtures: {
      edges: [{ id: EDGE, routes: [{ id: ROUTE, match: "/", match_type: "path_prefix" }] }],
      backends: [
        { id: fakeId("bkdhr", 1), type: "http_response", body: "gone", headers: { a: "b" }, status_code: 410, description: "d" },
        { id: fakeId("bkdtg", 1), type: "tunnel_group", labels: { app: "foo" } },
        { id: fakeId("bkdfo", 1), type: "failover", backends: [fakeId("bkdhr", 1)] },
        { id: fakeId("bkdsc", 1), type: "static_address", address: "10.0.0.1:443", tls: { enabled: true } },
      ],
    },
  });
  raw = apiClient(s.url, s.apiKey);
  ngrok = new Ngrok({ baseUrl: s.url, apiToken: s.apiKey });
});
afterAll(() => s.close());

/** What the server's log says it received, from `fromLine` on: method, path and status. */
function received(fromLine: number): string[] {
  return s.logLines.slice(fromLine).map((l) => `${String(l.method)} ${String(l.path)} ${String(l.status)}`);
}

describe("the vendor's client, @ngrok/ngrok-api 0.11.0", () => {
  it("replaces, gets and deletes the SAML module with its {edge_id, id, module} bodies", async () => {
    const saml = ngrok.edgeModules.edgeRouteSamlModule;
    const from = s.logLines.length;
    const put = await saml.replace({
      edgeId: EDGE,
      id: ROUTE,
      module: { idpMetadata: IDP, authorizedGroups: ["eng"], allowIdpInitiated: false, cookiePrefix: "x." } as never,
    });
    expect(put).toMatchObject({
      enabled: true,
      idpMetadata: IDP,
      authorizedGroups: ["eng"],
      allowIdpInitiated: false,
      cookiePrefix: "x.",
      entityId: `${SP}/saml/${ROUTE}`,
      assertionConsumerServiceUrl: `${SP}/saml/${ROUTE}/acs`,
    });
    // What the server holds, read without the vendor's client.
    const held = await raw.get(`/edges/https/${EDGE}/routes/${ROUTE}/saml`);
    expect(held.json).toMatchObject({ idp_metadata: IDP, authorized_groups: ["eng"], allow_idp_initiated: false, cookie_prefix: "x." });

    const got = await saml.get({ edgeId: EDGE, id: ROUTE });
    expect(got).toEqual(put);
    // The DELETE is answered 204 with an empty body, as docs/api.md says. The generated client parses every answer
    // as JSON, then reads the parser's complaint as an error body, so its promise rejects with a SyntaxError although
    // the module is deleted (the same happens against any server that answers a delete with 204 and no body).
    await expect(saml.delete({ edgeId: EDGE, id: ROUTE })).rejects.toThrow(SyntaxError);
    expect((await raw.get(`/edges/https/${EDGE}/routes/${ROUTE}/saml`)).json.error_code).toBe("ERR_NGROK_7400");
    expect(received(from)).toEqual([
      `PUT /edges/https/${EDGE}/routes/${ROUTE}/saml 200`,
      `GET /edges/https/${EDGE}/routes/${ROUTE}/saml 200`,
      `GET /edges/https/${EDGE}/routes/${ROUTE}/saml 200`,
      `DELETE /edges/https/${EDGE}/routes/${ROUTE}/saml 204`,
      `GET /edges/https/${EDGE}/routes/${ROUTE}/saml 404`,
    ]);
  });

  it("replaces, gets and deletes the circuit breaker module", async () => {
    const cb = ngrok.edgeModules.edgeRouteCircuitBreakerModule;
    const module = { trippedDuration: 120, rollingWindow: 300, numBuckets: 5, volumeThreshold: 20, errorThresholdPercentage: 0.25 };
    const put = await cb.replace({ edgeId: EDGE, id: ROUTE, module });
    expect(put).toEqual({ enabled: true, ...module });
    expect((await raw.get(`/edges/https/${EDGE}/routes/${ROUTE}/circuit_breaker`)).json).toEqual({
      enabled: true,
      tripped_duration: 120,
      rolling_window: 300,
      num_buckets: 5,
      volume_threshold: 20,
      error_threshold_percentage: 0.25,
    });
    expect(await cb.get({ edgeId: EDGE, id: ROUTE })).toEqual(put);
    await expect(cb.delete({ edgeId: EDGE, id: ROUTE })).rejects.toThrow(SyntaxError);
    expect((await raw.get(`/edges/https/${EDGE}/routes/${ROUTE}/circuit_breaker`)).status).toBe(404);
  });

  it("lists 7 weighted backends at page size 3: three pages, each object once, newest first", async () => {
    const made: string[] = [];
    for (let i = 0; i < 7; i++) {
      const r = await raw.post("/backends/weighted", { backends: {}, description: `page ${i}` });
      expect(r.status, r.text).toBe(201);
      made.push(r.json.id as string);
    }
    const from = s.logLines.length;
    const listed = await ngrok.backends.weightedBackends.list(undefined, "3");
    expect(listed.map((b) => b.id)).toEqual([...made].reverse());
    expect(listed.map((b) => b.description)).toEqual(["page 6", "page 5", "page 4", "page 3", "page 2", "page 1", "page 0"]);
    expect(received(from)).toEqual(["GET /backends/weighted 200", "GET /backends/weighted 200", "GET /backends/weighted 200"]);
  });

  it("gets and lists the four child backend kinds by their own paths and fields", async () => {
    const from = s.logLines.length;
    const hr = await ngrok.backends.httpResponseBackends.get(fakeId("bkdhr", 1));
    expect(hr).toMatchObject({ id: fakeId("bkdhr", 1), uri: `${s.url}/backends/http_response/${fakeId("bkdhr", 1)}`, description: "d", body: "gone", statusCode: 410 });
    // Declared a Map, read as the JSON object it is.
    expect(hr.headers as unknown).toEqual({ a: "b" });
    const tg = await ngrok.backends.tunnelGroupBackends.get(fakeId("bkdtg", 1));
    expect(tg.labels as unknown).toEqual({ app: "foo" });
    expect(tg.tunnels).toEqual([]);
    expect((await ngrok.backends.failoverBackends.get(fakeId("bkdfo", 1))).backends).toEqual([fakeId("bkdhr", 1)]);
    expect(await ngrok.backends.staticBackends.get(fakeId("bkdsc", 1))).toMatchObject({ address: "10.0.0.1:443", tls: { enabled: true } });
    expect((await ngrok.backends.staticBackends.list()).map((b) => b.id)).toEqual([fakeId("bkdsc", 1)]);
    expect(received(from)).toEqual([
      `GET /backends/http_response/${fakeId("bkdhr", 1)} 200`,
      `GET /backends/tunnel_group/${fakeId("bkdtg", 1)} 200`,
      `GET /backends/failover/${fakeId("bkdfo", 1)} 200`,
      `GET /backends/static/${fakeId("bkdsc", 1)} 200`,
      "GET /backends/static 200",
    ]);
  });

  it("gives the server's error as its {errorCode, statusCode, msg, details} shape", async () => {
    let caught: unknown;
    try {
      await ngrok.edgeModules.edgeRouteSamlModule.get({ edgeId: EDGE, id: ROUTE });
    } catch (err) {
      caught = err;
    }
    expect(caught).toMatchObject({ errorCode: "ERR_NGROK_7400", statusCode: 404 });
    const error = caught as { msg: string; details: Map<string, string> };
    expect(error.msg).toMatch(/saml/i);
    expect(error.details).toBeInstanceOf(Map);
    // The client turns the keys of `details` into camel case too.
    expect([...error.details.keys()]).toEqual(["module", "operationId"]);
    expect(error.details.get("module")).toBe("saml");
    expect(error.details.get("operationId")).toMatch(/^op_[0-9A-Za-z]{27}$/);

    let refused: unknown;
    try {
      await ngrok.edgeModules.edgeRouteCircuitBreakerModule.replace({
        edgeId: EDGE,
        id: ROUTE,
        module: { trippedDuration: 120, rollingWindow: 300, numBuckets: 500, volumeThreshold: 0, errorThresholdPercentage: 0.5 },
      });
    } catch (err) {
      refused = err;
    }
    expect(refused).toMatchObject({ errorCode: "ERR_NGROK_7018", statusCode: 400 });
  });
});
