/**
 * Node 24, the runtime of the GitHub Action (action.yml `runs.using: node24`), for the tests that run the bundled
 * action with it. It comes from the npm registry (the `node` package at major 24 ships the binary) into
 * node_modules/.cache, once: later runs find it there.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const NODE24_DIR = fileURLToPath(new URL("../../node_modules/.cache/edgeplan-node24/", import.meta.url));
export const NODE24 = `${NODE24_DIR}node_modules/node/bin/node`;

/** The version a node binary reports, or undefined when it does not run. */
function versionOf(node: string): string | undefined {
  try {
    return execFileSync(node, ["--version"], { encoding: "utf8", timeout: 30_000 }).trim();
  } catch {
    return undefined;
  }
}

/** Installs Node 24 unless the cache holds it; returns the path of its binary. */
export function ensureNode24(): string {
  if (versionOf(NODE24)?.startsWith("v24.")) return NODE24;
  rmSync(NODE24_DIR, { recursive: true, force: true });
  mkdirSync(NODE24_DIR, { recursive: true });
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  try {
    execFileSync(npm, ["install", "--prefix", NODE24_DIR, "--no-save", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error", "node@24"], {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 300_000,
    });
  } catch (err) {
    throw new Error(`installing Node 24 (npm install node@24 into ${NODE24_DIR}) failed: ${(err as { stderr?: Buffer }).stderr?.toString() ?? String(err)}`);
  }
  const version = versionOf(NODE24);
  if (!existsSync(NODE24) || !version?.startsWith("v24.")) throw new Error(`${NODE24} is not Node 24 after npm install node@24 (it says ${version ?? "nothing"})`);
  return NODE24;
}
