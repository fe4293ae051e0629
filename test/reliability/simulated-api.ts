/**
 * An in-memory stand-in for the API client that enforces the rules of docs/api.md a reconciler can break (a child must
 * exist, no cycles, no deleting what is referenced, PATCH without `backends` empties the map, a module PUT
 * replaces the whole module with defaults for what it leaves out) and injects faults on writes: refused before
 * anything is done, or carried out with the answer lost. It lets the real plan and apply engine run thousands of
 * times without a socket.
 */
import type { ApiClient, ClientStats, ModuleKind, ModuleOf, Sent, SettingsOf, WeightedBackendBody, WriteRequest } from "../../src/api/client.js";
import { childBackendPath, parseWritePath } from "../../src/model/paths.js";
import { OutcomeUnknownError } from "../../src/api/errors.js";
import { ApiError } from "../../src/model/errors.js";
import {
  CHILD_BACKEND_DEFAULTS,
  childBackendType,
  CIRCUIT_BREAKER_DEFAULTS,
  SAML_DEFAULTS,
  type ChildBackend,
  type CircuitBreakerModule,
  type FixtureBackendType,
  type HttpsEdge,
  type SamlModule,
  type WeightedBackend,
} from "../../src/model/wire.js";

export interface SimRoute {
  edge: string;
  route: string;
  saml: SamlModule | null;
  circuit_breaker: CircuitBreakerModule | null;
}

/** Decides the fate of one write: go through, refuse before doing anything, or do it and lose the answer. */
export type FaultPlan = (method: string, path: string) => "ok" | "refuse" | "lose";

const BASE = "http://sim.invalid";

export class SimulatedApi implements ApiClient {
  readonly baseUrl = BASE;
  readonly backends = new Map<string, WeightedBackend>();
  readonly routes: SimRoute[];
  /** Fixture backend ids (children that are not weighted backends). */
  readonly fixtures: Set<string>;
  /** Writes that changed the store. */
  writes = 0;
  requests = 0;
  fault: FaultPlan = () => "ok";
  private next = 1;

  constructor(init: { backends: WeightedBackend[]; routes: SimRoute[]; fixtures: string[] }) {
    for (const b of init.backends) this.backends.set(b.id, structuredClone(b));
    this.routes = structuredClone(init.routes);
    this.fixtures = new Set(init.fixtures);
    // New ids sort after every existing one, as the API's KSUIDs do.
    this.next = init.backends.length + 1000;
  }

  private newId(): string {
    return `bkdwd_${String(this.next++).padStart(27, "0")}`;
  }

  /** Runs a write under the fault plan: `apply` is the store change. */
  private write<T>(method: string, path: string, apply: () => T): T {
    this.requests++;
    const fate = this.fault(method, path);
    if (fate === "refuse") throw new ApiError(method, path, 503, "ERR_NGROK_503", "the server is unavailable (simulated)", undefined);
    const result = apply();
    this.writes++;
    if (fate === "lose") {
      if (method === "POST") throw new OutcomeUnknownError(method, path, 0, undefined, "the connection closed before the answer (simulated)", undefined);
      throw new ApiError(method, path, 0, undefined, "no answer after every retry (simulated)", undefined);
    }
    return result;
  }

  private checkChildren(id: string | null, children: Record<string, number>, method: string, path: string): void {
    for (const [child, weight] of Object.entries(children)) {
      if (!Number.isInteger(weight) || weight < 0 || weight > 10_000) throw new ApiError(method, path, 400, "ERR_NGROK_6512", `weight ${weight}`, undefined);
      if (!this.backends.has(child) && !this.fixtures.has(child)) throw new ApiError(method, path, 400, "ERR_NGROK_6501", `${child} does not exist`, undefined);
    }
    if (id === null) return;
    // A cycle: `id` reachable from its own children.
    const seen = new Set<string>();
    const stack = Object.keys(children);
    while (stack.length > 0) {
      const c = stack.pop() as string;
      if (c === id) throw new ApiError(method, path, 400, "ERR_NGROK_6524", "cycle", undefined);
      if (seen.has(c)) continue;
      seen.add(c);
      stack.push(...Object.keys(this.backends.get(c)?.backends ?? {}));
    }
  }

