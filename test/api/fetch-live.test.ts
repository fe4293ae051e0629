/**
 * fetchLive and fetchTouched against a scripted server, counting the requests: a run issues exactly the reads it
 * needs.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createClient, type ApiClient } from "../../src/api/client.js";
import { RouteNotFoundError } from "../../src/api/errors.js";
import { fetchChildBackends, fetchLive, fetchTouched, startListings } from "../../src/api/fetch-live.js";
import type { CircuitBreakerModule, SamlModule } from "../../src/model/wire.js";
import { CB, SAML, desired, edgeRoute } from "./builders.js";
import { apiError, idOf, json, startStub, weightedBackend, type Recorded, type Stub } from "./stub-server.js";
import type { ServerResponse } from "node:http";

const E1 = idOf("edghts", 1);
const E2 = idOf("edghts", 2);
const E3 = idOf("edghts", 3);
const R1 = idOf("edghtsrt", 1);
const R2 = idOf("edghtsrt", 2);
const R3 = idOf("edghtsrt", 3);
const R4 = idOf("edghtsrt", 4);
const R9 = idOf("edghtsrt", 9);

const SAML_MODULE: SamlModule = {
  ...SAML,
  entity_id: `https://idp.edgeplan.localhost/saml/${R1}`,
  assertion_consumer_service_url: `https://idp.edgeplan.localhost/saml/${R1}/acs`,
  single_logout_url: `https://idp.edgeplan.localhost/saml/${R1}/slo`,
  request_signing_certificate_pem: "-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n",
  metadata_url: `https://idp.edgeplan.localhost/saml/${R1}`,
  idp_metadata_url: "",
};

type Modules = { saml: SamlModule | null; circuit_breaker: CircuitBreakerModule | null };

/** What the scripted server holds: edges -> routes -> modules. */
function world(): Record<string, Record<string, Modules>> {
  return {
    [E1]: { [R1]: { saml: SAML_MODULE, circuit_breaker: CB }, [R2]: { saml: SAML_MODULE, circuit_breaker: null } },
    [E2]: { [R3]: { saml: null, circuit_breaker: CB }, [R4]: { saml: SAML_MODULE, circuit_breaker: CB } },
  };
}

/**
 * How the scripted server answers `GET /edges/https`: its edges `perPage` to a page (the second page holds the rest),
 * or a 500.
 */
type EdgeList = { perPage: number } | "fail";

function serve(base: () => string, data = world(), edgeList: EdgeList = { perPage: 100 }) {
  return (req: Recorded, res: ServerResponse): void => {
    const path = req.url.split("?")[0] ?? "";
    if (path === "/edges/https") {
      if (edgeList === "fail") return apiError(res, 500, "ERR_NGROK_500", "the edge list is unavailable");
      const second = req.url.includes("before_id=");
      const ids = Object.keys(data);
      const page = second ? ids.slice(edgeList.perPage) : ids.slice(0, edgeList.perPage);
      const next = !second && ids.length > edgeList.perPage ? `${base()}/edges/https?limit=100&before_id=${ids[edgeList.perPage - 1]}` : null;
      return json(res, 200, { https_edges: page.map((id) => edgeBody(base(), id, data[id] ?? {})), uri: `${base()}/edges/https`, next_page_uri: next });
    }
    if (path === "/backends/weighted") {
      json(res, 200, { backends: [weightedBackend(idOf("bkdwd", 1), base())], uri: `${base()}/backends/weighted`, next_page_uri: null });
      return;
    }
    if (path.startsWith("/backends/weighted/")) {
      const id = path.slice("/backends/weighted/".length);
      if (id === idOf("bkdwd", 1)) json(res, 200, weightedBackend(id, base()));
      else apiError(res, 404, "ERR_NGROK_404", `weighted backend ${id} was not found`);
      return;
    }
    const m = /^\/edges\/https\/([^/]+)$/.exec(path);
    if (!m) return json(res, 404, { status_code: 404, msg: "Not Found", details: { path } });
    const [, edge = ""] = m;
    const routes = data[edge];
    if (!routes) return apiError(res, 404, "ERR_NGROK_404", `HTTPS edge ${edge} was not found`);
    return json(res, 200, edgeBody(base(), edge, routes));
  };
}

