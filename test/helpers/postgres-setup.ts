/**
 * vitest global setup of the `postgres` project: one throwaway cluster for the whole run (each test server gets its
 * own database in it), stopped and removed at the end. Its URL reaches the tests through `inject("pgUrl")`.
 */
import type { TestProject } from "vitest/node";
import { findPostgresBin, startCluster } from "../../bench/postgres-cluster.js";

declare module "vitest" {
  export interface ProvidedContext {
    pgUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => void> {
  const bin = findPostgresBin();
  if (!bin) {
    throw new Error(
      "PostgreSQL is not installed (no initdb under /usr/lib/postgresql/*/bin, $EDGEPLAN_PG_BIN or the PATH), and CI=true requires the PostgreSQL tests: install the postgresql package (.ci/run does)",
    );
  }
  const cluster = await startCluster(bin);
  project.provide("pgUrl", cluster.url);
  return () => cluster.stop();
}