  /** One planned write, dispatched on its path as the server routes it. */
  async send(request: WriteRequest): Promise<Sent> {
    const target = parseWritePath(request.path);
    const body = request.body as WeightedBackendBody;
    if (target?.kind === "weighted_backends" && request.method === "POST") return { kind: "weighted_backend", object: this.create(body) };
    if (target?.kind === "weighted_backend" && request.method === "PATCH") return { kind: "weighted_backend", object: this.update(target.id, body) };
    if (target?.kind === "weighted_backend" && request.method === "DELETE") {
      this.remove(target.id);
      return { kind: "weighted_backend", object: null };
    }
    if ((target?.kind === "saml" || target?.kind === "circuit_breaker") && request.method === "PUT") {
      return { kind: target.kind, object: this.put(target.edge, target.route, target.kind, request.body as never) } as Sent;
    }
    if ((target?.kind === "saml" || target?.kind === "circuit_breaker") && request.method === "DELETE") {
      this.removeModule(target.edge, target.route, target.kind);
      return { kind: target.kind, object: null };
    }
    throw new ApiError(request.method, request.path, 405, undefined, "not a write the simulation knows", undefined);
  }

  async listWeightedBackends(): Promise<WeightedBackend[]> {
    this.requests++;
    return [...this.backends.values()].sort((a, b) => (a.id < b.id ? 1 : -1)).map((b) => structuredClone(b));
  }

  async getWeightedBackend(id: string): Promise<WeightedBackend | null> {
    this.requests++;
    const b = this.backends.get(id);
    return b ? structuredClone(b) : null;
  }

  /** A fixture backend of the id's type with every field empty, or null when the account holds none with this id. */
  async getChildBackend(type: FixtureBackendType, id: string): Promise<ChildBackend | null> {
    this.requests++;
    if (!this.fixtures.has(id) || childBackendType(id) !== type) return null;
    return { id, uri: `${BASE}${childBackendPath(type, id)}`, created_at: "2026-01-01T00:00:00Z", ...CHILD_BACKEND_DEFAULTS[type], tunnels: [] } as ChildBackend;
  }

  async listChildBackends(type: FixtureBackendType): Promise<ChildBackend[]> {
    const ids = [...this.fixtures]
      .filter((id) => childBackendType(id) === type)
      .sort()
      .reverse();
    const found = await Promise.all(ids.map((id) => this.getChildBackend(type, id)));
    this.requests -= ids.length - 1;
    return found as ChildBackend[];
  }

  private create(body: WeightedBackendBody): WeightedBackend {
    const path = "/backends/weighted";
    this.checkChildren(null, body.backends, "POST", path);
    return this.write("POST", path, () => {
      const id = this.newId();
      const wb: WeightedBackend = {
        id,
        uri: `${BASE}${path}/${id}`,
        created_at: "2026-01-01T00:00:00Z",
        description: body.description,
        metadata: body.metadata,
        backends: { ...body.backends },
      };
      this.backends.set(id, wb);
      return structuredClone(wb);
    });
  }

  private update(id: string, body: WeightedBackendBody): WeightedBackend {
    const path = `/backends/weighted/${id}`;
    const old = this.backends.get(id);
    if (!old) throw new ApiError("PATCH", path, 404, "ERR_NGROK_404", `${id} was not found`, undefined);
    // docs/api.md: an absent `backends` empties the map.
    const backends = body.backends ?? {};
    this.checkChildren(id, backends, "PATCH", path);
    return this.write("PATCH", path, () => {
      const wb = { ...old, description: body.description ?? old.description, metadata: body.metadata ?? old.metadata, backends: { ...backends } };
      this.backends.set(id, wb);
      return structuredClone(wb);
    });
  }

