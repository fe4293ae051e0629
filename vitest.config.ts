import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";
import { POSTGRES_SKIPPED, postgresTestsRun } from "./bench/postgres-cluster.js";

/**
 * Two projects. `sqlite`: every suite, the server on its embedded store. `postgres`: the server suites again, each
 * test server on its own database of one throwaway PostgreSQL cluster (test/helpers/postgres-setup.ts), plus the
 * tests of several replicas on one database (test/postgres/). Without PostgreSQL installed the second project is
 * skipped, loudly; under CI=true it runs and fails instead.
 */
const SERVER_SUITES = [
  "test/server/**/*.test.ts",
  "test/postgres/**/*.test.ts",
  "test/agent/store.test.ts",
  "test/api/integration.test.ts",
  "test/api/vendor-client.test.ts",
  "test/reliability/hostile-requests.test.ts",
];
const withPostgres = postgresTestsRun();
if (!withPostgres) process.stderr.write(POSTGRES_SKIPPED);

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // A worker runs its files one after another in one module graph instead of importing the sources again for each
    // file: 477 s against 592 s for the whole suite on two cores, measured one after the other. No test relies on a
    // fresh module state (each starts its own servers, folders and clocks).
    isolate: false,
    // One test file per core, and two on a machine of two: Vitest's default leaves a core free, which on two cores
    // runs the files one at a time (520 s against 310 s for the whole suite, measured side by side).
    maxWorkers: Math.max(2, availableParallelism()),
    globalSetup: ["test/helpers/global-setup.ts"],
    setupFiles: ["test/helpers/property-seed.ts"],
    projects: [
      { extends: true, test: { name: "sqlite", include: ["test/**/*.test.ts"], exclude: ["test/postgres/**"] } },
      ...(withPostgres
        ? [
            {
              extends: true as const,
              test: {
                name: "postgres",
                include: SERVER_SUITES,
                env: { EDGEPLAN_TEST_STORE: "postgres" },
                globalSetup: ["test/helpers/global-setup.ts", "test/helpers/postgres-setup.ts"],
              },
            },
          ]
        : []),
    ],
  },
});
