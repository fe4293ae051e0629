/**
 * The npm package as a user gets it: `npm pack` of this repository, then `npm install ./edgeplan-X.tgz` into an empty
 * folder with no node_modules above it, from npm's cache where it can (the tests send nothing to the registry when
 * the cache holds the dependencies, as it does after `npm ci`).
 */
import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { promisify } from "node:util";
import { expect } from "vitest";
import { nodeModulesAbove } from "../action/run-cli.js";
import { ensureNode, nodeRelease } from "../helpers/node-release.js";
import { REPO_ROOT } from "../helpers/server.js";

const run = promisify(execFile);

export const VERSION = (JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string }).version;

/** This process's environment without what `npm test` adds (npm_config_*, npm_package_*), which would steer npm. */
export function cleanEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
}

export interface InstalledPackage {
  /** The temporary folder that holds `app/` (and whatever else a test makes beside it). */
  work: string;
  /** The folder the package was installed into: `app/node_modules/edgeplan`, `app/node_modules/.bin/edgeplan`. */
  app: string;
  /** The installed `edgeplan` command. */
  bin: string;
  /** `cleanEnv()` with the Node release under test first on PATH: what runs `npm` and the `edgeplan` command. */
  env: NodeJS.ProcessEnv;
  /** The lines npm printed as warnings while it installed the package (an engine it does not support, ...). */
  warnings: string[];
  /**
   * Bytes of the files npm installed (the package and its dependencies), before the native binding is provided: a
   * binding compiled here leaves its object files behind, which a prebuilt one does not.
   */
  installedBytes: number;
}

/**
 * The Node release the package is installed and run with: this process's, or the major release that
 * EDGEPLAN_TEST_NODE_MAJOR names (`.ci/run` runs this suite again with 22 and 24), fetched from npm once; `headers`
 * is where that release's C headers are, for the native binding, which is then built rather than copied.
 */
function nodeUnderTest(): { bin: string; headers?: string } {
  const major = process.env.EDGEPLAN_TEST_NODE_MAJOR;
  if (major === undefined || major === "") return { bin: process.execPath };
  return { bin: ensureNode(Number(major)), headers: nodeRelease(Number(major)).headers };
}

/**
 * Packs the repository (build first: the package ships `dist/`) and installs the tarball into `work/app/`, without
 * running the dependencies' install scripts; better-sqlite3 then gets the binding this repository's node_modules
 * already built for the same version of it, as a prebuilt binary would be. That saves the one to three minutes of
 * both cores node-gyp takes where no prebuilt binary can be downloaded, a build that `npm ci` of the repository
 * (`.ci/run`) has just made the same way a user's install makes it. When the versions differ, the binding is built
 * as an install would build it. The package itself has no install script.
 */
export async function installPackage(): Promise<InstalledPackage> {
  const work = mkdtempSync(join(tmpdir(), "edgeplan-pack-"));
  const node = nodeUnderTest();
  const env = { ...cleanEnv(), PATH: [dirname(node.bin), process.env.PATH].join(delimiter) };
  // The folder holds the package and nothing else, and no node_modules above it could lend a module.
  const app = join(work, "app");
  mkdirSync(app);
  expect(nodeModulesAbove(work)).toEqual([]);
  const packed = await run("npm", ["pack", "--pack-destination", app, "--loglevel=error"], { cwd: REPO_ROOT, env, timeout: 120_000 });
  const tgz = packed.stdout.trim().split("\n").pop()!;
  expect(tgz).toBe(`edgeplan-${VERSION}.tgz`);
  expect(readdirSync(app)).toEqual([tgz]);

  const flags = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=warn", "--ignore-scripts"];
  const installed = await run("npm", ["install", `./${tgz}`, ...flags], { cwd: app, env, timeout: 280_000 });
  const installedBytes = sizeOf(join(app, "node_modules"));
  await provideSqliteBinding(app, env, node);
  const warnings = installed.stderr.split("\n").filter((line) => /^npm warn/i.test(line));
  return { work, app, bin: join(app, "node_modules", ".bin", "edgeplan"), env, warnings, installedBytes };
}

/** Bytes of the regular files below `dir`. */
function sizeOf(dir: string): number {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .reduce((sum, entry) => sum + statSync(join(entry.parentPath, entry.name)).size, 0);
}

const BINDING = join("build", "Release", "better_sqlite3.node");

/**
 * better-sqlite3's binding in an install made with --ignore-scripts: copied when the package's version and the Node
 * ABI match ours, else built (against the headers of the Node release under test: nothing is downloaded).
 */
async function provideSqliteBinding(app: string, env: NodeJS.ProcessEnv, node: { bin: string; headers?: string }): Promise<void> {
  const ours = join(REPO_ROOT, "node_modules", "better-sqlite3");
  const theirs = join(app, "node_modules", "better-sqlite3");
  const version = (dir: string): string => (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { version: string }).version;
  if (node.bin === process.execPath && existsSync(join(ours, BINDING)) && version(ours) === version(theirs)) {
    mkdirSync(join(theirs, "build", "Release"), { recursive: true });
    copyFileSync(join(ours, BINDING), join(theirs, BINDING));
    return;
  }
  // With the release's headers at hand, build from them: no prebuilt binary or headers are fetched from the network.
  const local = node.headers === undefined ? { flags: [], env: {} } : { flags: ["--build-from-source"], env: { npm_config_nodedir: node.headers } };
  // The compile took 183 s and 243 s on two busy cores, and over 280 s for two at once: 10 minutes at most, within
  // the test's 15.
  const timeout = node.headers === undefined ? 280_000 : 600_000;
  await run("npm", ["rebuild", "better-sqlite3", ...local.flags, "--loglevel=error"], { cwd: app, env: { ...env, ...local.env, JOBS: "max" }, timeout });
}
