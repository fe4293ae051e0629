/**
 * `edgeplan demo`: the quick start. Plans the bundled examples against an embedded local server that starts empty,
 * applies them, and plans again to show that nothing is left to do. Needs no account and no setup.
 */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { EXIT } from "../model/errors.js";
import { runApply } from "./apply.js";
import type { CommandIO } from "./io.js";
import { runPlan } from "./plan.js";

/**
 * The examples folder beside the package's package.json: the first folder above this module that holds one (the
 * compiled sources, dist/src/commands/, and the CLI's bundle, dist/cli/, sit at different depths).
 */
function examplesFolder(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json")) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, "examples");
}

/**
 * How the closing line names the examples for a shell in `cwd`: relative when they are below it (a local install),
 * else absolute (a global one, where a relative path would climb out of the user's folder); quoted when needed.
 */
function examplesForShell(cwd: string, folder: string): string {
  const rel = relative(cwd, folder);
  const shown = rel === "" ? "." : rel.startsWith("..") || isAbsolute(rel) ? folder : rel;
  return /^[\w./-]+$/.test(shown) ? shown : `'${shown.replaceAll("'", "'\\''")}'`;
}

/** Runs the three steps; returns 0 when the second plan has nothing to do. */
export async function runDemo(io: CommandIO): Promise<number> {
  const state = mkdtempSync(join(tmpdir(), "edgeplan-demo-"));
  const demoIO: CommandIO = { ...io, env: { ...io.env, EDGEPLAN_LOCAL_DIR: state } };
  const examples = relative(io.cwd, examplesFolder()) || ".";
  // The demo's own settings: a project file of the folder it is started in is not read.
  const common = { paths: [examples], local: true, stack: "demo", config: false as const };
  const step = (n: number, text: string): void => io.stderr(`\n== ${n}/3 ${text}\n\n`);
  try {
    step(1, `plan: what applying ${examples} to an empty local server would do`);
    await runPlan(common, demoIO);
    step(2, "apply: make the changes (auto-approved, risks acknowledged for the demo)");
    // The plan was shown by step 1: the apply shows its progress and report only.
    const applied = await runApply({ ...common, autoApprove: true, force: true, planShown: true }, demoIO);
    if (applied.exitCode !== EXIT.ok) return applied.exitCode;
    step(3, "plan again: the live side now matches the manifests");
    const again = await runPlan({ ...common, detailedExitcode: true }, demoIO);
    io.stderr(
      again.exitCode === EXIT.ok
        ? "\nDemo done: the second plan has nothing to do. Next, on a copy of the examples in your own folder: " +
            `cp -r ${examplesForShell(io.cwd, examplesFolder())} edgeplan-examples && edgeplan plan --local edgeplan-examples\n`
        : "\nDemo: the second plan still has changes; this is a bug, please report it.\n",
    );
    return again.exitCode;
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
}
