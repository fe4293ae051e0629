/**
 * SIGTERM while the agent applies (the built CLI against `edgeplan serve` whose answers take 100 ms): the agent
 * finishes the writes in flight, gives back the stack's lease and exits 0; its history says the apply did not finish
 * (never "applied"); the next agent finishes the stack and creates nothing twice.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openAgentStore } from "../../src/agent/store.js";
import { apiClient, spawnServer, type SpawnedServer } from "../helpers/server.js";
import { startCli, tempDir, type RunningCli } from "../reliability/cli.js";
import { FIXTURES, makeRepo, until, wb } from "./world.js";

const OBJECTS = 16;

describe("edgeplan agent on SIGTERM", () => {
  const dir = tempDir("agent-drain");
  let server: SpawnedServer | undefined;
  let agent: RunningCli | undefined;
  afterAll(async () => {
    agent?.proc.kill("SIGKILL");
    await server?.stop();
    dir.remove();
  });

  it("in the middle of an apply: exit 0, no lease left, the apply recorded as not finished, and the next agent finishes it", async () => {
    const { bare, commit } = makeRepo(dir.path);
    commit({ "prod/backends.yaml": Array.from({ length: OBJECTS }, (_, i) => wb(`svc-${i}`, 50, 50)).join("---\n") }, "services");
    writeFileSync(join(dir.path, "fixtures.yaml"), FIXTURES);
    const apiKey = "ep_agent_drain_key";
    server = await spawnServer(["--fixtures", join(dir.path, "fixtures.yaml"), "--latency", "100", "--quiet"], {}, { apiKey });
    const api = apiClient(server.url, apiKey);
    writeFileSync(join(dir.path, "key"), apiKey);
    writeFileSync(
      join(dir.path, "agent.yaml"),
      `sources:\n  - {name: routing, url: ${bare}, interval: 1h}\nstacks:\n  - {name: prod, source: routing, path: prod, api_url: "${server.url}", api_key_file: key, interval: 1h}\n`,
    );
    const start = () =>
      startCli(["agent", "--config", "agent.yaml", "--listen", "127.0.0.1:0", "--data", "agent.db", "--concurrency", "1"], { cwd: dir.path, timeoutMs: 60_000 });
    const objects = async () => api.get("/backends/weighted").then((r) => r.json.backends) as Promise<Array<{ metadata: string }>>;
    const services = async () => (await objects()).filter((o) => o.metadata.includes('"name":"svc-')).length;

    agent = start();
    await until("an apply in the middle", 20_000, async () => {
      const n = await services();
      return n > 0 && n < OBJECTS ? true : undefined;
    });
    agent.proc.kill("SIGTERM");
    const end = await agent.done;
    expect(end.code, end.stderr).toBe(0);
    expect(end.stderr).toContain("agent: SIGTERM: draining");
    expect((await objects()).filter((o) => o.metadata.includes('"lease"'))).toEqual([]);
    const made = await services();
    expect(made).toBeLessThan(OBJECTS);

    const store = await openAgentStore({ data: join(dir.path, "agent.db") });
    const [last] = await store.history("prod", 1);
    await store.close();
    expect(last?.result).toBe("failed");

    agent = start();
    await until("finished by the next agent", 20_000, async () => ((await services()) === OBJECTS ? true : undefined));
    const names = (await objects()).flatMap((o) => /"name":"(svc-\d+)"/.exec(o.metadata)?.[1] ?? []);
    expect(names.sort()).toEqual(Array.from({ length: OBJECTS }, (_, i) => `svc-${i}`).sort());
    agent.proc.kill("SIGTERM");
    expect((await agent.done).code).toBe(0);
  }, 60_000);
});
