/**
 * The engine against the real server (in this process, on a free loopback port) with the real client: order and
 * references, failures that stop only their dependents, an abort that starts nothing new, and creates whose answer
 * is lost. The lost-answer paths that need a server to misbehave on purpose use a small client stand-in.
 */
import { afterAll, describe, expect, it } from "vitest";
import { createClient, type ApiClient, type Sent, type WeightedBackendBody, type WriteRequest } from "../../src/api/client.js";
import { OutcomeUnknownError } from "../../src/api/errors.js";
import { fetchLive } from "../../src/api/fetch-live.js";
import { applyCreate } from "../../src/apply/create.js";
import { applyPlan } from "../../src/apply/engine.js";
import { buildPlan, DEFAULT_MAX_SHIFT } from "../../src/core/plan.js";
import type { DesiredState, DesiredWeightedBackend } from "../../src/model/state.js";
import type { WeightedBackend } from "../../src/model/wire.js";
import { apiClient, fakeId, startTestServer, type TestServer } from "../helpers/server.js";

const CHILD = fakeId("bkdhr", 7001);
const FIXTURES = { edges: [], backends: [{ id: CHILD, type: "http_response" as const }] };

const servers: TestServer[] = [];
const clients: ApiClient[] = [];
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.close()));
});

async function server(faults: { dropRate?: number; latency?: [number, number] } = {}): Promise<TestServer> {
  const s = await startTestServer({ fixtures: FIXTURES, ...faults });
  servers.push(s);
  return s;
}

function client(s: TestServer): ApiClient {
  const c = createClient({
    baseUrl: s.url,
    apiKey: s.apiKey,
    concurrency: 4,
    rateLimit: null,
    retries: 3,
    timeoutMs: 10_000,
    versionHeader: "Ngrok-Version",
    insecureHttp: false,
    backoff: { baseMs: 1, capMs: 5 },
  });
  clients.push(c);
  return c;
}

function wb(name: string, backends: Record<string, number>, line = 1): DesiredWeightedBackend {
  return { kind: "WeightedBackend", name, description: `${name} desc`, metadata: {}, backends, protect: false, source: { file: "m.yaml", line, col: 1 } };
}

async function planFor(c: ApiClient, weightedBackends: DesiredWeightedBackend[]): Promise<ReturnType<typeof buildPlan>> {
  const desired: DesiredState = { weightedBackends, edgeRoutes: [] };
  return buildPlan(desired, await fetchLive(c, desired), { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT });
}

/** Every weighted backend of the server's account. */
async function listed(s: TestServer): Promise<WeightedBackend[]> {
  const res = await apiClient(s.url, s.apiKey).get("/backends/weighted");
  expect(res.status).toBe(200);
  return res.json.backends as WeightedBackend[];
}

const nameOf = (w: WeightedBackend): string => (JSON.parse(w.metadata) as { edgeplan: { name: string } }).edgeplan.name;

