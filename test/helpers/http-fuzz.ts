/**
 * The HTTP fuzz's lane: one account, driven one request at a time through drawn steps (http-fuzz-steps.ts), with a
 * model of everything the account holds. Since nothing else writes to the account, the model is exact, and every
 * answer is checked against it:
 * - no status outside 2xx-4xx, and every error in the API's shape (docs/api.md "Error body") with its operation id;
 * - every successful write answers what was sent (defaults filled), and a read of the object right after gives
 *   back exactly that answer; a refused write leaves the object as the model holds it;
 * - every read (gets, lists with their paging, edges with their routes' modules) equals the model.
 */
import { isDeepStrictEqual } from "node:util";
import { CIRCUIT_BREAKER_DEFAULTS, SAML_DEFAULTS, SAML_FIELDS } from "../../src/model/wire.js";
import type { ChildRef, OddKind, QueryPart, RouteRef, Step, TargetRef } from "./http-fuzz-steps.js";
import { fakeId, http, type HttpOptions, type HttpResponse } from "./server.js";

type Json = Record<string, unknown>;

/** What a lane needs of the server and of its account's seeded objects. */
export interface LaneWorld {
  url: string;
  key: string;
  spBase: string;
  edge: string;
  routes: [string, string];
  fixtures: string[];
  idp: string;
}

/** A check that failed: what was sent, what came back, and what was wrong. */
export class FuzzFailure extends Error {
  override name = "FuzzFailure";
}

const OP_ID = /^op_[0-9A-Za-z]{27}$/;

/** Why an answer breaks the API's conventions (status range, operation id, error shape), or undefined. */
export function conventionProblem(r: HttpResponse): string | undefined {
  if (r.status < 200 || r.status >= 500) return `status ${r.status}`;
  const op = r.headers["ngrok-operation-id"];
  if (typeof op !== "string" || !OP_ID.test(op)) return `Ngrok-Operation-Id is ${JSON.stringify(op)}`;
  if (r.status < 400) return undefined;
  const j = r.json as Json | undefined;
  if (typeof j !== "object" || j === null || Array.isArray(j)) return "the error body is not a JSON object";
  const coded = Object.hasOwn(j, "error_code");
  const keys = coded ? ["error_code", "status_code", "msg", "details"] : ["status_code", "msg", "details"];
  if (!isDeepStrictEqual(Object.keys(j), keys)) return `the error body has the fields ${Object.keys(j).join(", ")}`;
  if (coded && !/^ERR_NGROK_\d+$/.test(String(j.error_code))) return `error_code ${JSON.stringify(j.error_code)}`;
  if (!coded && r.status !== 404 && r.status !== 405) return `a ${r.status} without error_code`;
  if (j.status_code !== r.status) return `status_code ${String(j.status_code)} in a ${r.status}`;
  if (typeof j.msg !== "string" || j.msg.trim() === "") return "msg is not a sentence";
  const details = j.details as Json;
  if (typeof details !== "object" || details === null || Object.values(details).some((v) => typeof v !== "string")) {
    return "details is not a map of strings";
  }
  if (details.operation_id !== op) return "details.operation_id is not the Ngrok-Operation-Id header";
  return undefined;
}