/** An edge as the API answers it, alone or in the edge list. */
function edgeBody(base: string, edge: string, routes: Record<string, Modules>): Record<string, unknown> {
  return {
    id: edge,
    uri: `${base}/edges/https/${edge}`,
    created_at: "2025-09-04T10:11:37Z",
    description: "",
    metadata: "",
    hostports: ["app.example.com:443"],
    routes: Object.entries(routes).map(([id, mods]) => ({
      id,
      edge_id: edge,
      uri: `${base}/edges/https/${edge}/routes/${id}`,
      created_at: "2025-09-04T10:11:37Z",
      match: "/",
      match_type: "path_prefix",
      ...mods,
    })),
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

async function setup(edgeList?: EdgeList): Promise<{ stub: Stub; client: ApiClient }> {
  let url = "";
  const stub = await startStub(serve(() => url, world(), edgeList));
  url = stub.url;
  stubs.push(stub);
  const client = createClient({
    baseUrl: stub.url,
    apiKey: "fetch-live-test-key",
    concurrency: 4,
    rateLimit: null,
    retries: 0,
    timeoutMs: 5000,
    versionHeader: "Ngrok-Version",
    insecureHttp: false,
  });
  clients.push(client);
  return { stub, client };
}

const manifests = desired([
  edgeRoute(E1, R1, "present", "present"),
  edgeRoute(E1, R2, "unmanaged", "present"),
  edgeRoute(E2, R3, "absent", "unmanaged"),
  edgeRoute(E2, R4, "unmanaged", "unmanaged"),
]);

const sorted = (rs: Recorded[]): string[] => rs.map((r) => `${r.method} ${r.url}`).sort();

describe("fetchLive", () => {
  it("reads the routes of several edges from the first page of the edge list, beside the list", async () => {
    const { stub, client } = await setup();
    const live = await fetchLive(client, manifests);
    expect(sorted(stub.requests)).toEqual(["GET /backends/weighted?limit=100", "GET /edges/https?limit=100"]);
    expect(live.weightedBackends.map((w) => w.id)).toEqual([idOf("bkdwd", 1)]);
    // R4 has no managed module: not in the live state. Unmanaged modules are null whatever the server holds.
    expect(live.routes.map((r) => [r.route, r.saml !== null, r.circuit_breaker !== null])).toEqual([
      [R1, true, true],
      [R2, false, false],
      [R3, false, false],
    ]);
    expect([live.routes[0]?.saml, live.routes[0]?.circuit_breaker]).toEqual([SAML_MODULE, CB]);
    expect(client.stats().requests).toBe(2);
  });

  it("reads the routes of one edge by id: one request, whatever the account holds", async () => {
    const { stub, client } = await setup();
    const live = await fetchLive(client, desired([edgeRoute(E1, R1, "present", "present"), edgeRoute(E1, R2, "unmanaged", "present")]));
    expect(sorted(stub.requests)).toEqual(["GET /backends/weighted?limit=100", `GET /edges/https/${E1}`]);
    expect(live.routes.map((r) => [r.route, r.saml !== null, r.circuit_breaker !== null])).toEqual([
      [R1, true, true],
      [R2, false, false],
    ]);
  });

  it("reads each edge by id when its own page of the edge list fails, and by id an edge that a page going on lacks", async () => {
    const failing = await setup("fail");
    await fetchLive(failing.client, manifests);
    expect(sorted(failing.stub.requests)).toEqual(
      ["GET /backends/weighted?limit=100", "GET /edges/https?limit=100", `GET /edges/https/${E1}`, `GET /edges/https/${E2}`].sort(),
    );
    const paged = await setup({ perPage: 1 });
    const live = await fetchLive(paged.client, manifests);
    expect(sorted(paged.stub.requests)).toEqual(["GET /backends/weighted?limit=100", "GET /edges/https?limit=100", `GET /edges/https/${E2}`].sort());
    expect(live.routes.map((r) => r.route)).toEqual([R1, R2, R3]);
  });

  it("issues only the list when no route module is managed", async () => {
    const { stub, client } = await setup();
    await fetchLive(client, desired([edgeRoute(E1, R1, "unmanaged", "unmanaged")]));
    expect(sorted(stub.requests)).toEqual(["GET /backends/weighted?limit=100"]);
  });

  it("names every missing route and edge in one error", async () => {
    const { client } = await setup();
    let err: unknown;
    try {
      await fetchLive(client, desired([edgeRoute(E1, R1, "present", "unmanaged"), edgeRoute(E1, R9, "present", "present"), edgeRoute(E3, R1, "absent", "unmanaged")]));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RouteNotFoundError);
    expect((err as RouteNotFoundError).missing).toEqual([
      { edge: E1, route: R9, edgeExists: true, near: [R1, R2] },
      { edge: E3, route: R1, edgeExists: false, near: [E1, E2] },
    ]);
    expect((err as Error).message).toBe(
      `route ${R9} does not exist on edge ${E1}; edge ${E3} does not exist (named with route ${R1}); routes and edges are not created by edgeplan: check the ids in the manifests`,
    );
  });
});

describe("fetchLive with the first page of the edge list read beside the listing (startListings)", () => {
  const modulesOf = (live: Awaited<ReturnType<typeof fetchLive>>) => live.routes.map((r) => [r.route, r.saml !== null, r.circuit_breaker !== null]);
  const EXPECTED = [
    [R1, true, true],
    [R2, false, false],
    [R3, false, false],
  ];

  it("reads no edge by id when the page holds every edge: two requests in all", async () => {
    const { stub, client } = await setup();
    const live = await fetchLive(client, manifests, { listings: startListings(client, { edges: true }) });
    expect(sorted(stub.requests)).toEqual(["GET /backends/weighted?limit=100", "GET /edges/https?limit=100"]);
    expect(modulesOf(live)).toEqual(EXPECTED);
    expect([live.routes[0]?.saml, live.routes[0]?.circuit_breaker]).toEqual([SAML_MODULE, CB]);
  });

  it("reads by id an edge that a page going on does not hold, and never the next page", async () => {
    const { stub, client } = await setup({ perPage: 1 });
    const live = await fetchLive(client, manifests, { listings: startListings(client, { edges: true }) });
    expect(sorted(stub.requests)).toEqual(["GET /backends/weighted?limit=100", "GET /edges/https?limit=100", `GET /edges/https/${E2}`].sort());
    expect(modulesOf(live)).toEqual(EXPECTED);
  });

  it("reports an edge that the whole list lacks without reading it", async () => {
    const { stub, client } = await setup();
    const missing = desired([edgeRoute(E1, R9, "present", "unmanaged"), edgeRoute(E3, R1, "absent", "unmanaged")]);
    const err = await fetchLive(client, missing, { listings: startListings(client, { edges: true }) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RouteNotFoundError);
    expect((err as RouteNotFoundError).missing).toEqual([
      { edge: E1, route: R9, edgeExists: true, near: [R1, R2] },
      { edge: E3, route: R1, edgeExists: false, near: [E1, E2] },
    ]);
    expect(sorted(stub.requests)).toEqual(["GET /backends/weighted?limit=100", "GET /edges/https?limit=100"]);
  });

  it("reads each edge by id when the page fails", async () => {
    const { stub, client } = await setup("fail");
    const live = await fetchLive(client, manifests, { listings: startListings(client, { edges: true }) });
    expect(sorted(stub.requests)).toEqual(["GET /backends/weighted?limit=100", "GET /edges/https?limit=100", `GET /edges/https/${E1}`, `GET /edges/https/${E2}`].sort());
    expect(modulesOf(live)).toEqual(EXPECTED);
  });

  it("reads no page of edges beside the listing when asked for the weighted backends alone", async () => {
    const { stub, client } = await setup();
    await fetchLive(client, desired([edgeRoute(E1, R1, "present", "present")]), { listings: startListings(client, { edges: false }) });
    expect(sorted(stub.requests)).toEqual(["GET /backends/weighted?limit=100", `GET /edges/https/${E1}`]);
  });
});

describe("fetchTouched", () => {
  it("re-reads weighted backends by id and modules with one edge read per edge", async () => {
    const { stub, client } = await setup();
    const live = await fetchTouched(client, {
      weightedBackendIds: [idOf("bkdwd", 1), idOf("bkdwd", 2), idOf("bkdwd", 1)],
      modules: [
        { edge: E1, route: R1, module: "saml" },
        { edge: E1, route: R2, module: "circuit_breaker" },
      ],
    });
    expect(sorted(stub.requests)).toEqual([`GET /backends/weighted/${idOf("bkdwd", 1)}`, `GET /backends/weighted/${idOf("bkdwd", 2)}`, `GET /edges/https/${E1}`].sort());
    // The deleted one is absent; only the asked-for modules are reported.
    expect(live.weightedBackends.map((w) => w.id)).toEqual([idOf("bkdwd", 1)]);
    expect(live.routes.map((r) => [r.route, r.saml !== null, r.circuit_breaker !== null])).toEqual([
      [R1, true, false],
      [R2, false, false],
    ]);
  });
});

describe("fetchChildBackends", () => {
  /** A server holding http response backends 1 to 6: each GET answered after 20 ms, so reads overlap. */
  async function childServer(): Promise<{ stub: Stub; client: ApiClient }> {
    const held = new Set([1, 2, 3, 4, 5, 6].map((n) => idOf("bkdhr", n)));
    const body = (id: string, base: string) => ({
      id,
      uri: `${base}/backends/http_response/${id}`,
      created_at: "2025-09-04T10:11:37Z",
      description: "",
      metadata: "",
      body: "",
      headers: {},
      status_code: 200,
    });
    const stub = await startStub((req, res) => {
      const path = req.url.split("?")[0] ?? "";
      if (path === "/backends/http_response") {
        json(res, 200, { backends: [...held].reverse().map((id) => body(id, stub.url)), uri: `${stub.url}${path}`, next_page_uri: null });
        return;
      }
      const id = path.slice("/backends/http_response/".length);
      setTimeout(() => (held.has(id) ? json(res, 200, body(id, stub.url)) : apiError(res, 404, "ERR_NGROK_404", `${id} was not found`)), 20);
    });
    stubs.push(stub);
    const client = createClient({
      baseUrl: stub.url,
      apiKey: "k",
      concurrency: 3,
      rateLimit: null,
      retries: 0,
      timeoutMs: 5000,
      versionHeader: "Ngrok-Version",
      insecureHttp: false,
    });
    clients.push(client);
    return { stub, client };
  }

  it("reads each id once, in parallel within the client's concurrency, and lists nothing when every one exists", async () => {
    const { stub, client } = await childServer();
    const ids = [1, 2, 3, 4, 5, 6].map((n) => idOf("bkdhr", n));
    const result = await fetchChildBackends(
      client,
      ids.map((id) => ({ type: "http_response" as const, id })),
    );
    expect(result).toEqual({ found: new Set(ids), known: new Map() });
    expect(sorted(stub.requests)).toEqual(ids.map((id) => `GET /backends/http_response/${id}`));
    expect(stub.maxInFlight).toBe(3);
  });

  it("lists a type once when ids of it are not found, for the suggestion", async () => {
    const { stub, client } = await childServer();
    const result = await fetchChildBackends(client, [
      { type: "http_response", id: idOf("bkdhr", 1) },
      { type: "http_response", id: idOf("bkdhr", 8) },
      { type: "http_response", id: idOf("bkdhr", 9) },
    ]);
    expect(result.found).toEqual(new Set([idOf("bkdhr", 1)]));
    expect(result.known.get("http_response")).toEqual([6, 5, 4, 3, 2, 1].map((n) => idOf("bkdhr", n)));
    // The listing comes after the reads: only a read that found nothing asks for it.
    expect(stub.requests.map((r) => `${r.method} ${r.url}`).at(-1)).toBe("GET /backends/http_response?limit=100");
    expect(sorted(stub.requests)).toEqual([...[1, 8, 9].map((n) => `GET /backends/http_response/${idOf("bkdhr", n)}`), "GET /backends/http_response?limit=100"]);
  });

  it("sends nothing when there is nothing to read", async () => {
    const { stub, client } = await childServer();
    expect(await fetchChildBackends(client, [])).toEqual({ found: new Set(), known: new Map() });
    expect(stub.requests).toEqual([]);
  });
});
