/** Where the tests find the repository and the built CLI. Imports nothing of vitest: the global setup reads it too. */
import { builtCli, repoRoot } from "../../bench/measure.js";

export const REPO_ROOT = repoRoot();

/** The built CLI the package's `bin` names (the bundle `npm run build` makes): what a user runs. */
export const CLI = builtCli();
