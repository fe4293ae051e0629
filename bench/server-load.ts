/**
 * Benchmark `server`: `edgeplan serve --data FILE` (its request log written, as in service) under load from this
 * process: 32 connections, each sending its next request as soon as its answer arrived. First GETs of weighted
 * backends by id, then durable PATCHes (full bodies, each one SQLite transaction committed to the write-ahead log
 * before the answer), each phase for a fixed time. Reports answers per second and latency percentiles. Targets:
 * at least 5,000 GETs/s and 1,000 PATCHes/s on this 2-core machine. The same load runs again with `--metrics`:
 * the ratio of the two throughputs is what counting every request costs.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { Pool } from "undici";
import { buildMarker, buildMetadata } from "../src/kinds/weighted-backend.js";
import { canonicalJson } from "../src/model/canonical.js";
import type { Store } from "../src/server/store.js";
import { makeWorkDir } from "./fleet.js";
import { builtCli, percentile, round1, type Measurement, type Scenario } from "./measure.js";
import { BENCH_KEY, seedDataFile, startBenchServer, type BenchServer } from "./traffic.js";

export interface ServerLoadSize {
  /** Weighted backends in the store (the ids requests pick from). */
  objects: number;
  connections: number;
  /** Length of each phase, in ms. */
  phaseMs: number;
}

export const SERVER_LOAD_SIZES: { full: ServerLoadSize; quick: ServerLoadSize } = {
  full: { objects: 1000, connections: 32, phaseMs: 3000 },
  quick: { objects: 200, connections: 32, phaseMs: 1000 },
};

export const TARGET_GETS = 5000;
export const TARGET_PATCHES = 1000;

export interface Phase {
  perSecond: number;
  p50: number;
  p99: number;
  answers: number;
  errors: number;
}

/**
 * `connections` loops spread evenly over `pools` (one per server), each sending its next request when its answer
 * is read, until `ms` have passed.
 */
async function load(pools: Pool[], connections: number, ms: number, next: (i: number) => { method: "GET" | "PATCH"; path: string; body?: string }): Promise<Phase> {
  const headers = { authorization: `Bearer ${BENCH_KEY}`, "ngrok-version": "2" };
  const bodyHeaders = { ...headers, "content-type": "application/json" };
  const latencies: number[] = [];
  let errors = 0;
  let n = 0;
  const started = performance.now();
  const deadline = started + ms;
  const worker = async (w: number): Promise<void> => {
    const pool = pools[w % pools.length] as Pool;
    while (performance.now() < deadline) {
      const req = next(n++);
      const t = performance.now();
      const res = await pool.request({ method: req.method, path: req.path, headers: req.body ? bodyHeaders : headers, body: req.body ?? null });
      await res.body.text();
      latencies.push(performance.now() - t);
      if (res.statusCode !== 200) errors++;
    }
  };
  await Promise.all(Array.from({ length: connections }, (_, w) => worker(w)));
  const elapsed = performance.now() - started;
  return {
    perSecond: Math.round((latencies.length / elapsed) * 1000),
    p50: round1(percentile(latencies, 50)),
    p99: round1(percentile(latencies, 99)),
    answers: latencies.length,
    errors,
  };
}

/** What a load phase needs: the objects to pick from and the two fixture children every PATCH sets. */
export interface Seeded {
  ids: string[];
  children: string[];
}

/** One pool per server, the connections split evenly between them. */
export function poolsFor(urls: string[], connections: number): Pool[] {
  return urls.map((url) => new Pool(url, { connections: Math.ceil(connections / urls.length) }));
}

const pick = (seeded: Seeded, i: number): string => seeded.ids[(i * 7919) % seeded.ids.length] as string;

/** GETs of weighted backends by id for `ms`. */
export function getPhase(pools: Pool[], connections: number, ms: number, seeded: Seeded): Promise<Phase> {
  return load(pools, connections, ms, (i) => ({ method: "GET", path: `/backends/weighted/${pick(seeded, i)}` }));
}

/** Durable PATCHes with full bodies (description, metadata and both children) for `ms`. */
export function patchPhase(pools: Pool[], connections: number, ms: number, seeded: Seeded): Promise<Phase> {
  const [a, b] = seeded.children as [string, string];
  return load(pools, connections, ms, (i) => ({
    method: "PATCH",
    path: `/backends/weighted/${pick(seeded, i)}`,
    body: JSON.stringify({
      description: `service ${i}, revision ${i}`,
      metadata: canonicalJson(buildMetadata({ team: `team-${i % 40}`, revision: String(i) }, buildMarker("bench", `svc-${i}`, false))),
      backends: { [a]: 9000 - (i % 100), [b]: 1000 + (i % 100) },
    }),
  }));
}

