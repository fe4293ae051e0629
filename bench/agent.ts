/**
 * Benchmark `agent`: `edgeplan agent` reconciling 50 stacks of 200 weighted backends each, all on one API account,
 * from one git repository, with nothing to change. Each cycle is started by a commit that changes no stack and a
 * signed webhook, so that every stack is due at once. The fewest requests of a cycle are one listing of the account
 * (its pages form a chain): the agent must send exactly that, not one listing per stack. The cycle's span on the
 * server is compared with the chain's bound (pages times what one page takes here, measured just before). The
 * agent's resident memory after the last cycle is compared with after the tenth: it must not grow.
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { request } from "undici";
import { buildMarker, buildMetadata } from "../src/kinds/weighted-backend.js";
import { loadDesired } from "../src/manifest/load.js";
import { canonicalJson } from "../src/model/canonical.js";
import { listPages } from "./bounds.js";
import { makeWorkDir, provisionFleet, weightedBackendDoc } from "./fleet.js";
import { builtCli, progress, round1, type Measurement, type Scenario } from "./measure.js";
import { ratio } from "./runs.js";
import { BENCH_KEY, seedDataFile, startBenchServer, warmUp, type BenchServer } from "./traffic.js";

export interface AgentBenchSize {
  stacks: number;
  objects: number;
  cycles: number;
  /** The cycle whose memory is the baseline. */
  baselineCycle: number;
  latencyMs: number;
}

export const AGENT_SIZES: { full: AgentBenchSize; quick: AgentBenchSize } = {
  full: { stacks: 50, objects: 200, cycles: 100, baselineCycle: 10, latencyMs: 5 },
  quick: { stacks: 10, objects: 100, cycles: 20, baselineCycle: 5, latencyMs: 5 },
};

/** The memory after the last cycle may be this much of the baseline's. */
const MEMORY_SLACK = 1.2;
const SECRET = "bench-webhook-secret";
const TOKEN = "bench-agent-token-0123456789";
const OBJECTS_PER_FILE = 100;

function git(cwd: string, ...args: string[]): void {
  execFileSync("git", args, { cwd, stdio: "ignore", env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, GIT_CONFIG_NOSYSTEM: "1" } });
}

/** Writes every stack's manifests into `work/<stack>/` and seeds their live side, the same, into the data file. */
async function seedStacks(dataFile: string, work: string, size: AgentBenchSize): Promise<string[]> {
  return seedDataFile(dataFile, async (store, account) => {
    const { children } = provisionFleet(store, account, { same: 0, changed: 0, created: 0, orphans: 0, edges: 0, routesPerEdge: 0, changedRoutes: 0 });
    const stacks = Array.from({ length: size.stacks }, (_, s) => `stack-${String(s).padStart(3, "0")}`);
    for (const stack of stacks) {
      const folder = join(work, stack);
      mkdirSync(folder, { recursive: true });
      const docs = Array.from({ length: size.objects }, (_, i) => weightedBackendDoc(`svc-${i}`, i, children));
      for (let i = 0; i < docs.length; i += OBJECTS_PER_FILE)
        writeFileSync(join(folder, `backends-${i / OBJECTS_PER_FILE}.yaml`), `${docs.slice(i, i + OBJECTS_PER_FILE).join("\n---\n")}\n`);
      const { desired, diagnostics } = await loadDesired([folder], { cwd: folder, env: {} });
      if (diagnostics.some((d) => d.severity === "error")) throw new Error(`agent bench: the manifests of ${stack} do not load`);
      store.syncTransaction(() => {
        for (const d of desired.weightedBackends) {
          const { id, created_at } = store.newId("bkdwd");
          store.insertWeightedBackend(account, {
            id,
            created_at,
            description: d.description,
            metadata: canonicalJson(buildMetadata(d.metadata, buildMarker(stack, d.name, d.protect))),
            backends: d.backends,
          });
        }
      });
    }
    return stacks;
  });
}

interface RunningAgent {
  url: string;
  pid: number;
  stop(): Promise<void>;
}

function startAgent(cli: string, dir: string): Promise<RunningAgent> {
  const proc: ChildProcess = spawn(
    process.execPath,
    [cli, "agent", "--config", "agent.yaml", "--listen", "127.0.0.1:0", "--data", "agent.db", "--token-file", "token", "--rate-limit", "off"],
    {
      cwd: dir,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOOK_SECRET: SECRET, EDGEPLAN_API_KEY: BENCH_KEY },
      stdio: ["ignore", "pipe", "ignore"],
    },
  );
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error("agent bench: the agent did not start within 20 s")), 20_000);
    proc.once("exit", (code) => reject(new Error(`agent bench: the agent exited (${code})`)));
    proc.stdout?.setEncoding("utf8").on("data", (s: string) => {
      out += s;
      const m = /listening on (http:\S+)/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      resolve({
        url: m[1] as string,
        pid: proc.pid as number,
        stop: () =>
          new Promise((done) => {
            proc.removeAllListeners("exit");
            proc.once("exit", () => done());
            proc.kill("SIGTERM");
          }),
      });
    });
  });
}

/** Reconciliations the agent counted so far (its /metrics). */
async function reconciliations(url: string): Promise<number> {
  const res = await request(`${url}/metrics`);
  const text = await res.body.text();
  let n = 0;
  for (const m of text.matchAll(/^edgeplan_agent_reconciliations_total\{[^}]*\} (\d+)/gm)) n += Number(m[1]);
  return n;
}