  private remove(id: string): void {
    const path = `/backends/weighted/${id}`;
    if (!this.backends.has(id)) throw new ApiError("DELETE", path, 404, "ERR_NGROK_404", `${id} was not found`, undefined);
    const parent = [...this.backends.values()].find((b) => Object.hasOwn(b.backends, id));
    if (parent) throw new ApiError("DELETE", path, 400, "ERR_NGROK_6502", `${id} is referenced by ${parent.id}`, undefined);
    this.write("DELETE", path, () => this.backends.delete(id));
  }

  async getEdge(edgeId: string): Promise<HttpsEdge> {
    this.requests++;
    const routes = this.routes.filter((r) => r.edge === edgeId);
    if (routes.length === 0) throw new ApiError("GET", `/edges/https/${edgeId}`, 404, "ERR_NGROK_404", `edge ${edgeId} was not found`, undefined);
    return {
      id: edgeId,
      uri: `${BASE}/edges/https/${edgeId}`,
      created_at: "2026-01-01T00:00:00Z",
      description: "",
      metadata: "",
      hostports: [],
      routes: routes.map((r) => ({
        id: r.route,
        edge_id: r.edge,
        uri: `${BASE}/edges/https/${r.edge}/routes/${r.route}`,
        created_at: "2026-01-01T00:00:00Z",
        match: "/",
        match_type: "path_prefix",
        saml: structuredClone(r.saml),
        circuit_breaker: structuredClone(r.circuit_breaker),
      })),
    };
  }

  async listEdges(): Promise<HttpsEdge[]> {
    const edges = [...new Set(this.routes.map((r) => r.edge))].sort().reverse();
    const out: HttpsEdge[] = [];
    for (const e of edges) out.push(await this.getEdge(e));
    return out;
  }

  async firstEdges(): Promise<{ edges: HttpsEdge[]; complete: boolean }> {
    const all = await this.listEdges();
    return { edges: all.slice(0, 100), complete: all.length <= 100 };
  }

  private route(edge: string, route: string, method: string): SimRoute {
    const r = this.routes.find((x) => x.edge === edge && x.route === route);
    if (!r) throw new ApiError(method, `/edges/https/${edge}/routes/${route}`, 404, "ERR_NGROK_404", "route not found", undefined);
    return r;
  }

  private put<K extends ModuleKind>(edge: string, route: string, kind: K, settings: SettingsOf[K]): ModuleOf[K] {
    const r = this.route(edge, route, "PUT");
    return this.write("PUT", `/edges/https/${edge}/routes/${route}/${kind}`, () => {
      if (kind === "saml") {
        const base = `https://idp.example/saml/${route}`;
        // A replace keeps the signing certificate of a module that was already set.
        const pem = r.saml?.request_signing_certificate_pem ?? `cert-${route}-${this.next++}`;
        r.saml = {
          ...SAML_DEFAULTS,
          ...(settings as SettingsOf["saml"]),
          entity_id: base,
          assertion_consumer_service_url: `${base}/acs`,
          single_logout_url: `${base}/slo`,
          request_signing_certificate_pem: pem,
          metadata_url: base,
          idp_metadata_url: "",
        };
      } else {
        r.circuit_breaker = { ...CIRCUIT_BREAKER_DEFAULTS, ...(settings as SettingsOf["circuit_breaker"]) };
      }
      return structuredClone(r[kind]) as ModuleOf[K];
    });
  }

  private removeModule(edge: string, route: string, kind: ModuleKind): void {
    const r = this.route(edge, route, "DELETE");
    if (r[kind] === null) throw new ApiError("DELETE", `/edges/https/${edge}/routes/${route}/${kind}`, 404, "ERR_NGROK_7400", "module not set", undefined);
    this.write("DELETE", `/edges/https/${edge}/routes/${route}/${kind}`, () => {
      r[kind] = null;
    });
  }

  stats(): ClientStats {
    return { requests: this.requests, retries: 0, byStatus: {}, status429: 0 };
  }

  async close(): Promise<void> {}
}
