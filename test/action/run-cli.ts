/** Runs the built CLI's `edgeplan action` as the composite action does: a child process, inputs in its environment. */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const CLI = fileURLToPath(new URL("../../dist/src/cli.js", import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node dist/src/cli.js action` in `cwd` with exactly `env` (plus PATH), so that nothing of the test
 * process's own environment (a CI runner's GITHUB_* variables) leaks in.
 */
export async function runActionCli(env: Record<string, string>, cwd: string, timeoutMs = 60_000): Promise<CliRun> {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first with \`npm run build\``);
  const child = spawn(process.execPath, [CLI, "action"], {
    cwd,
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  clearTimeout(timer);
  return { code, stdout, stderr };
}
