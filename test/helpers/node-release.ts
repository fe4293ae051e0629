/**
 * Other Node releases, from the npm registry (the `node` package at a major version ships the binary, and its
 * platform package the headers a native addon is compiled against), into node_modules/.cache, once: later runs find
 * them there. Node 24 is the runtime of the GitHub Action (action.yml `runs.using: node24`); 22 and 24 are what the
 * CLI's users run, and `.ci/run` installs the package on each (`EDGEPLAN_TEST_NODE_MAJOR`, test/package/install.ts).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Where release `major` lives, and its binary. */
export function nodeRelease(major: number): { dir: string; node: string; headers: string } {
  const dir = fileURLToPath(new URL(`../../node_modules/.cache/edgeplan-node${major}/`, import.meta.url));
  const pkg = `${dir}node_modules/node/`;
  return { dir, node: `${pkg}bin/node`, headers: `${pkg}node_modules/node-${process.platform}-${process.arch}` };
}

/** The version a node binary reports, or undefined when it does not run. */
function versionOf(node: string): string | undefined {
  try {
    return execFileSync(node, ["--version"], { encoding: "utf8", timeout: 30_000 }).trim();
  } catch {
    return undefined;
  }
}

/** Installs Node `major` unless the cache holds it; returns the path of its binary. */
export function ensureNode(major: number): string {
  const { dir, node } = nodeRelease(major);
  if (versionOf(node)?.startsWith(`v${major}.`)) return node;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  try {
    execFileSync(npm, ["install", "--prefix", dir, "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error", `node@${major}`], {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 300_000,
    });
  } catch (err) {
    throw new Error(`installing Node ${major} (npm install node@${major} into ${dir}) failed: ${(err as { stderr?: Buffer }).stderr?.toString() ?? String(err)}`);
  }
  const version = versionOf(node);
  if (!existsSync(node) || !version?.startsWith(`v${major}.`))
    throw new Error(`${node} is not Node ${major} after npm install node@${major} (it says ${version ?? "nothing"})`);
  return node;
}

/** Node 24's binary, installed when missing. */
export const ensureNode24 = (): string => ensureNode(24);
