/**
 * Two replicas of `edgeplan agent` (the built CLI, each its own process and cache) on one PostgreSQL database,
 * reconciling the same stack from the same git repository against `edgeplan serve`: the one holding the stack's
 * lease is killed with SIGKILL in the middle of its apply; the other takes the stack over once the lease has expired
 * (--lock-ttl), finishes it, and no object is created twice. Runs in the `postgres` project only.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { FIXTURES, makeRepo, until, wb } from "../agent/world.js";
import { apiClient, freshDatabase, http, spawnServer, type SpawnedServer } from "../helpers/server.js";
import { startCli, tempDir, type RunningCli } from "../reliability/cli.js";

const OBJECTS = 24;

describe("two agent replicas on PostgreSQL", () => {
  const dir = tempDir("agent-replicas");
  const agents: RunningCli[] = [];
  let server: SpawnedServer | undefined;
  afterAll(async () => {
    for (const a of agents) a.proc.kill("SIGKILL");
    await server?.stop();
    dir.remove();
  });

  it("a replica killed mid-apply: the other takes the stack over within the lease's TTL, and creates nothing twice", async () => {
    const { bare, commit } = makeRepo(dir.path);
    const docs = Array.from({ length: OBJECTS }, (_, i) => wb(`svc-${i}`, 50, 50)).join("---\n");
    const sha = commit({ "prod/backends.yaml": docs }, "many services");
    writeFileSync(join(dir.path, "fixtures.yaml"), FIXTURES);
    const apiKey = "ep_agent_replicas_key";
    // Each request takes 100 ms, one at a time: the apply of 24 creates lasts long enough to be killed in the middle.
    server = await spawnServer(["--fixtures", join(dir.path, "fixtures.yaml"), "--latency", "100", "--quiet"], {}, { apiKey });
    const api = apiClient(server.url, apiKey);
    writeFileSync(join(dir.path, "key"), apiKey);
    writeFileSync(
      join(dir.path, "agent.yaml"),
      `sources:\n  - {name: routing, url: ${bare}, ref: main, interval: 1s}\n` +
        `stacks:\n  - {name: prod, source: routing, path: prod, api_url: "${server.url}", api_key_file: key, interval: 1s, retry_interval: 1s}\n`,
    );
    const database = await freshDatabase();
    for (const name of ["a", "b"]) {
      agents.push(
        startCli(
          ["agent", "--config", "agent.yaml", "--listen", "127.0.0.1:0", "--database", database, "--cache", `cache-${name}`, "--lock-ttl", "2s", "--concurrency", "1"],
          {
            cwd: dir.path,
            timeoutMs: 90_000,
          },
        ),
      );
    }
    const objects = async () =>
      ((await api.get("/backends/weighted?limit=100")).json as { backends: Array<{ id: string; metadata: string }> }).backends.map((b) => ({
        id: b.id,
        meta: JSON.parse(b.metadata) as { edgeplan?: { name?: string; stack?: string; lease?: { holder: { pid: number } } } },
      }));

    // Mid-apply: a lease is held and some services exist, not all. Its holder is killed.
    const holder = await until("an apply in the middle", 20_000, async () => {
      const all = await objects();
      const lease = all.find((o) => o.meta.edgeplan?.lease && o.meta.edgeplan.stack === "prod");
      const made = all.filter((o) => o.meta.edgeplan?.name?.startsWith("svc-")).length;
      return lease && made > 0 && made < OBJECTS ? lease.meta.edgeplan?.lease?.holder.pid : undefined;
    });
    const killed = agents.find((a) => a.proc.pid === holder) as RunningCli;
    expect(killed, `the lease's holder ${holder} is one of the agents`).toBeDefined();
    killed.proc.kill("SIGKILL");
    const survivor = agents.find((a) => a !== killed) as RunningCli;

    // The other replica finishes it: every service once, no lease left, and its status says so.
    await until("taken over and finished", 30_000, async () => {
      const all = await objects();
      return all.filter((o) => o.meta.edgeplan?.name?.startsWith("svc-")).length === OBJECTS && !all.some((o) => o.meta.edgeplan?.lease) ? true : undefined;
    });
    const names = (await objects()).flatMap((o) => (o.meta.edgeplan?.name ? [o.meta.edgeplan.name] : []));
    expect(names.sort()).toEqual(Array.from({ length: OBJECTS }, (_, i) => `svc-${i}`).sort());
    const url = /listening on (http:\S+)/.exec(survivor.stdout())?.[1] as string;
    const status = await until("the shared status is ready", 10_000, async () => {
      const s = (await http(url, "GET", "/api/stacks/prod")).json as { conditions: Array<{ type: string; status: string }>; last_applied_revision: { sha: string } | null };
      return s.conditions.some((c) => c.type === "Ready" && c.status === "True") ? s : undefined;
    });
    expect(status.last_applied_revision?.sha).toBe(sha);
    survivor.proc.kill("SIGTERM");
    expect((await survivor.done).code).toBe(0);
  }, 90_000);
});