describe("applyPlan against the real server", () => {
  it("creates a chain bottom-up, each reference resolved to the id its create answered", async () => {
    const s = await server();
    const c = client(s);
    const plan = await planFor(c, [wb("a", { b: 100 }), wb("b", { c: 60, [CHILD]: 40 }), wb("c", { [CHILD]: 1 })]);
    const progress: string[] = [];
    const outcome = await applyPlan(plan.changes, c, { stack: "default", concurrency: 4, onProgress: (l) => progress.push(l) });
    expect(outcome.counts).toEqual({ done: 3, failed: 0, skipped: 0, not_started: 0 });
    expect(outcome.interrupted).toBe(false);

    const byName = new Map((await listed(s)).map((w) => [nameOf(w), w]));
    const [a, b, cc] = [byName.get("a"), byName.get("b"), byName.get("c")];
    expect(outcome.createdIds).toEqual({ "weighted_backend.a": a?.id, "weighted_backend.b": b?.id, "weighted_backend.c": cc?.id });
    expect(a?.backends).toEqual({ [b?.id as string]: 100 });
    expect(b?.backends).toEqual({ [cc?.id as string]: 60, [CHILD]: 40 });
    // Creation order is id order (the server's ids are monotonic), and the request log agrees: c, then b, then a.
    const posts = s.logLines.filter((l) => l.method === "POST").map((l) => l.status);
    expect(posts).toEqual([201, 201, 201]);
    expect([cc?.id, b?.id, a?.id]).toEqual([...[cc?.id, b?.id, a?.id]].sort());
    expect(progress.map((l) => l.replace(/bkdwd_\w+/, "ID").replace(/\(\d+ ms\)/, "(T)"))).toEqual([
      "weighted_backend.c: created ID (T)",
      "weighted_backend.b: created ID (T)",
      "weighted_backend.a: created ID (T)",
    ]);
  });

  it("a failed change stops only what depends on it; the rest is applied", async () => {
    const s = await server();
    const c = client(s);
    const missing = fakeId("bkdwd", 424242); // well-formed, but no such object
    const plan = await planFor(c, [wb("p", { [missing]: 100 }, 3), wb("q", { p: 100 }, 9), wb("r", { [CHILD]: 100 }, 15)]);
    const outcome = await applyPlan(plan.changes, c, { stack: "default", concurrency: 2 });
    const by = new Map(outcome.results.map((r) => [r.address, r]));
    expect(by.get("weighted_backend.p")?.status).toBe("failed");
    expect(by.get("weighted_backend.p")?.message).toMatch(
      new RegExp(`^m\\.yaml:3:1: POST /backends/weighted: 400 ERR_NGROK_6501: backends\\.${missing}: backend ${missing} does not exist`),
    );
    expect(by.get("weighted_backend.p")?.error?.status).toBe(400);
    expect(by.get("weighted_backend.q")).toMatchObject({ status: "skipped", message: "depends on weighted_backend.p, which failed", ms: null });
    expect(by.get("weighted_backend.r")?.status).toBe("done");
    expect(outcome.counts).toEqual({ done: 1, failed: 1, skipped: 1, not_started: 0 });
    expect((await listed(s)).map(nameOf)).toEqual(["r"]);
  });

  it("an abort lets the change in flight finish and starts nothing new", async () => {
    const s = await server({ latency: [30, 30] });
    const c = client(s);
    const plan = await planFor(c, [wb("w1", { [CHILD]: 1 }), wb("w2", { [CHILD]: 2 }), wb("w3", { [CHILD]: 3 }), wb("w4", { [CHILD]: 4 })]);
    const controller = new AbortController();
    const outcome = await applyPlan(plan.changes, c, {
      stack: "default",
      concurrency: 1,
      signal: controller.signal,
      onProgress: () => controller.abort(), // the first change done: stop
    });
    expect(outcome.interrupted).toBe(true);
    expect(outcome.counts).toEqual({ done: 1, failed: 0, skipped: 0, not_started: 3 });
    expect(outcome.results.filter((r) => r.status === "not_started").map((r) => r.message)).toEqual([
      "the run was interrupted before it started",
      "the run was interrupted before it started",
      "the run was interrupted before it started",
    ]);
    expect((await listed(s)).map(nameOf)).toEqual(["w1"]);
    expect(s.logLines.filter((l) => l.method === "POST")).toHaveLength(1);
  });

  it("awaits beforeStart (the lease's check) before starting changes; a check that aborts the signal starts nothing more", async () => {
    const s = await server();
    const c = client(s);
    const plan = await planFor(c, [wb("w1", { [CHILD]: 1 }), wb("w2", { [CHILD]: 2 }), wb("w3", { [CHILD]: 3 }), wb("w4", { [CHILD]: 4 })]);
    const controller = new AbortController();
    let checks = 0;
    const outcome = await applyPlan(plan.changes, c, {
      stack: "default",
      concurrency: 1,
      signal: controller.signal,
      beforeStart: async () => {
        checks++;
        // The third check finds the lease gone: two changes ran, none more starts.
        if (checks === 3) controller.abort();
      },
    });
    expect(checks).toBe(3);
    expect(outcome.counts).toEqual({ done: 2, failed: 0, skipped: 0, not_started: 2 });
    expect((await listed(s)).map(nameOf).sort()).toEqual(["w1", "w2"]);
  });

  it("never creates twice when every create's answer is lost: each one is found by its owner marker", async () => {
    const s = await server({ dropRate: 1 });
    const c = client(s);
    const plan = await planFor(c, [wb("x", { y: 100 }), wb("y", { [CHILD]: 100 }), wb("z", { [CHILD]: 5 })]);
    const progress: string[] = [];
    const outcome = await applyPlan(plan.changes, c, { stack: "default", concurrency: 4, onProgress: (l) => progress.push(l) });
    expect(outcome.counts.done).toBe(3);
    const all = await listed(s);
    expect(all.map(nameOf).sort()).toEqual(["x", "y", "z"]);
    expect(all.find((w) => nameOf(w) === "x")?.backends).toEqual({ [outcome.createdIds["weighted_backend.y"] as string]: 100 });
    expect(s.logLines.filter((l) => l.method === "POST").map((l) => l.dropped)).toEqual([true, true, true]);
    expect(progress.filter((l) => l.includes("by its owner marker: the create had happened"))).toHaveLength(3);
  });
});

