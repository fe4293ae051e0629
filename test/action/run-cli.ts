/**
 * Runs the action as a child process, inputs in its environment: the bundled action (action.yml `runs.main`) from a
 * folder that holds nothing but action.yml and the bundle, as a runner starts a JavaScript action, or the built
 * CLI's `edgeplan action`.
 */
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, parse as parsePath } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "yaml";
import { inputEnvName } from "../../src/action/inputs.js";

import { CLI } from "../helpers/cli-path.js";

export { CLI };
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface ActionYml {
  runs: { using: string; main: string };
  inputs: Record<string, { default?: string }>;
}

export const actionYml = (): ActionYml => parse(readFileSync(join(ROOT, "action.yml"), "utf8")) as ActionYml;

/** The folders from `dir` up to the root that hold a node_modules: where a stray module could be found. */
export function nodeModulesAbove(dir: string): string[] {
  const found: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, "node_modules"))) found.push(join(d, "node_modules"));
    if (d === parsePath(d).root) return found;
  }
}

/** A fresh folder with only action.yml and the bundle, as the runner checks an action out. */
export { checkOutAction as copyAction } from "../../bench/action-start.js";

/** The INPUT_ variables a runner sets: the step's `with:` values, else the defaults of action.yml (expressions aside). */
export function withDefaults(env: Record<string, string>): Record<string, string> {
  const out = { ...env };
  for (const [name, input] of Object.entries(actionYml().inputs)) {
    const variable = inputEnvName(name);
    if (out[variable] === undefined && input.default !== undefined && !input.default.includes("${{")) out[variable] = input.default;
  }
  return out;
}

/**
 * Runs `node <args>` in `cwd` with exactly `env` (plus PATH), so that nothing of the test process's own environment
 * (a CI runner's GITHUB_* variables) leaks in.
 */
export async function runNode(node: string, args: string[], env: Record<string, string>, cwd: string, timeoutMs = 60_000): Promise<CliRun> {
  const child = spawn(node, args, { cwd, env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** Runs the built CLI's `edgeplan action`. */
export async function runActionCli(env: Record<string, string>, cwd: string, timeoutMs = 60_000): Promise<CliRun> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first with \`npm run build\``);
  return runNode(process.execPath, [CLI, "action"], env, cwd, timeoutMs);
}
