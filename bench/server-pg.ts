/**
 * Benchmark `server-pg`: `edgeplan serve` over PostgreSQL, one replica and then two on one database, side by side
 * with the SQLite store in the same run, under the load of the `server` scenario (32 connections, GETs by id, then
 * durable PATCHes, each committed and flushed by PostgreSQL before the answer). PostgreSQL is a throwaway cluster
 * on loopback with its default durability (fsync and synchronous_commit on). Targets: at least 5,000 GETs/s and
 * 1,000 PATCHes/s with one replica; two replicas serve at least 1.6x the GETs of one.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { openStore } from "../src/server/index.js";
import { makeWorkDir } from "./fleet.js";
import { builtCli, type Measurement, type Scenario } from "./measure.js";
import { createDatabase, findPostgresBin, startCluster } from "./postgres-cluster.js";
import { getThenPatch, SERVER_LOAD_SIZES, seedObjects, TARGET_GETS, TARGET_PATCHES, type Phase, type ServerLoadSize } from "./server-load.js";
import { BENCH_ACCOUNT, seedDataFile, startBenchServer, type BenchServer, type ServeSettings } from "./traffic.js";

const TARGET_SCALE = 1.6;

/** Starts one server per settings, runs the phases across all of them, and stops them. */
async function phasesOn(settings: ServeSettings[], size: ServerLoadSize, seeded: { ids: string[]; children: string[] }): Promise<{ gets: Phase; patches: Phase }> {
  const servers: BenchServer[] = [];
  try {
    for (const s of settings) servers.push(await startBenchServer(builtCli(), { ...s, discardLog: true }));
    return await getThenPatch(
      servers.map((s) => s.url),
      size,
      seeded,
    );
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}

/** Runs the three set-ups at a size: SQLite, one PostgreSQL replica, two PostgreSQL replicas. */
export async function measureServerPg(size: ServerLoadSize): Promise<Measurement> {
  const bin = findPostgresBin();
  if (!bin) throw new Error("PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin or on the PATH); install the postgresql package");
  const dir = makeWorkDir();
  const cluster = await startCluster(bin);
  try {
    const dataFile = join(dir, "server.db");
    const sqliteSeed = await seedDataFile(dataFile, (store, account) => seedObjects(store, account, size.objects));
    const databaseUrl = await createDatabase(cluster.url, "bench_");
    const store = await openStore({ databaseUrl, poolSize: 1 });
    const pgSeed = await seedObjects(store, BENCH_ACCOUNT, size.objects).finally(() => store.close());

    const sqlite = await phasesOn([{ dataFile }], size, sqliteSeed);
    const one = await phasesOn([{ databaseUrl }], size, pgSeed);
    const two = await phasesOn([{ databaseUrl }, { databaseUrl }], size, pgSeed);
    const scale = one.gets.perSecond === 0 ? 0 : Math.round((two.gets.perSecond / one.gets.perSecond) * 100) / 100;
    const errors = [sqlite, one, two].reduce((n, r) => n + r.gets.errors + r.patches.errors, 0);
    const ok = one.gets.perSecond >= TARGET_GETS && one.patches.perSecond >= TARGET_PATCHES && scale >= TARGET_SCALE && errors === 0;
    return {
      wall_ms: size.phaseMs * 6,
      connections: size.connections,
      sqlite_get_per_s: sqlite.gets.perSecond,
      sqlite_patch_per_s: sqlite.patches.perSecond,
      pg1_get_per_s: one.gets.perSecond,
      pg1_get_p99_ms: one.gets.p99,
      pg1_patch_per_s: one.patches.perSecond,
      pg1_patch_p99_ms: one.patches.p99,
      pg2_get_per_s: two.gets.perSecond,
      pg2_patch_per_s: two.patches.perSecond,
      pg2_vs_pg1_gets: scale,
      errors,
      ok,
      target: `one replica >= ${TARGET_GETS} GETs/s and >= ${TARGET_PATCHES} durable PATCHes/s; two replicas >= ${TARGET_SCALE}x the GETs of one`,
      summary:
        `SQLite GET ${sqlite.gets.perSecond}/s PATCH ${sqlite.patches.perSecond}/s; ` +
        `PostgreSQL x1 GET ${one.gets.perSecond}/s PATCH ${one.patches.perSecond}/s; ` +
        `x2 GET ${two.gets.perSecond}/s (${scale}x) PATCH ${two.patches.perSecond}/s`,
    };
  } finally {
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const serverPgScenario: Scenario = {
  name: "server-pg",
  description: "edgeplan serve --database: GETs by id and durable PATCHes at 32 connections, one and two replicas, beside --data",
  run: ({ quick }) => measureServerPg(quick ? SERVER_LOAD_SIZES.quick : SERVER_LOAD_SIZES.full),
};