/** A client stand-in for the create paths a well-behaved server cannot produce on demand. */
function standIn(script: { creates: Array<"lost" | "ok">; listed: WeightedBackend[][] }): ApiClient & { calls: string[] } {
  const calls: string[] = [];
  let n = 0;
  const object = (id: string, body: WeightedBackendBody): WeightedBackend => ({ id, uri: `http://127.0.0.1/x/${id}`, created_at: "2025-01-01T00:00:00Z", ...body });
  const fake = {
    calls,
    baseUrl: "http://127.0.0.1:1",
    async send(request: WriteRequest): Promise<Sent> {
      const body = request.body as WeightedBackendBody;
      if (request.method === "PATCH" || request.method === "DELETE") {
        const id = request.path.split("/").at(-1) as string;
        calls.push(`${request.method} ${id}`);
        return { kind: "weighted_backend", object: request.method === "PATCH" ? object(id, body) : null };
      }
      calls.push(request.method);
      const what = script.creates.shift();
      if (what === "lost") throw new OutcomeUnknownError("POST", "/backends/weighted", 0, undefined, "the connection closed before the answer (UND_ERR_SOCKET)", undefined);
      return { kind: "weighted_backend", object: object(fakeId("bkdwd", 900 + ++n), body) };
    },
    async listWeightedBackends() {
      calls.push("LIST");
      return script.listed.shift() ?? [];
    },
  };
  return fake as unknown as ApiClient & { calls: string[] };
}

