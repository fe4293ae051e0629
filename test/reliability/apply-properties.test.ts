/**
 * Properties of `apply` against the real server (in this process, on a free loopback port) with the real client,
 * over small random worlds (./arbitraries.ts): the live state is made through the API, the desired state is written
 * as manifest files and loaded by the real loader. After apply, plan shows no change; applying a second time sends
 * no write and leaves the store exactly as it was. Each run uses its own stack, so earlier runs' objects are other
 * stacks' objects that must stay untouched.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { stringify } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runApply, type ApplyCommandResult } from "../../src/commands/apply.js";
import { captureIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import { ManifestError } from "../../src/model/errors.js";
import { isInventoryObject } from "../../src/model/inventory.js";
import type { DesiredState } from "../../src/model/state.js";
import type { WeightedBackendRecord } from "../../src/server/index.js";
import { apiClient, startTestServer, type ApiClient, type TestServer } from "../helpers/server.js";
import { FIXTURES, ROUTES, STACK, worldArb, type LiveSpec } from "./arbitraries.js";
import { tempDir } from "./cli.js";

const RUNS = Number(process.env.EDGEPLAN_SERVER_PROPERTY_RUNS ?? 25);

/** Makes the live side through the API; returns the server's id of each generated id. */
async function seedLive(api: ApiClient, live: LiveSpec, stack: string): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  const real = (id: string): string => ids.get(id) ?? id;
  for (const b of live.backends) {
    const backends = Object.fromEntries(Object.entries(b.backends).map(([k, w]) => [real(k), w]));
    const metadata = b.metadata.replace(`"stack":"${STACK}"`, `"stack":"${stack}"`);
    const r = await api.post("/backends/weighted", { description: b.description, metadata, backends });
    expect(r.status, r.text).toBe(201);
    ids.set(b.id, r.json.id as string);
  }
  for (const r of live.routes) {
    const base = `/edges/https/${r.edge}/routes/${r.route}`;
    for (const kind of ["saml", "circuit_breaker"] as const) {
      const settings = r[kind];
      const res = settings === null ? await api.del(`${base}/${kind}`) : await api.put(`${base}/${kind}`, settings);
      expect([200, 204, 404], res.text).toContain(res.status);
    }
  }
  return ids;
}

/** Writes the desired state as manifest files (one per object), with generated ids replaced by the server's. */
function writeManifests(dir: string, desired: DesiredState, ids: Map<string, string>): void {
  const real = (id: string): string => ids.get(id) ?? id;
  for (const d of desired.weightedBackends) {
    const doc: Record<string, unknown> = {
      kind: "WeightedBackend",
      name: d.name,
      description: d.description,
      metadata: d.metadata,
      backends: Object.fromEntries(Object.entries(d.backends).map(([k, w]) => [real(k), w])),
    };
    if (d.id !== undefined) doc.id = real(d.id);
    if (d.protect) doc.protect = true;
    writeFileSync(join(dir, `wb-${d.name}.yaml`), stringify(doc));
  }
  desired.edgeRoutes.forEach((r, i) => {
    const doc: Record<string, unknown> = { kind: "EdgeRoute", edge: r.edge, route: r.route };
    for (const kind of ["saml", "circuit_breaker"] as const) {
      const intent = r[kind];
      if (intent.state === "absent") doc[kind] = "absent";
      else if (intent.state === "present") doc[kind] = intent.settings;
    }
    writeFileSync(join(dir, `route-${i}.yaml`), stringify(doc));
  });
}

function snapshot(server: TestServer): Promise<{ backends: WeightedBackendRecord[]; routes: unknown[] }> {
  return server.read(async (tx) => ({
    backends: await tx.listWeightedBackends(server.account, { limit: 10_000 }),
    routes: await Promise.all(ROUTES.map((r) => tx.getRoute(server.account, r.edge, r.route))),
  }));
}

describe("apply against the real server over random worlds", () => {
  let server: TestServer;
  let api: ApiClient;
  const dirs: Array<{ remove(): void }> = [];

  beforeAll(async () => {
    server = await startTestServer({
      fixtures: {
        edges: [...new Set(ROUTES.map((r) => r.edge))].map((edge) => ({
          id: edge,
          routes: ROUTES.filter((r) => r.edge === edge).map((r) => ({ id: r.route, match: `/${r.route.slice(-1)}`, match_type: "path_prefix" })),
        })),
        backends: FIXTURES.map((id) => ({ id, type: "http_response" as const })),
      },
    });
    api = apiClient(server.url, server.apiKey);
  });
  afterAll(async () => {
    await server?.close();
    for (const d of dirs) d.remove();
  });

  /** Deletes every inventory object of the account (the modules the earlier worlds' stacks recorded). */
  async function forgetInventories(client: ApiClient): Promise<void> {
    let path: string | null = "/backends/weighted";
    const found: string[] = [];
    while (path !== null) {
      const page = await client.get(path);
      found.push(...(page.json.backends as Array<{ id: string; metadata: string }>).filter(isInventoryObject).map((wb) => wb.id));
      path = page.json.next_page_uri === null ? null : String(page.json.next_page_uri).replace(client.url, "");
    }
    for (const id of found) expect((await client.del(`/backends/weighted/${id}`)).status).toBe(204);
  }

  it(`converges in one apply, and a second apply writes nothing but its lease (${RUNS} worlds)`, async () => {
    let run = 0;
    let applied = 0;
    await fc.assert(
      fc.asyncProperty(worldArb, async ({ live, desired, prune }) => {
        const stack = `run-${run++}`;
        const dir = tempDir("apply-prop");
        dirs.push(dir);
        // Each world starts with the routes' modules owned by no stack: the earlier worlds' stacks are gone.
        await forgetInventories(api);
        const ids = await seedLive(api, live, stack);
        writeManifests(dir.path, desired, ids);
        const flags = { paths: [dir.path], apiUrl: server.url, stack, prune, rateLimit: "off", concurrency: "3" };
        const env = { EDGEPLAN_API_KEY: server.apiKey };

        let first: ApplyCommandResult;
        try {
          first = await runApply({ ...flags, autoApprove: true, force: true }, captureIO(env, dir.path));
        } catch (err) {
          // A world no plan can satisfy (e.g. a cycle through an id) is refused before any write.
          if (err instanceof ManifestError) return;
          throw err;
        }
        applied++;
        const io = captureIO(env, dir.path);
        expect(first.exitCode, io.err).toBe(0);

        const plan = await runPlan({ ...flags, detailedExitcode: true, format: "json" }, io);
        expect(plan.exitCode, io.out).toBe(0);

        const before = await snapshot(server);
        const logged = server.logLines.length;
        const second = await runApply({ ...flags, autoApprove: true, force: true }, captureIO(env, dir.path));
        expect(second.exitCode).toBe(0);
        expect(second.hasChanges).toBe(false);
        // No write but the apply's lease: its create, then its delete (docs/reliability.md, section 6).
        const writes = server.logLines.slice(logged).filter((l) => l.method !== "GET");
        expect(writes.map((l) => `${String(l.method)} ${String(l.path).replace(/bkdwd_\w{27}$/, "<lease>")} ${String(l.status)}`)).toEqual([
          "POST /backends/weighted 201",
          "DELETE /backends/weighted/<lease> 204",
        ]);
        expect(await snapshot(server)).toEqual(before);
      }),
      { numRuns: RUNS },
    );
    expect(applied).toBeGreaterThan(RUNS / 2);
  }, 240_000);
});
