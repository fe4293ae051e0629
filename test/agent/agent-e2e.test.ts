/**
 * `edgeplan agent` end to end, over real parts only: a bare git repository made here with `git`, `edgeplan serve` on
 * loopback, the agent as a process of the built CLI, and a webhook receiver made here. One agent reconciles five
 * stacks of one account: a commit is applied within one interval; a change by hand is corrected (correct), reported
 * and left (warn), recorded only (detect); a commit with an unacknowledged risk waits, shows on the page and in
 * `agent status`, and is applied after `agent ack`; a manifest error leaves the last good state and sets Stalled at
 * its line; a rollout moves step by step with no other process; a webhook with a bad signature is refused and a
 * good one fetches at once; SIGTERM ends with exit 0 and no lease left; no secret is ever printed or sent.
 */
import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { apiClient, http, spawnServer, type SpawnedServer } from "../helpers/server.js";
import { canary, runEdgeplan, startCli, tempDir, type RunningCli } from "../reliability/cli.js";
import { CHILDREN, FIXTURES, makeRepo, until, wb } from "./world.js";

const [A, B] = CHILDREN;

interface Hook {
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

describe("edgeplan agent", () => {
  const dir = tempDir("agent");
  const apiKey = `key-${canary()}`;
  const hookSecret = canary();
  const token = canary();
  let server: SpawnedServer;
  let agent: RunningCli;
  let receiver: Server;
  const hooks: Hook[] = [];
  afterAll(async () => {
    agent?.proc.kill("SIGKILL");
    await server?.stop();
    receiver?.close();
    dir.remove();
  });

  it("keeps five stacks converged from a git repository, by their modes, with acks, rollouts, webhooks and a clean stop", async () => {
    writeFileSync(join(dir.path, "fixtures.yaml"), FIXTURES);
    server = await spawnServer(["--fixtures", join(dir.path, "fixtures.yaml")], {}, { apiKey });
    const { bare, commit } = makeRepo(dir.path);
    commit(
      {
        "prod/edgeplan.yaml": "max_shift: 20\n",
        "prod/backends.yaml": wb("api", 50, 50),
        "warn/backends.yaml": wb("w-api", 50, 50),
        // This stack's API URL comes from the commit (none in the agent's configuration).
        "detect/edgeplan.yaml": `api_url: "${server.url}"\n`,
        "detect/backends.yaml": wb("d-api", 50, 50),
        "roll/backends.yaml": wb("r-api", 100, 0),
        "hook/backends.yaml": wb("h-api", 50, 50),
      },
      "first routing",
    );
    const api = apiClient(server.url, apiKey);
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        hooks.push({ body, headers: req.headers });
        res.end("ok");
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const hookUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/events`;
    writeFileSync(join(dir.path, "key"), `${apiKey}\n`);
    writeFileSync(join(dir.path, "token"), `${token}\n`);
    const stackLines = (name: string, mode: string, source = "fast") =>
      `  - {name: ${name}, source: ${source}, path: ${name},${name === "detect" ? "" : ` api_url: "${server.url}",`} api_key_file: key, interval: 2s, retry_interval: 1s, mode: ${mode}}\n`;
    writeFileSync(
      join(dir.path, "agent.yaml"),
      `sources:\n  - {name: fast, url: ${bare}, ref: main, interval: 1s}\n  - {name: hooked, url: ${bare}, ref: main, interval: 1h, webhook: {secret_env: HOOK_SECRET}}\n` +
        `stacks:\n${stackLines("prod", "correct")}${stackLines("warn", "warn")}${stackLines("detect", "detect")}${stackLines("roll", "correct")}${stackLines("hook", "correct", "hooked")}` +
        `notifications:\n  - {name: ops, type: webhook, url: "${hookUrl}", secret_env: HOOK_SECRET}\n`,
    );
    agent = startCli(["agent", "--config", "agent.yaml", "--listen", "127.0.0.1:0", "--data", "agent.db", "--token-file", "token", "--lock-ttl", "3s"], {
      cwd: dir.path,
      env: { HOOK_SECRET: hookSecret },
      timeoutMs: 120_000,
    });
    const url = await until("listening", 15_000, async () => /listening on (http:\S+)/.exec(agent.stdout())?.[1]);
    // Each step has three times what it takes on a quiet machine (the suite runs two files at once); a miss shows
    // what the agent printed.
    const step = <T>(what: string, ms: number, check: () => Promise<T | undefined>) => until(what, ms * 3, check, () => agent.stderr().slice(-4000));
    const stacks = async () =>
      (await http(url, "GET", "/api/stacks")).json as {
        stacks: Array<{
          name: string;
          conditions: Array<{ type: string; status: string; reason: string; message: string }>;
          waiting: Array<{ rule: string; digest: string; command: string }>;
          drift: unknown[];
        }>;
      };
    const stackOf = async (name: string) => (await stacks()).stacks.find((s) => s.name === name);
    const cond = (s: Awaited<ReturnType<typeof stackOf>>, type: string) => s?.conditions.find((c) => c.type === type);
    const live = async (name: string) => {
      const all = (await api.get("/backends/weighted")).json as { backends: Array<{ id: string; metadata: string; backends: Record<string, number> }> };
      return all.backends.find((w) => w.metadata.includes(`"name":"${name}"`));
    };

    // A commit is applied within one interval (correct); warn and detect plan and leave the live side alone.
    await step("prod applied", 10_000, async () => ((await live("api"))?.backends[A] === 50 ? true : undefined));
    await step("warn and detect see drift", 10_000, async () => {
      const [w, d] = [await stackOf("warn"), await stackOf("detect")];
      return cond(w, "Ready")?.reason === "DriftDetected" && cond(d, "Ready")?.reason === "DriftDetected" ? true : undefined;
    });
    expect(await live("w-api")).toBeUndefined();
    expect(await live("d-api")).toBeUndefined();

    // A change by hand (within the stack's max_shift: no risk) is corrected within an interval.
    const prod = (await live("api")) as { id: string };
    expect((await api.patch(`/backends/weighted/${prod.id}`, { backends: { [A]: 55, [B]: 45 } })).status).toBe(200);
    await step("drift corrected", 10_000, async () => ((await live("api"))?.backends[A] === 50 ? true : undefined));
    const events = () => hooks.map((h) => JSON.parse(h.body) as { stack: string; event: string });
    await step("events", 5_000, async () => (events().some((e) => e.stack === "prod" && e.event === "drift_corrected") ? true : undefined));
    expect(events().filter((e) => e.stack === "detect")).toEqual([]);
    expect(events().some((e) => e.stack === "warn" && e.event === "drift_detected")).toBe(true);
    const signed = hooks[0] as Hook;
    expect(signed.headers["x-edgeplan-signature-256"]).toBe(`sha256=${createHmac("sha256", hookSecret).update(signed.body).digest("hex")}`);

    // A risk waits for a person, is shown on the page and by `agent status`, and is applied after `agent ack`; the
    // rollout of the same commit moves step by step meanwhile.
    commit({ "prod/backends.yaml": wb("api", 10, 90), "roll/backends.yaml": wb("r-api", 0, 100, "rollout:\n  max_step: 50\n  interval: 2s\n") }, "shift prod, roll r-api");
    // Watched from now on, while the rest goes on: the rollout takes its two steps by itself.
    const seen: number[] = [];
    const rolled = step("rollout done", 20_000, async () => {
      const w = (await live("r-api"))?.backends[A] as number;
      if (seen.at(-1) !== w) seen.push(w);
      return w === 0 ? true : undefined;
    });
    const waiting = await step("prod waits", 10_000, async () => (await stackOf("prod"))?.waiting.find((w) => w.rule === "traffic-shift"));
    expect(waiting.command).toBe(`edgeplan agent ack prod traffic-shift --digest ${waiting.digest.slice(0, 12)}`);
    expect((await live("api"))?.backends[A]).toBe(50);
    const page = (await http(url, "GET", "/")).text;
    expect(page).toContain(waiting.command);
    const status = await runEdgeplan(["agent", "status", "prod", "--agent-url", url], { cwd: dir.path });
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(waiting.command);
    const refused = await runEdgeplan(["agent", "ack", "prod", "traffic-shift", "--digest", waiting.digest.slice(0, 12), "--agent-url", url], { cwd: dir.path });
    expect(refused.code).toBe(1);
    const acked = await runEdgeplan(["agent", "ack", "prod", "traffic-shift", "--digest", waiting.digest.slice(0, 12), "--agent-url", url, "--token-file", "token"], {
      cwd: dir.path,
    });
    expect(acked.stderr).toContain("acknowledged traffic-shift");
    expect(acked.code).toBe(0);
    await step("prod applied after ack", 10_000, async () => ((await live("api"))?.backends[A] === 10 ? true : undefined));
    await rolled;
    // The step between: half the traffic moved (a rollout writes its steps on the scale of 10000).
    expect(seen).toContain(5000);

    // A manifest error leaves the last good state and stalls the stack at its line.
    commit({ "prod/backends.yaml": wb("api", "lots", 90) }, "typo");
    const stalled = await step("stalled", 10_000, async () => {
      const s = cond(await stackOf("prod"), "Stalled");
      return s?.status === "True" ? s : undefined;
    });
    expect(stalled.message).toMatch(/^prod\/backends\.yaml:5:\d+: /m);
    expect((await live("api"))?.backends[A]).toBe(10);

    // Webhooks: a bad signature is refused; a good one fetches at once (the source's interval is an hour).
    await step("hook applied", 10_000, async () => ((await live("h-api"))?.backends[A] === 50 ? true : undefined));
    commit({ "hook/backends.yaml": wb("h-api", 20, 80) }, "move h-api");
    const body = JSON.stringify({ ref: "refs/heads/main" });
    expect((await http(url, "POST", "/hooks/hooked", { rawBody: body, headers: { "X-Hub-Signature-256": "sha256=00" } })).status).toBe(401);
    const good = `sha256=${createHmac("sha256", hookSecret).update(body).digest("hex")}`;
    expect((await live("h-api"))?.backends[A]).toBe(50);
    expect((await http(url, "POST", "/hooks/hooked", { rawBody: body, headers: { "X-Hub-Signature-256": good, "Content-Type": "application/json" } })).status).toBe(202);
    await step("fetched at once and applied", 5_000, async () => ((await live("h-api"))?.backends[A] === 20 ? true : undefined));

    // The stack whose API URL comes from an unverified commit is warned of, once; the others are not.
    expect(agent.stderr().match(/warning: stack \S+: its API URL .*/g)).toEqual([
      `warning: stack detect: its API URL ${server.url} comes from the commit, so whoever can push to main of source fast chooses where its key goes; set api_url on the stack in agent.yaml, or verify commits (docs/agent.md, "Where the key goes")`,
    ]);

    // No secret anywhere: logs, page, metrics, notifications.
    const metrics = (await http(url, "GET", "/metrics")).text;
    expect(metrics).toContain("edgeplan_agent_reconciliations_total");
    for (const text of [agent.stdout(), agent.stderr(), page, metrics, ...hooks.map((h) => h.body)]) {
      for (const secret of [apiKey, hookSecret, token]) expect(text).not.toContain(secret);
    }

    // SIGTERM: exit 0, and no lease left on the API.
    agent.proc.kill("SIGTERM");
    const end = await agent.done;
    expect(end.code, end.stderr).toBe(0);
    const left = (await api.get("/backends/weighted")).json as { backends: Array<{ metadata: string }> };
    expect(left.backends.filter((w) => w.metadata.includes('"lease"'))).toEqual([]);
  }, 180_000);
});