/** Percent-encodes every byte but the unreserved ones, as a client library would. */
function encodeQueryValue(s: string): string {
  return [...Buffer.from(s, "utf8")]
    .map((b) => (/[A-Za-z0-9_.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`))
    .join("");
}

const ODD_ANSWERS: Record<OddKind, [number, string | undefined]> = {
  "unknown-path": [404, undefined],
  "wrong-method": [405, undefined],
  "no-version": [400, "ERR_NGROK_218"],
  "wrong-version": [400, "ERR_NGROK_217"],
  "no-key": [401, "ERR_NGROK_200"],
  "wrong-key": [401, "ERR_NGROK_203"],
  "body-on-get": [400, "ERR_NGROK_211"],
  "wrong-content-type": [415, "ERR_NGROK_210"],
  "not-json": [400, "ERR_NGROK_213"],
  "json-array": [400, "ERR_NGROK_213"],
  "query-on-get": [400, "ERR_NGROK_231"],
  "malformed-id": [404, "ERR_NGROK_222"],
};

interface RouteModel {
  /** The route as answered, modules aside. */
  base: Json;
  saml: Json | null;
  circuit_breaker: Json | null;
}

export class Lane {
  /** HTTP requests sent so far. */
  requests = 0;
  /** SAML PUTs that made a new certificate. */
  keysMade = 0;
  /** The endpoints (`GET /backends/weighted/:bkdwd`) that answered a 2xx. */
  readonly succeeded = new Set<string>();
  private readonly backends = new Map<string, Json>();
  private edgeBase: Json = {};
  private readonly routeModels = new Map<string, RouteModel>();
  private current = "";

  constructor(private readonly w: LaneWorld) {}

  /** Reads the seeded edge and its routes into the model. */
  async start(): Promise<void> {
    const r = await this.send("GET", `/edges/https/${this.w.edge}`);
    this.expect(r.status === 200, r, "the seeded edge is readable");
    const { routes, ...base } = r.json as Json & { routes: Json[] };
    this.edgeBase = base;
    for (const { saml, circuit_breaker, ...rest } of routes) {
      this.routeModels.set(rest.id as string, { base: rest, saml: saml as Json | null, circuit_breaker: circuit_breaker as Json | null });
    }
  }

  /** Runs one step and checks it; throws FuzzFailure naming the request when a check fails. */
  async run(step: Step): Promise<void> {
    switch (step.op) {
      case "createWb":
        return this.createWb(step);
      case "patchWb":
        return this.patchWb(step);
      case "getWb":
        return this.getWb(this.backendId(step.target));
      case "deleteWb":
        return this.deleteWb(this.backendId(step.target));
      case "listWb":
        return this.list("/backends/weighted", "backends", step.query, () => [...this.backends.values()]);
      case "listEdges":
        return this.list("/edges/https", "https_edges", step.query, () => [this.edgeExpected()]);
      case "getEdge":
        return this.getEdge(step.target);
      case "getRoute":
        return this.getRoute(step.route);
      case "putSaml":
      case "putCircuitBreaker":
        return this.putModule(step);
      case "getModule":
        return this.getModule(step.kind, step.route);
      case "deleteModule":
        return this.deleteModule(step.kind, step.route);
      case "odd":
        return this.odd(step.kind);
    }
  }

  private async send(method: string, path: string, options: HttpOptions = {}, auth = true): Promise<HttpResponse> {
    const headers = auth ? { Authorization: `Bearer ${this.w.key}`, "Ngrok-Version": "2", ...options.headers } : { ...options.headers };
    this.requests++;
    const shown = options.rawBody !== undefined ? String(options.rawBody) : JSON.stringify(options.body);
    this.current = `${method} ${path}${shown === undefined ? "" : ` ${shown.slice(0, 600)}`}`;
    const r = await http(this.w.url, method, path, { ...options, headers });
    const problem = conventionProblem(r);
    if (problem) this.fail(r, problem);
    if (r.status < 300) this.succeeded.add(`${method} ${path.split("?")[0]?.replace(/\/(bkdwd|edghts|edghtsrt)_[0-9A-Za-z]{27}/g, "/:$1")}`);
    return r;
  }

  private fail(r: HttpResponse | undefined, what: string): never {
    const answer = r ? `; answered ${r.status} ${r.text.slice(0, 600)}` : "";
    throw new FuzzFailure(`${this.current}: ${what}${answer}`);
  }

  private expect(ok: boolean, r: HttpResponse, what: string): void {
    if (!ok) this.fail(r, `expected ${what}`);
  }

  private expectEqual(actual: unknown, expected: unknown, r: HttpResponse, what: string): void {
    if (!isDeepStrictEqual(actual, expected)) this.fail(r, `${what}: expected ${JSON.stringify(expected)?.slice(0, 600)}, got ${JSON.stringify(actual)?.slice(0, 600)}`);
  }

  /** Reads `path` and checks it gives `expected` (an object, or the 404 code when undefined). */
  private async readBack(path: string, expected: Json | undefined, missingCode = "ERR_NGROK_404"): Promise<void> {
    const writeAnswer = this.current;
    const r = await this.send("GET", path);
    if (expected === undefined) this.expectEqual([r.status, r.json?.error_code], [404, missingCode], r, `read-back after ${writeAnswer}`);
    else this.expectEqual([r.status, r.json], [200, expected], r, `read-back after ${writeAnswer}`);
  }

  private backendId(t: TargetRef): string {
    const ids = [...this.backends.keys()];
    if (t.to === "own" && ids.length > 0) return ids[t.n % ids.length] as string;
    return t.to === "malformed" ? `bkdwd_${t.n}` : fakeId("bkdwd", 900_000 + t.n);
  }

  private childKey(c: ChildRef, self: string | undefined): string {
    const ids = [...this.backends.keys()];
    if (c.to === "own" && ids.length > 0) return ids[c.n % ids.length] as string;
    if (c.to === "self" && self !== undefined) return self;
    if (c.to === "missing") return fakeId("bkdwd", 800_000 + c.n);
    if (c.to === "malformed") return c.key;
    return this.w.fixtures[c.n % this.w.fixtures.length] as string;
  }

  private wbBody(fields: Json, children: ChildRef[] | null, self?: string): Json {
    const { extra, ...body } = fields;
    // defineProperty, so that `__proto__` becomes a field and not the object's prototype.
    if (typeof extra === "string") Object.defineProperty(body, extra, { value: "x", enumerable: true, writable: true, configurable: true });
    if (children !== null) body.backends = Object.fromEntries(children.map((c) => [this.childKey(c, self), c.weight]));
    // What the server reads: JSON drops what it cannot carry (-0 becomes 0, undefined fields vanish).
    return JSON.parse(JSON.stringify(body)) as Json;
  }

  private expectedWb(id: string, created: string, description: unknown, metadata: unknown, backends: unknown): Json {
    return { id, uri: `${this.w.url}/backends/weighted/${id}`, created_at: created, description, metadata, backends };
  }

  private async createWb(step: Extract<Step, { op: "createWb" }>): Promise<void> {
    let body = this.wbBody(step.fields, step.children);
    let r: HttpResponse;
    if (step.rawBytes !== null) {
      const rest = JSON.stringify({ ...body, description: undefined });
      const raw = Buffer.concat([Buffer.from('{"description":"'), Buffer.from(step.rawBytes), Buffer.from(rest === "{}" ? '"}' : `",${rest.slice(1)}`)]);
      body = JSON.parse(raw.toString("utf8")) as Json;
      r = await this.send("POST", "/backends/weighted", { rawBody: raw, headers: { "Content-Type": "application/json" } });
    } else {
      r = await this.send("POST", "/backends/weighted", { body });
    }
    if (r.status !== 201) return this.expect(r.status >= 400, r, "201 or an error");
    const id = String(r.json.id);
    this.expect(!this.backends.has(id) && /^bkdwd_[0-9A-Za-z]{27}$/.test(id), r, "a new weighted backend id");
    const expected = this.expectedWb(id, r.json.created_at as string, body.description ?? "", body.metadata ?? "", body.backends);
    this.expectEqual(r.json, expected, r, "the created object as sent");
    this.expectEqual(Object.keys(r.json), Object.keys(expected), r, "the documented field order");
    this.backends.set(id, r.json as Json);
    await this.readBack(`/backends/weighted/${id}`, r.json as Json);
  }

  private async patchWb(step: Extract<Step, { op: "patchWb" }>): Promise<void> {
    const id = this.backendId(step.target);
    const body = this.wbBody(step.fields, step.children, id);
    if (step.bodyId !== "absent") body.id = step.bodyId === "same" ? id : `${id}x`;
    const r = await this.send("PATCH", `/backends/weighted/${id}`, { body });
    const before = this.backends.get(id);
    if (r.status !== 200) {
      this.expect(r.status >= 400, r, "200 or an error");
      if (before) await this.readBack(`/backends/weighted/${id}`, before);
      return;
    }
    if (!before) this.fail(r, "a 404 for an id this account never made");
    const expected = this.expectedWb(id, before.created_at as string, body.description ?? before.description, body.metadata ?? before.metadata, body.backends ?? {});
    this.expectEqual(r.json, expected, r, "the updated object as sent");
    this.backends.set(id, r.json as Json);
    await this.readBack(`/backends/weighted/${id}`, r.json as Json);
  }

  private async getWb(id: string): Promise<void> {
    const r = await this.send("GET", `/backends/weighted/${id}`);
    const held = this.backends.get(id);
    if (held) this.expectEqual([r.status, r.json], [200, held], r, "the object as last written");
    else this.expect(r.status === 404, r, "404 for an object the account does not hold");
  }

  private async deleteWb(id: string): Promise<void> {
    const r = await this.send("DELETE", `/backends/weighted/${id}`);
    const held = this.backends.get(id);
    if (r.status === 204) {
      if (!held) this.fail(r, "a 404 for an object the account does not hold");
      this.backends.delete(id);
      return this.readBack(`/backends/weighted/${id}`, undefined);
    }
    this.expect(r.status >= 400, r, "204 or an error");
    if (held) {
      const parents = [...this.backends.values()].filter((b) => Object.hasOwn(b.backends as Json, id));
      this.expect(parents.length > 0 && r.json?.error_code === "ERR_NGROK_6502", r, "a delete refused only while the object is referenced");
      await this.readBack(`/backends/weighted/${id}`, held);
    }
  }

  private async list(path: string, key: string, parts: QueryPart[], all: () => Json[]): Promise<void> {
    const query = parts
      .map((p) => ("raw" in p ? p.raw : `${encodeQueryValue(p.key)}=${encodeQueryValue(p.own === undefined ? p.value : this.backendId({ to: "own", n: p.own }))}`))
      .join("&");
    const r = await this.send("GET", query === "" ? path : `${path}?${query}`);
    if (r.status !== 200) return this.expect(r.status === 400, r, "200 or 400");
    const params = new URLSearchParams(query);
    const limit = Number(params.get("limit") ?? 100);
    const before = params.get("before_id") ?? params.get("beforeId");
    const matching = all()
      .filter((o) => before === null || (o.id as string) < before)
      .sort((a, b) => ((a.id as string) < (b.id as string) ? 1 : -1));
    const items = matching.slice(0, limit);
    const last = items.at(-1);
    const next = matching.length > limit && last ? `${this.w.url}${path}?before_id=${encodeURIComponent(last.id as string)}&limit=${limit}` : null;
    this.expectEqual(r.json, { [key]: items, uri: `${this.w.url}${path}`, next_page_uri: next }, r, "the page the model holds");
  }

  private routeExpected(id: string): Json {
    const m = this.routeModels.get(id) as RouteModel;
    return { ...m.base, saml: m.saml, circuit_breaker: m.circuit_breaker };
  }

  private edgeExpected(): Json {
    return { ...this.edgeBase, routes: this.w.routes.map((id) => this.routeExpected(id)) };
  }

  private async getEdge(t: TargetRef): Promise<void> {
    const id = t.to === "own" ? this.w.edge : t.to === "missing" ? fakeId("edghts", 900_000 + t.n) : `edghts_${t.n}`;
    const r = await this.send("GET", `/edges/https/${id}`);
    if (t.to === "own") this.expectEqual([r.status, r.json], [200, this.edgeExpected()], r, "the edge with its routes' modules");
    else this.expect(r.status === 404, r, "404");
  }

  /** The path of a route, and the route's id when it is one of the lane's. */
  private routePath(ref: RouteRef): { path: string; own: string | undefined } {
    if (ref === 0 || ref === 1) {
      const own = this.w.routes[ref];
      return { path: `/edges/https/${this.w.edge}/routes/${own}`, own };
    }
    const path =
      ref === "missing"
        ? `/edges/https/${this.w.edge}/routes/${fakeId("edghtsrt", 900_001)}`
        : ref === "missing-edge"
          ? `/edges/https/${fakeId("edghts", 900_001)}/routes/${this.w.routes[0]}`
          : `/edges/https/${this.w.edge}/routes/edghtsrt_1`;
    return { path, own: undefined };
  }

  private async getRoute(ref: RouteRef): Promise<void> {
    const { path, own } = this.routePath(ref);
    const r = await this.send("GET", path);
    if (own) this.expectEqual([r.status, r.json], [200, this.routeExpected(own)], r, "the route with its modules");
    else this.expect(r.status === 404, r, "404");
  }

  private moduleBody(step: Extract<Step, { op: "putSaml" | "putCircuitBreaker" }>, own: string | undefined): Json {
    const { extra, ...fields } = step.fields as Json;
    if (typeof extra === "string") Object.defineProperty(fields, extra, { value: "x", enumerable: true, writable: true, configurable: true });
    if (step.op === "putSaml") {
      const idp = step.fields.idp_metadata as { xml: string; t?: string; v?: unknown };
      if (idp.xml === "valid") fields.idp_metadata = this.w.idp;
      else if (idp.xml === "inserted") fields.idp_metadata = this.w.idp.replace("<md:IDPSSODescriptor", `${idp.t ?? ""}<md:IDPSSODescriptor`);
      else fields.idp_metadata = idp.v;
    }
    const ids: Json = {};
    if (step.shape.edgeId !== "absent") ids.edge_id = step.shape.edgeId === "same" ? this.w.edge : fakeId("edghts", 7);
    if (step.shape.routeId !== "absent") ids.id = step.shape.routeId === "same" ? (own ?? "edghtsrt_1") : fakeId("edghtsrt", 7);
    return JSON.parse(JSON.stringify(step.shape.wrapped ? { ...ids, module: fields } : { ...fields, ...ids })) as Json;
  }

  /** The module a PUT of `fields` should answer, defaults filled, generated fields as the model knows them. */
  private expectedModule(kind: "saml" | "circuit_breaker", fields: Json, own: string, answered: Json): Json {
    if (kind === "circuit_breaker") {
      const { enabled, tripped_duration, rolling_window, num_buckets, volume_threshold, error_threshold_percentage } = { ...CIRCUIT_BREAKER_DEFAULTS, ...fields } as Json;
      return { enabled, tripped_duration, rolling_window, num_buckets, volume_threshold, error_threshold_percentage };
    }
    const settings = Object.fromEntries(SAML_FIELDS.map((f) => [f, fields[f] ?? (SAML_DEFAULTS as Json)[f]]));
    const entity = `${this.w.spBase}/saml/${own}`;
    const held = this.routeModels.get(own)?.saml;
    return {
      ...settings,
      entity_id: entity,
      assertion_consumer_service_url: `${entity}/acs`,
      single_logout_url: `${entity}/slo`,
      request_signing_certificate_pem: held ? held.request_signing_certificate_pem : answered.request_signing_certificate_pem,
      metadata_url: entity,
      idp_metadata_url: "",
    };
  }

  private async putModule(step: Extract<Step, { op: "putSaml" | "putCircuitBreaker" }>): Promise<void> {
    const kind = step.op === "putSaml" ? "saml" : "circuit_breaker";
    const { path, own } = this.routePath(step.route);
    const body = this.moduleBody(step, own);
    const r = await this.send("PUT", `${path}/${kind}`, { body });
    const model = own ? this.routeModels.get(own) : undefined;
    if (r.status !== 200) {
      this.expect(r.status >= 400, r, "200 or an error");
      if (model) await this.readBack(`${path}/${kind}`, model[kind] ?? undefined, "ERR_NGROK_7400");
      return;
    }
    if (!own || !model) this.fail(r, "404 for a route the account does not hold");
    const fields = (body.module ?? body) as Json;
    const expected = this.expectedModule(kind, fields, own, r.json as Json);
    this.expectEqual(r.json, expected, r, "the module as sent, defaults filled, certificate kept");
    if (kind === "saml" && !model.saml) {
      this.keysMade++;
      this.expect(String(r.json.request_signing_certificate_pem).startsWith("-----BEGIN CERTIFICATE-----\n"), r, "a PEM certificate");
    }
    model[kind] = r.json as Json;
    await this.readBack(`${path}/${kind}`, model[kind] ?? undefined);
  }

  private async getModule(kind: "saml" | "circuit_breaker", ref: RouteRef): Promise<void> {
    const { path, own } = this.routePath(ref);
    const r = await this.send("GET", `${path}/${kind}`);
    const held = own ? this.routeModels.get(own)?.[kind] : undefined;
    if (held) this.expectEqual([r.status, r.json], [200, held], r, "the module as last written");
    else if (own) this.expectEqual([r.status, r.json?.error_code], [404, "ERR_NGROK_7400"], r, "the module not set");
    else this.expect(r.status === 404, r, "404 for a route the account does not hold");
  }

  private async deleteModule(kind: "saml" | "circuit_breaker", ref: RouteRef): Promise<void> {
    const { path, own } = this.routePath(ref);
    const r = await this.send("DELETE", `${path}/${kind}`);
    const model = own ? this.routeModels.get(own) : undefined;
    if (!model) return this.expect(r.status === 404, r, "404");
    if (!model[kind]) return this.expectEqual([r.status, r.json?.error_code], [404, "ERR_NGROK_7400"], r, "the module not set");
    this.expect(r.status === 204, r, "204");
    model[kind] = null;
    await this.readBack(`${path}/${kind}`, undefined, "ERR_NGROK_7400");
  }

  private async odd(kind: OddKind): Promise<void> {
    const wb = this.backendId({ to: "own", n: 0 });
    const auth = { Authorization: `Bearer ${this.w.key}` };
    const json = { "Content-Type": "application/json" };
    const requests: Record<OddKind, () => Promise<HttpResponse>> = {
      "unknown-path": () => this.send("GET", "/backends/weightd"),
      "wrong-method": () => this.send("PUT", "/backends/weighted", { body: { backends: {} } }),
      "no-version": () => this.send("GET", "/backends/weighted", { headers: auth }, false),
      "wrong-version": () => this.send("GET", "/backends/weighted", { headers: { "Ngrok-Version": "3" } }),
      "no-key": () => this.send("GET", "/backends/weighted", { headers: { "Ngrok-Version": "2" } }, false),
      "wrong-key": () => this.send("GET", "/backends/weighted", { headers: { Authorization: "Bearer ep_not_a_key", "Ngrok-Version": "2" } }, false),
      "body-on-get": () => this.send("GET", `/backends/weighted/${wb}`, { rawBody: "{}", headers: json }),
      "wrong-content-type": () => this.send("POST", "/backends/weighted", { rawBody: '{"backends":{}}', headers: { "Content-Type": "text/plain" } }),
      "not-json": () => this.send("POST", "/backends/weighted", { rawBody: '{"backends":', headers: json }),
      "json-array": () => this.send("POST", "/backends/weighted", { rawBody: "[]", headers: json }),
      "query-on-get": () => this.send("GET", `/backends/weighted/${wb}?x=1`),
      "malformed-id": () => this.send("GET", "/backends/weighted/bkdwd_short"),
    };
    const r = await requests[kind]();
    const [status, code] = ODD_ANSWERS[kind];
    this.expectEqual([r.status, r.json?.error_code], [status, code], r, `the answer to a request with ${kind}`);
  }
}
