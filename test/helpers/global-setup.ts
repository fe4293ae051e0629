/**
 * vitest global setup: end-to-end tests run the built CLI, which vitest does not build. `npm test` builds first
 * (pretest); a bare `npx vitest` without a build stops here with the fix instead of failing test by test. The
 * bundled action's tests also run it with Node 24, installed here once (test/helpers/node-release.ts).
 */
import { existsSync } from "node:fs";
import type { TestProject } from "vitest/node";
import { POSTGRES_SKIPPED, postgresTestsRun } from "../../bench/postgres-cluster.js";
import { CLI } from "./cli-path.js";
import { ensureNode24 } from "./node-release.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The path of a Node 24 binary. */
    node24: string;
  }
}

export default function setup(project: TestProject): () => void {
  if (!existsSync(CLI)) {
    throw new Error(`${CLI} is missing: run \`npm run build\` first (\`npm test\` does it), then run the tests again`);
  }
  project.provide("node24", ensureNode24());
  // Said again at the end, where it is seen: the PostgreSQL suites did not run.
  return () => {
    if (!postgresTestsRun()) process.stderr.write(POSTGRES_SKIPPED);
  };
}
