/** Where the tests find the repository and the built CLI. Imports nothing of vitest: the global setup reads it too. */
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The built CLI the package's `bin` names (the bundle `npm run build` makes): what a user runs. */
export const CLI = join(REPO_ROOT, (JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { bin: { edgeplan: string } }).bin.edgeplan);