async function waitFor(what: string, check: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  for (let i = 0; Date.now() < end && i < ms / 20; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`agent bench: ${what} not within ${ms} ms`);
}

function rssMbOf(pid: number): number {
  const kb = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  return kb === undefined ? 0 : round1(Number(kb) / 1024);
}

/** Starts one cycle: a commit that changes no stack, and a signed webhook that fetches it at once. */
async function nextCycle(agent: RunningAgent, work: string, n: number): Promise<void> {
  writeFileSync(join(work, "README.md"), `cycle ${n}\n`);
  git(work, "add", "-A");
  git(work, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", `cycle ${n}`);
  git(work, "push", "-q", "origin", "HEAD:main");
  const body = JSON.stringify({ ref: "refs/heads/main" });
  const signature = `sha256=${createHmac("sha256", SECRET).update(body).digest("hex")}`;
  const res = await request(`${agent.url}/hooks/routing`, { method: "POST", body, headers: { "x-hub-signature-256": signature, "content-type": "application/json" } });
  await res.body.text();
  if (res.statusCode !== 202) throw new Error(`agent bench: the webhook answered ${res.statusCode}`);
}

export async function measureAgent(size: AgentBenchSize, log: (line: string) => void = () => undefined): Promise<Measurement> {
  const dir = makeWorkDir();
  let server: BenchServer | undefined;
  let agent: RunningAgent | undefined;
  try {
    const bare = join(dir, "routing.git");
    const work = join(dir, "work");
    git(dir, "init", "-q", "--bare", "-b", "main", bare);
    git(dir, "clone", "-q", bare, work);
    const dataFile = join(dir, "live.db");
    log(`agent: seeding ${size.stacks} stacks of ${size.objects} weighted backends`);
    const stacks = await seedStacks(dataFile, work, size);
    writeFileSync(join(work, "README.md"), "cycle 1\n");
    git(work, "add", "-A");
    git(work, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "stacks");
    git(work, "push", "-q", "origin", "HEAD:main");
    server = await startBenchServer(builtCli(), { dataFile, latencyMs: size.latencyMs });
    const [pageMs = size.latencyMs] = await warmUp(server, ["/backends/weighted?limit=100"]);
    writeFileSync(join(dir, "token"), TOKEN);
    const stackLines = stacks.map((s) => `  - {name: ${s}, source: routing, path: ${s}, api_url: "${server?.url}", api_key_env: EDGEPLAN_API_KEY, interval: 1h}\n`).join("");
    writeFileSync(
      join(dir, "agent.yaml"),
      `sources:\n  - {name: routing, url: ${bare}, ref: main, interval: 1h, webhook: {secret_env: HOOK_SECRET}}\nstacks:\n${stackLines}`,
    );
    server.traffic.reset();
    agent = await startAgent(builtCli(), dir);
    const running = agent;
    await waitFor("the first cycle", async () => (await reconciliations(running.url)) >= size.stacks);
    const spans: number[] = [];
    const requests: number[] = [];
    const walls: number[] = [];
    let baseline = 0;
    for (let n = 2; n <= size.cycles; n++) {
      await server.settle();
      server.traffic.reset();
      const started = performance.now();
      await nextCycle(running, work, n);
      await waitFor(`cycle ${n}`, async () => (await reconciliations(running.url)) >= size.stacks * n);
      walls.push(performance.now() - started);
      await server.settle();
      const t = server.traffic.read();
      requests.push(t.requests);
      spans.push(t.spanMs);
      if (n === size.baselineCycle) baseline = rssMbOf(running.pid);
      if (n % 10 === 0) log(`agent: cycle ${n}: ${t.requests} requests, ${round1(t.spanMs)} ms on the server`);
    }
    const last = rssMbOf(running.pid);
    const pages = listPages(size.stacks * size.objects);
    const bound = pages * pageMs;
    const sorted = [...spans].sort((a, b) => a - b);
    const wall = sorted[Math.floor(sorted.length / 2)] ?? 0;
    const cycleWalls = [...walls].sort((a, b) => a - b);
    const memory = ratio(last, baseline);
    const maxRequests = Math.max(...requests);
    return {
      requests: maxRequests,
      minimal_requests: pages,
      wall_ms: round1(wall),
      bound_ms: round1(bound),
      wall_vs_bound: ratio(wall, bound),
      cycle_ms: round1(cycleWalls[Math.floor(cycleWalls.length / 2)] ?? 0),
      cycle_vs_bound: ratio(cycleWalls[Math.floor(cycleWalls.length / 2)] ?? 0, bound),
      rss_mb: last,
      rss_baseline_mb: baseline,
      rss_vs_baseline: memory,
      stacks: size.stacks,
      objects_per_stack: size.objects,
      cycles: size.cycles,
      request_ms: round1(pageMs),
      ok: maxRequests === pages && memory <= MEMORY_SLACK,
      target: `requests per cycle = one listing (${pages} pages), rss after cycle ${size.cycles} <= ${MEMORY_SLACK}x after cycle ${size.baselineCycle}`,
      summary: `${size.stacks} stacks x ${size.objects} objects; cycle wall (webhook to the last stack's status) ${ratio(cycleWalls[Math.floor(cycleWalls.length / 2)] ?? 0, bound)}x the listing's bound`,
    };
  } finally {
    await agent?.stop();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const agentScenario: Scenario = {
  name: "agent",
  description: "edgeplan agent: 50 stacks of 200 weighted backends on one account, cycles with nothing to change",
  run: ({ quick }) => measureAgent(quick ? AGENT_SIZES.quick : AGENT_SIZES.full, progress),
};
