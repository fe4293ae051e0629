/**
 * The reference strategy the benchmarks compare edgeplan with: what common reconcilers do against an API like
 * this one. One request at a time; the weighted backends listed page by page; every managed module read with its
 * own GET (no edge read); every change sent in dependency order; after the run every touched object read back
 * with its own GET; a retry only on a 500. It plans with edgeplan's own pure `buildPlan`, so that both strategies
 * do exactly the same job and differ only in their requests.
 */
import { Pool } from "undici";
import { buildLiveState } from "../src/api/live-state.js";
import { dependencyLevels } from "../src/core/graph.js";
import { resolveWeightedBackendBody } from "../src/kinds/weighted-backend.js";
import type { Change, Plan } from "../src/model/plan.js";
import type { DesiredState, LiveState } from "../src/model/state.js";
import type { CircuitBreakerModule, SamlModule, WeightedBackend } from "../src/model/wire.js";

const RETRIES_ON_500 = 3;

interface Answer {
  status: number;
  body: unknown;
}

/** A one-connection client that sends one request at a time and retries only a 500. */
export class ReferenceClient {
  private readonly pool: Pool;
  private readonly headers: Record<string, string>;

  constructor(baseUrl: string, apiKey: string) {
    this.pool = new Pool(baseUrl, { connections: 1 });
    this.headers = { authorization: `Bearer ${apiKey}`, "ngrok-version": "2", accept: "application/json" };
  }

  async send(method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, body?: unknown): Promise<Answer> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.pool.request({
        method,
        path,
        headers: body === undefined ? this.headers : { ...this.headers, "content-type": "application/json" },
        body: body === undefined ? null : JSON.stringify(body),
      });
      const text = await res.body.text();
      if (res.statusCode === 500 && attempt < RETRIES_ON_500) continue;
      return { status: res.statusCode, body: text === "" ? null : (JSON.parse(text) as unknown) };
    }
  }

  async expect(method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE", path: string, ok: number[], body?: unknown): Promise<Answer> {
    const answer = await this.send(method, path, body);
    if (!ok.includes(answer.status)) throw new Error(`reference: ${method} ${path}: ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** Every weighted backend, page by page. */
async function listAll(client: ReferenceClient): Promise<WeightedBackend[]> {
  const out: WeightedBackend[] = [];
  let path: string | null = "/backends/weighted?limit=100";
  for (let page = 0; path !== null && page < 1000; page++) {
    const answer = await client.expect("GET", path, [200]);
    const list = answer.body as { backends: WeightedBackend[]; next_page_uri: string | null };
    out.push(...list.backends);
    path =
      list.next_page_uri === null
        ? null
        : (() => {
            const url = new URL(list.next_page_uri);
            return `${url.pathname}${url.search}`;
          })();
  }
  return out;
}

async function getModule(client: ReferenceClient, edge: string, route: string, kind: "saml" | "circuit_breaker"): Promise<unknown> {
  const answer = await client.expect("GET", `/edges/https/${edge}/routes/${route}/${kind}`, [200, 404]);
  return answer.status === 200 ? answer.body : null;
}

/** The live side the plan needs: the list, and each managed module with its own GET. */
export async function referenceFetchLive(client: ReferenceClient, desired: DesiredState): Promise<LiveState> {
  const backends = await listAll(client);
  const routes: Array<{ edge: string; route: string; saml: SamlModule | null; circuit_breaker: CircuitBreakerModule | null }> = [];
  for (const r of desired.edgeRoutes) {
    const saml = r.saml.state === "unmanaged" ? null : ((await getModule(client, r.edge, r.route, "saml")) as SamlModule | null);
    const cb = r.circuit_breaker.state === "unmanaged" ? null : ((await getModule(client, r.edge, r.route, "circuit_breaker")) as CircuitBreakerModule | null);
    routes.push({ edge: r.edge, route: r.route, saml, circuit_breaker: cb });
  }
  return buildLiveState(backends, routes);
}

/** Sends the plan's changes one at a time, level by level, then reads every touched object back with its own GET. */
export async function referenceApply(client: ReferenceClient, plan: Plan): Promise<void> {
  const byAddress = new Map<string, Change>(plan.changes.map((c) => [c.address, c]));
  const createdIds = new Map<string, string>();
  for (const level of dependencyLevels(plan)) {
    // Deletes last, as a reconciler that deletes after it has written the new state.
    const ordered = [...level].sort((a, b) => Number(byAddress.get(a)?.action === "delete") - Number(byAddress.get(b)?.action === "delete"));
    for (const address of ordered) {
      const change = byAddress.get(address) as Change;
      if (change.kind === "inventory") {
        const sent = await client.expect(change.request.method, change.request.path, [200, 201, 204], change.request.body ?? undefined);
        if (change.action === "create") createdIds.set(change.address, (sent.body as WeightedBackend).id);
      } else if (change.kind === "weighted_backend") {
        if (change.action === "delete") {
          await client.expect("DELETE", `/backends/weighted/${change.id as string}`, [204]);
        } else if (change.action === "create") {
          const created = await client.expect("POST", "/backends/weighted", [201], resolveWeightedBackendBody(change, createdIds));
          createdIds.set(change.address, (created.body as WeightedBackend).id);
        } else {
          await client.expect("PATCH", `/backends/weighted/${change.id as string}`, [200], resolveWeightedBackendBody(change, createdIds));
        }
      } else {
        const path = `/edges/https/${change.edge}/routes/${change.route}/${change.kind}`;
        if (change.action === "delete") await client.expect("DELETE", path, [204]);
        else await client.expect("PUT", path, [200], change.request.body);
      }
    }
  }
  // Read back what was written, one object at a time.
  for (const change of plan.changes) {
    if (change.kind === "weighted_backend" || change.kind === "inventory") {
      const id = change.id ?? createdIds.get(change.address);
      await client.expect("GET", `/backends/weighted/${id as string}`, [200, 404]);
    } else {
      await getModule(client, change.edge, change.route, change.kind);
    }
  }
}
