/**
 * Benchmark `server-pg`: `edgeplan serve` over PostgreSQL, one replica and two on one database, side by side with
 * the SQLite store in the same run, under the load of the `server` scenario (32 connections, GETs by id, then
 * durable PATCHes, each committed and flushed by PostgreSQL before the answer). The set-ups take turns. PostgreSQL is a throwaway cluster
 * on loopback with its default durability (fsync and synchronous_commit on). Targets: at least 5,000 GETs/s and
 * 1,000 PATCHes/s with one replica; two replicas serve at least 1.6x the GETs of one.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "../src/server/index.js";
import { makeWorkDir } from "./fleet.js";
import type { Pool } from "undici";
import { builtCli, median, type Measurement, type Scenario } from "./measure.js";
import { createDatabase, findPostgresBin, startCluster } from "./postgres-cluster.js";
import { getPhase, patchPhase, poolsFor, SERVER_LOAD_SIZES, seedObjects, TARGET_GETS, TARGET_PATCHES, type Seeded, type ServerLoadSize } from "./server-load.js";
import { BENCH_ACCOUNT, seedDataFile, startBenchServer, type BenchServer } from "./traffic.js";

const TARGET_SCALE = 1.6;
/** Each set-up gets this many slices of each phase, taken in turn with the others'. */
const ROUNDS = 3;

interface SetUp {
  name: "sqlite" | "pg1" | "pg2";
  pools: Pool[];
  seeded: Seeded;
  gets: number[];
  patches: number[];
  errors: number;
}

/**
 * The three set-ups take turns, slice by slice (GETs of each, then PATCHes of each, `ROUNDS` times), so that a
 * neighbour's load on this shared machine falls on all of them alike; each figure is the median of its slices.
 */
async function takeTurns(setUps: SetUp[], size: ServerLoadSize): Promise<void> {
  const slice = Math.max(100, Math.round(size.phaseMs / ROUNDS));
  for (const s of setUps) await getPhase(s.pools, size.connections, 300, s.seeded);
  for (let round = 0; round < ROUNDS; round++) {
    for (const s of setUps) {
      const phase = await getPhase(s.pools, size.connections, slice, s.seeded);
      s.gets.push(phase.perSecond);
      s.errors += phase.errors;
    }
    for (const s of setUps) {
      const phase = await patchPhase(s.pools, size.connections, slice, s.seeded);
      s.patches.push(phase.perSecond);
      s.errors += phase.errors;
    }
  }
}

/** Runs the three set-ups at a size: SQLite, one PostgreSQL replica, two PostgreSQL replicas, side by side. */
export async function measureServerPg(size: ServerLoadSize): Promise<Measurement> {
  const bin = findPostgresBin();
  if (!bin) throw new Error("PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin or on the PATH); install the postgresql package");
  const dir = makeWorkDir();
  const cluster = await startCluster(bin);
  const servers: BenchServer[] = [];
  const setUps: SetUp[] = [];
  try {
    const dataFile = join(dir, "server.db");
    const sqliteSeed = await seedDataFile(dataFile, (store, account) => seedObjects(store, account, size.objects));
    const databaseUrl = await createDatabase(cluster.url, "bench_");
    const store = await openStore({ databaseUrl, poolSize: 1 });
    const pgSeed = await seedObjects(store, BENCH_ACCOUNT, size.objects).finally(() => store.close());
    for (const settings of [{ dataFile }, { databaseUrl }, { databaseUrl }]) {
      servers.push(await startBenchServer(builtCli(), { ...settings, discardLog: true }));
    }
    const [sqlite, first, second] = servers.map((s) => s.url) as [string, string, string];
    const setUp = (name: SetUp["name"], urls: string[], seeded: Seeded): SetUp => ({
      name,
      pools: poolsFor(urls, size.connections),
      seeded,
      gets: [],
      patches: [],
      errors: 0,
    });
    setUps.push(setUp("sqlite", [sqlite], sqliteSeed), setUp("pg1", [first], pgSeed), setUp("pg2", [first, second], pgSeed));
    await takeTurns(setUps, size);
    return figures(setUps, size);
  } finally {
    await Promise.all(setUps.flatMap((s) => s.pools.map((p) => p.close())));
    await Promise.all(servers.map((s) => s.stop()));
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function figures(setUps: SetUp[], size: ServerLoadSize): Measurement {
  const [sqlite, one, two] = setUps.map((s) => ({ gets: median(s.gets), patches: median(s.patches), errors: s.errors })) as [Fig, Fig, Fig];
  const scale = one.gets === 0 ? 0 : Math.round((two.gets / one.gets) * 100) / 100;
  const errors = sqlite.errors + one.errors + two.errors;
  const ok = one.gets >= TARGET_GETS && one.patches >= TARGET_PATCHES && scale >= TARGET_SCALE && errors === 0;
  return {
    wall_ms: size.phaseMs * 6,
    connections: size.connections,
    sqlite_get_per_s: sqlite.gets,
    sqlite_patch_per_s: sqlite.patches,
    pg1_get_per_s: one.gets,
    pg1_patch_per_s: one.patches,
    pg2_get_per_s: two.gets,
    pg2_patch_per_s: two.patches,
    pg2_vs_pg1_gets: scale,
    errors,
    ok,
    target: `one replica >= ${TARGET_GETS} GETs/s and >= ${TARGET_PATCHES} durable PATCHes/s; two replicas >= ${TARGET_SCALE}x the GETs of one`,
    summary:
      `SQLite GET ${sqlite.gets}/s PATCH ${sqlite.patches}/s; ` +
      `PostgreSQL x1 GET ${one.gets}/s PATCH ${one.patches}/s; ` +
      `x2 GET ${two.gets}/s (${scale}x) PATCH ${two.patches}/s (medians of ${ROUNDS} interleaved slices)`,
  };
}

interface Fig {
  gets: number;
  patches: number;
  errors: number;
}

export const serverPgScenario: Scenario = {
  name: "server-pg",
  description: "edgeplan serve --database: GETs by id and durable PATCHes at 32 connections, one and two replicas, beside --data",
  run: ({ quick }) => measureServerPg(quick ? SERVER_LOAD_SIZES.quick : SERVER_LOAD_SIZES.full),
};