/**
 * Against the server at `url`: a short warm-up, then GETs of weighted backends by id, then durable PATCHes with
 * full bodies, each phase for `size.phaseMs`.
 */
async function getThenPatch(url: string, size: ServerLoadSize, seeded: Seeded): Promise<{ gets: Phase; patches: Phase }> {
  const pools = poolsFor([url], size.connections);
  try {
    // A short warm-up, so that the figures are those of a server in service, not of its first requests.
    await getPhase(pools, size.connections, 300, seeded);
    const gets = await getPhase(pools, size.connections, size.phaseMs, seeded);
    const patches = await patchPhase(pools, size.connections, size.phaseMs, seeded);
    return { gets, patches };
  } finally {
    await Promise.all(pools.map((p) => p.close()));
  }
}

/** Seeds `objects` weighted backends over two fixture children, in one transaction; returns their ids. */
export function seedObjects(store: Store, account: string, objects: number): Promise<Seeded> {
  return store.transaction(async (tx) => {
    const kids = [(await tx.createBackend(account, "http_response")).id, (await tx.createBackend(account, "tunnel_group")).id];
    const made: string[] = [];
    for (let i = 0; i < objects; i++) {
      const { id, created_at } = await tx.newId("bkdwd");
      await tx.insertWeightedBackend(account, {
        id,
        created_at,
        description: `service ${i}`,
        metadata: canonicalJson(buildMetadata({ team: `team-${i % 40}` }, buildMarker("bench", `svc-${i}`, false))),
        backends: { [kids[0] as string]: 9000, [kids[1] as string]: 1000 },
      });
      made.push(id);
    }
    return { ids: made, children: kids };
  });
}

/** One server on `dataFile` (with or without metrics) under the GET then PATCH load; its phases and memory. */
async function loadOnce(dataFile: string, size: ServerLoadSize, seeded: Seeded, metrics: boolean): Promise<{ gets: Phase; patches: Phase; rss: number }> {
  const server: BenchServer = await startBenchServer(builtCli(), { dataFile, discardLog: true, metrics });
  try {
    const { gets, patches } = await getThenPatch(server.url, size, seeded);
    return { gets, patches, rss: server.rssMb() };
  } finally {
    await server.stop();
  }
}

const ratio = (a: number, b: number): number => Math.round((a / b) * 100) / 100;

/**
 * Runs the load test at a size: once without metrics (the figures the targets hold), then once more with
 * `--metrics` on the same file, so that the cost of counting shows as the ratio of the two throughputs.
 */
export async function measureServerLoad(size: ServerLoadSize): Promise<Measurement> {
  const dir = makeWorkDir();
  try {
    const dataFile = join(dir, "server.db");
    const seeded = await seedDataFile(dataFile, (store, account) => seedObjects(store, account, size.objects));
    const { gets, patches, rss } = await loadOnce(dataFile, size, seeded, false);
    const counted = await loadOnce(dataFile, size, seeded, true);
    const errors = gets.errors + patches.errors + counted.gets.errors + counted.patches.errors;
    const ok = gets.perSecond >= TARGET_GETS && patches.perSecond >= TARGET_PATCHES && errors === 0;
    const [getRatio, patchRatio] = [ratio(counted.gets.perSecond, gets.perSecond), ratio(counted.patches.perSecond, patches.perSecond)];
    return {
      wall_ms: size.phaseMs * 4,
      rss_mb: rss,
      connections: size.connections,
      get_per_s: gets.perSecond,
      get_p50_ms: gets.p50,
      get_p99_ms: gets.p99,
      patch_per_s: patches.perSecond,
      patch_p50_ms: patches.p50,
      patch_p99_ms: patches.p99,
      metrics_get_per_s: counted.gets.perSecond,
      metrics_patch_per_s: counted.patches.perSecond,
      metrics_vs_none_gets: getRatio,
      metrics_vs_none_patches: patchRatio,
      errors,
      ok,
      target: `>= ${TARGET_GETS} GETs/s and >= ${TARGET_PATCHES} durable PATCHes/s at ${size.connections} connections`,
      summary: `GET ${gets.perSecond}/s (p99 ${gets.p99} ms), PATCH ${patches.perSecond}/s (p99 ${patches.p99} ms); with --metrics x${getRatio} GETs, x${patchRatio} PATCHes`,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const serverScenario: Scenario = {
  name: "server",
  description: "edgeplan serve --data: GETs by id, then durable PATCHes, at 32 connections; again with --metrics",
  run: ({ quick }) => measureServerLoad(quick ? SERVER_LOAD_SIZES.quick : SERVER_LOAD_SIZES.full),
};
