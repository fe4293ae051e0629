/**
 * vitest global setup: end-to-end tests run the built CLI, which vitest does not build. `npm test` builds first
 * (pretest); a bare `npx vitest` without a build stops here with the fix instead of failing test by test.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { POSTGRES_SKIPPED, postgresTestsRun } from "../../bench/postgres-cluster.js";

const CLI = fileURLToPath(new URL("../../dist/src/cli.js", import.meta.url));

export default function setup(): () => void {
  if (!existsSync(CLI)) {
    throw new Error(`${CLI} is missing: run \`npm run build\` first (\`npm test\` does it), then run the tests again`);
  }
  // Said again at the end, where it is seen: the PostgreSQL suites did not run.
  return () => {
    if (!postgresTestsRun()) process.stderr.write(POSTGRES_SKIPPED);
  };
}
