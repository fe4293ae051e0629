/**
 * The server in production on PostgreSQL: `/readyz` says `starting` while migrations wait and follows the database
 * (503 while it is stopped, 200 once it is back), and a rolling restart of two replicas (`edgeplan serve` processes on one database) under a steady load of
 * creates and PATCHes loses nothing: every request is answered, none on a draining replica is reset, and what the
 * load was told matches what the database holds. Runs in the `postgres` project only.
 */
import { createServer } from "node:net";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createDatabase, findPostgresBin, startCluster, type Cluster } from "../../bench/postgres-cluster.js";
import { STARTUP_LOCK } from "../../src/server/pg-schema.js";
import { sample } from "../helpers/metrics.js";
import { apiClient, freshDatabase, http, spawnServer, startTestServer, type SpawnedServer, type TestServer } from "../helpers/server.js";

const KEY = "ep_test_operations_key";
const cleanup: (() => unknown)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

const readyStatus = async (url: string): Promise<number> => (await http(url, "GET", "/readyz").catch(() => ({ status: 0 }))).status;

describe("readiness", () => {
  it("while migrations wait for another replica, the admin address answers /healthz and /readyz says starting", async () => {
    const db = await freshDatabase();
    const holder = new pg.Client({ connectionString: db });
    await holder.connect();
    cleanup.push(() => holder.end());
    await holder.query("BEGIN");
    await holder.query("SELECT pg_advisory_xact_lock($1)", [STARTUP_LOCK]);
    // The admin address is printed with the API's, once started: give it a port known beforehand.
    const port = await freePort();
    const admin = `http://127.0.0.1:${port}`;
    const starting = spawnServer(["--quiet", "--database", db, "--admin-listen", `127.0.0.1:${port}`], {}, { apiKey: KEY });
    starting.catch(() => undefined);
    await until("the admin address answers", async () => (await readyStatus(admin)) !== 0);
    expect((await http(admin, "GET", "/healthz")).json).toEqual({ status: "ok" });
    expect((await http(admin, "GET", "/readyz")).json).toEqual({ status: "unavailable", reason: "starting: the store is being opened and migrated" });
    await holder.query("COMMIT");
    const s = await starting;
    cleanup.push(() => s.kill9());
    expect(s.stdout()).toContain(`admin listening on ${admin} (/healthz, /readyz, /metrics)`);
    expect((await http(admin, "GET", "/readyz")).json).toEqual({ status: "ready" });
  });

  it("/readyz answers 503 while PostgreSQL is stopped and 200 once it is back; /healthz stays 200", async () => {
    const cluster: Cluster = await startCluster(findPostgresBin() as string);
    cleanup.push(() => cluster.stop());
    const s: TestServer = await startTestServer({ databaseUrl: await createDatabase(cluster.url), poolSize: 3, metrics: true });
    cleanup.push(() => s.close());
    expect((await http(s.url, "GET", "/readyz")).json).toEqual({ status: "ready" });
    const metrics = (await apiClient(s.url, s.apiKey).get("/metrics")).text;
    expect(sample(metrics, "edgeplan_store_pool_connections", { state: "max" })).toBe(3);

    cluster.halt();
    const down = await http(s.url, "GET", "/readyz");
    expect(down.status).toBe(503);
    expect(down.json.status).toBe("unavailable");
    expect(down.json.reason).toMatch(/^the store does not answer: /);
    expect(down.json.reason).not.toContain("postgres://");
    expect((await http(s.url, "GET", "/healthz")).status).toBe(200);

    cluster.resume();
    await until("/readyz answers 200 again", async () => (await readyStatus(s.url)) === 200);
    expect((await apiClient(s.url, s.apiKey).post("/backends/weighted", { backends: {} })).status).toBe(201);
  });
});

interface Sent {
  replica: string;
  kind: "create" | "patch";
  id?: string;
  description: string;
  status: number;
  error?: string;
  /** The replica was signalled while this request was in flight. */
  inFlightAtSignal: boolean;
}

/**
 * A load balancer and its clients in one: replicas enter and leave the rotation by their `/readyz` (probed every
 * 100 ms), and `workers` loops each create an object, then PATCH it again and again, through the replicas in
 * rotation, one request at a time.
 */