describe("a create sent twice", () => {
  it("whose first POST commits after the listing that decided to send it again: the late copy is deleted at the end of the run", async () => {
    const plan = await planFor(client(await server()), [wb("x", { [CHILD]: 100 })]);
    const body = (plan.changes[0] as { request: { body: WeightedBackendBody } }).request.body;
    const kept = fakeId("bkdwd", 901);
    const late = fakeId("bkdwd", 950);
    const copy = (id: string): WeightedBackend => ({ id, uri: "", created_at: "2025-01-01T00:00:00Z", ...body });
    const other = { ...copy(fakeId("bkdwd", 960)), description: "another body" };
    const c = standIn({ creates: ["lost", "ok"], listed: [[], [copy(kept), copy(late), other]] });
    const progress: string[] = [];
    const beforeStart = async (): Promise<void> => void c.calls.push("CHECK");
    const outcome = await applyPlan(plan.changes, c, { stack: "default", concurrency: 1, onProgress: (l) => progress.push(l), beforeStart });
    expect(outcome.createdIds).toEqual({ "weighted_backend.x": kept });
    // The lease is checked before the change and again before the copy's DELETE.
    expect(c.calls).toEqual(["CHECK", "POST", "LIST", "POST", "CHECK", "LIST", `DELETE ${late}`]);
    expect(progress).toContain(`weighted_backend.x: ${late} is a second copy (a create sent again after its answer was lost committed late): deleted it`);
    // The lease found gone at that check: no DELETE.
    const lost = new AbortController();
    const gone = standIn({ creates: ["lost", "ok"], listed: [[], [copy(kept), copy(late)]] });
    let checks = 0;
    const loseOnSecond = async (): Promise<void> => {
      if (++checks === 2) lost.abort();
    };
    await applyPlan(plan.changes, gone, { stack: "default", concurrency: 1, beforeStart: loseOnSecond, signal: lost.signal });
    expect(gone.calls).toEqual(["POST", "LIST", "POST"]);
    // One POST answered: nothing more is read or deleted.
    const once = standIn({ creates: ["ok"], listed: [] });
    await applyPlan(plan.changes, once, { stack: "default", concurrency: 1 });
    expect(once.calls).toEqual(["POST"]);
  });
});

describe("applyCreate after a lost answer", () => {
  const body: WeightedBackendBody = { description: "d", metadata: JSON.stringify({ edgeplan: { name: "n", stack: "s" } }), backends: { [CHILD]: 1 } };
  const create = { method: "POST" as const, path: "/backends/weighted", body };
  const target = { stack: "s", name: "n", address: "weighted_backend.n", attempts: 3, progress: () => undefined };
  const live = (id: string, fields: Partial<WeightedBackend> = {}): WeightedBackend => ({
    id,
    uri: "",
    created_at: "2025-01-01T00:00:00Z",
    description: "d",
    metadata: JSON.stringify({ edgeplan: { stack: "s", name: "n" } }), // same marker, other key order
    backends: { [CHILD]: 1 },
    ...fields,
  });

  it("found with the same body: takes its id and sends nothing more", async () => {
    const c = standIn({ creates: ["lost"], listed: [[live(fakeId("bkdwd", 5))]] });
    expect((await applyCreate(c, create, target)).id).toBe(fakeId("bkdwd", 5));
    expect(c.calls).toEqual(["POST", "LIST"]);
  });

  it("found with another body: one PATCH with the full body", async () => {
    const c = standIn({ creates: ["lost"], listed: [[live(fakeId("bkdwd", 5), { backends: {} })]] });
    const got = await applyCreate(c, create, target);
    expect(got).toMatchObject({ id: fakeId("bkdwd", 5), backends: { [CHILD]: 1 }, description: "d" });
    expect(c.calls).toEqual(["POST", "LIST", `PATCH ${fakeId("bkdwd", 5)}`]);
  });

  it("not found: the create did not happen, so it is sent once more", async () => {
    const other = live(fakeId("bkdwd", 6), { metadata: JSON.stringify({ edgeplan: { stack: "other", name: "n" } }) });
    const c = standIn({ creates: ["lost", "ok"], listed: [[other]] });
    expect((await applyCreate(c, create, target)).id).toBe(fakeId("bkdwd", 901));
    expect(c.calls).toEqual(["POST", "LIST", "POST"]);
  });

  it("gives up after the last attempt, saying the outcome is unknown", async () => {
    const c = standIn({ creates: ["lost", "lost", "lost"], listed: [[], [], []] });
    await expect(applyCreate(c, create, target)).rejects.toThrow(/after 3 attempts no object carries the owner marker; run apply again/);
    expect(c.calls).toEqual(["POST", "LIST", "POST", "LIST", "POST", "LIST"]);
  });
});