class Load {
  readonly sent: Sent[] = [];
  private readonly rotation = new Set<string>();
  private readonly known = new Set<string>();
  private readonly pending = new Map<string, Set<{ signalled: boolean }>>();
  private running = true;
  private turn = 0;
  private readonly done: Promise<unknown>;

  constructor(workers: number) {
    this.done = Promise.all([this.probe(), ...Array.from({ length: workers }, (_, w) => this.worker(w))]);
  }

  add(url: string): void {
    this.known.add(url);
  }

  /** The replica is about to get SIGTERM: its requests in flight now are marked. */
  signalling(url: string): number {
    const now = this.pending.get(url) ?? new Set();
    for (const p of now) p.signalled = true;
    return now.size;
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.done;
  }

  private async probe(): Promise<void> {
    while (this.running) {
      for (const url of this.known) {
        if ((await readyStatus(url)) === 200) this.rotation.add(url);
        else this.rotation.delete(url);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  private pick(): string | undefined {
    const urls = [...this.rotation];
    return urls.length === 0 ? undefined : urls[this.turn++ % urls.length];
  }

  private async worker(w: number): Promise<void> {
    let id: string | undefined;
    for (let n = 0; this.running; n++) {
      const replica = this.pick();
      if (replica === undefined) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      const description = `worker ${w} request ${n}`;
      const mark = { signalled: false };
      const pending = this.pending.get(replica) ?? new Set();
      this.pending.set(replica, pending.add(mark));
      const api = apiClient(replica, KEY);
      const kind = id === undefined ? "create" : "patch";
      const entry: Sent = { replica, kind, description, status: 0, inFlightAtSignal: false };
      if (id !== undefined) entry.id = id;
      try {
        const r = kind === "create" ? await api.post("/backends/weighted", { backends: {}, description }) : await api.patch(`/backends/weighted/${id}`, { description });
        entry.status = r.status;
        if (kind === "create" && r.status === 201) id = entry.id = r.json.id as string;
      } catch (err) {
        entry.error = (err as NodeJS.ErrnoException).code ?? String(err);
      }
      pending.delete(mark);
      entry.inFlightAtSignal = mark.signalled;
      this.sent.push(entry);
    }
  }
}

describe("rolling restart", () => {
  it("two replicas restarted one after the other under load: every request answered, nothing lost, nothing reset", async () => {
    const db = await freshDatabase();
    const start = async (): Promise<SpawnedServer> => {
      const s = await spawnServer(
        ["--quiet", "--pool-size", "4", "--database", db, "--latency", "20-40", "--drain-delay", "1s", "--drain-timeout", "10s"],
        {},
        { apiKey: KEY },
      );
      cleanup.push(() => s.kill9());
      return s;
    };
    let [a, b] = [await start(), await start()];
    const load = new Load(6);
    load.add(a.url);
    load.add(b.url);
    const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
    await pause(1000);
    let inFlightAtSignals = 0;
    for (const which of ["a", "b"] as const) {
      const old = which === "a" ? a : b;
      inFlightAtSignals += load.signalling(old.url);
      expect(await old.stop()).toBe(0);
      expect(old.stderr()).toContain('"msg":"drained: the store is closed"');
      const fresh = await start();
      load.add(fresh.url);
      if (which === "a") a = fresh;
      else b = fresh;
      await pause(1000);
    }
    await load.stop();

    const failed = load.sent.filter((s) => s.error !== undefined || (s.status !== 200 && s.status !== 201));
    expect(failed).toEqual([]);
    expect(inFlightAtSignals).toBeGreaterThan(0);
    expect(load.sent.filter((s) => s.inFlightAtSignal).length).toBe(inFlightAtSignals);
    expect(load.sent.filter((s) => s.kind === "patch").length).toBeGreaterThan(20);

    // What the load was told is what the database holds: every created object, each with its last PATCH.
    const client = new pg.Client({ connectionString: db });
    await client.connect();
    const rows = (await client.query<{ id: string; description: string }>("SELECT id, description FROM weighted_backends")).rows;
    await client.end();
    const told = new Map<string, string>();
    for (const s of load.sent) if (s.id !== undefined) told.set(s.id, s.description);
    expect(new Map(rows.map((r) => [r.id, r.description]))).toEqual(told);
  }, 90_000);
});
