/**
 * Benchmark `action-start`: how long a pull request waits for its plan comment. The bundled action (action.yml and
 * bundle/index.mjs alone in a folder, as a runner checks it out) runs for a pull_request event against
 * `edgeplan serve` loaded with examples/fixtures.yaml and a loopback stand-in of GitHub; the time is from the
 * process's spawn to the comment's POST reaching the stand-in, median of several runs. Beside it (full size only),
 * what the composite action that this one replaced did first on every run: `npm ci` and `npm run build` of this
 * repository in an empty folder (npm's cache warm, as on a machine that has installed it before).
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parse } from "yaml";
import { startGitHubStandIn, type GitHubStandIn } from "./github-stand-in.js";
import { builtCli, median, progress, repoRoot, round1, type Measurement, type Scenario } from "./measure.js";
import { BENCH_KEY, startBenchServer, type BenchServer } from "./traffic.js";

export interface ActionStartSize {
  runs: number;
  /** Also time `npm ci` + `npm run build` (a minute or more: better-sqlite3 is compiled where no prebuilt fits). */
  baseline: boolean;
}

export const ACTION_START_SIZES: { full: ActionStartSize; quick: ActionStartSize } = {
  full: { runs: 5, baseline: true },
  quick: { runs: 3, baseline: false },
};

const TOKEN = "ghs_benchToken";
/** Target: a pull request's comment within 2 s of the step's start (median), and 10x sooner than install + build. */
const TARGET_MS = 2_000;
const TARGET_RATIO = 10;
const TIMEOUT_MS = 120_000;

/**
 * A fresh folder with only action.yml and the file its `runs.main` names, as the runner checks an action out;
 * returns the folder and the main file's path.
 */
export function checkOutAction(root: string = repoRoot()): { dir: string; main: string } {
  const main = (parse(readFileSync(join(root, "action.yml"), "utf8")) as { runs: { main: string } }).runs.main;
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-action-"));
  mkdirSync(dirname(join(dir, main)), { recursive: true });
  copyFileSync(join(root, "action.yml"), join(dir, "action.yml"));
  copyFileSync(join(root, main), join(dir, main));
  return { dir, main: join(dir, main) };
}

/** The environment of the action's step on a pull request: the runner's files, the event, the inputs. */
function pullRequestEnv(root: string, server: BenchServer, gh: GitHubStandIn, n: number): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-bench-runner-"));
  const event = { repository: { full_name: "acme/routes", default_branch: "main" }, pull_request: { number: n, head: { sha: "5e5e5e5e" } } };
  writeFileSync(join(dir, "event.json"), JSON.stringify(event));
  for (const file of ["output", "summary"]) writeFileSync(join(dir, file), "");
  return {
    PATH: process.env.PATH ?? "",
    GITHUB_ACTIONS: "true",
    GITHUB_EVENT_NAME: "pull_request",
    GITHUB_EVENT_PATH: join(dir, "event.json"),
    GITHUB_REPOSITORY: "acme/routes",
    GITHUB_API_URL: gh.url,
    GITHUB_RUN_ID: "1",
    GITHUB_WORKSPACE: root,
    GITHUB_OUTPUT: join(dir, "output"),
    GITHUB_STEP_SUMMARY: join(dir, "summary"),
    RUNNER_TEMP: dir,
    INPUT_PATHS: "examples",
    INPUT_STACK: "bench",
    "INPUT_API-URL": server.url,
    "INPUT_API-KEY": BENCH_KEY,
    "INPUT_GITHUB-TOKEN": TOKEN,
    INPUT_COMMENT: "true",
    INPUT_PRUNE: "false",
  };
}

/** One run: spawn to the comment's POST, in ms; rejects unless the action exits 0 having posted it. */
async function timeOneRun(main: string, env: Record<string, string>, gh: GitHubStandIn, cwd: string): Promise<number> {
  const from = gh.calls.length;
  const started = performance.now();
  const proc = spawn(process.execPath, [main], { cwd, env, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  proc.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
  const timer = setTimeout(() => proc.kill("SIGKILL"), TIMEOUT_MS);
  const code = await new Promise<number | null>((resolve) => proc.once("close", resolve));
  clearTimeout(timer);
  const posted = gh.calls.slice(from).find((c) => c.method === "POST" || c.method === "PATCH");
  if (code !== 0 || !posted) throw new Error(`the action exited ${code}${posted ? "" : " without posting a comment"}: ${err.slice(-800)}`);
  return posted.at - started;
}

/** `npm ci` and `npm run build` of this repository's sources in an empty folder, in ms each. */
function timeInstallAndBuild(root: string): { ci_ms: number; build_ms: number } {
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-bench-composite-"));
  try {
    for (const f of ["package.json", "package-lock.json", "tsconfig.json", "tsconfig.build.json"]) copyFileSync(join(root, f), join(dir, f));
    for (const d of ["src", "bench", "scripts"]) cpSync(join(root, d), join(dir, d), { recursive: true });
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
    const step = (args: string[]): number => {
      const started = performance.now();
      const r = spawnSync("npm", args, { cwd: dir, env, stdio: ["ignore", "ignore", "pipe"], timeout: 600_000 });
      if (r.status !== 0) throw new Error(`npm ${args.join(" ")} failed: ${String(r.stderr).slice(-800)}`);
      return performance.now() - started;
    };
    return { ci_ms: step(["ci", "--no-audit", "--no-fund", "--loglevel=error"]), build_ms: step(["run", "build"]) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Measures the bundled action's start to comment, and (with `baseline`) the install and build it no longer needs. */
export async function measureActionStart(size: ActionStartSize): Promise<Measurement> {
  const root = repoRoot();
  const { dir, main } = checkOutAction(root);
  const dataDir = mkdtempSync(join(tmpdir(), "edgeplan-bench-data-"));
  const server = await startBenchServer(builtCli(), { dataFile: join(dataDir, "state.db"), fixtures: join(root, "examples", "fixtures.yaml"), discardLog: true });
  const gh = await startGitHubStandIn(TOKEN);
  const times: number[] = [];
  try {
    for (let i = 0; i < size.runs; i++) times.push(await timeOneRun(main, pullRequestEnv(root, server, gh, 1 + i), gh, root));
  } finally {
    await gh.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const wall = median(times);
  const result: Measurement = {
    wall_ms: round1(wall),
    runs: size.runs,
    ok: wall <= TARGET_MS,
    target: `comment posted within ${TARGET_MS} ms of the start${size.baseline ? `, ${TARGET_RATIO}x sooner than npm ci + build` : ""}`,
    summary: `bundled action, start to comment posted: ${round1(wall)} ms`,
  };
  if (!size.baseline) return result;
  progress("action-start: npm ci and npm run build, as the composite action did on every run");
  const { ci_ms, build_ms } = timeInstallAndBuild(root);
  const composite = ci_ms + build_ms;
  return {
    ...result,
    composite_ci_ms: round1(ci_ms),
    composite_build_ms: round1(build_ms),
    composite_install_build_ms: round1(composite),
    composite_vs_bundle: round1(composite / wall),
    ok: wall <= TARGET_MS && composite / wall >= TARGET_RATIO,
    summary: `${result.summary}; composite action's npm ci + build before its first plan: ${round1(composite / 1000)} s (${round1(composite / wall)}x)`,
  };
}

export const actionStartScenario: Scenario = {
  name: "action-start",
  description: "the bundled action from process start to the pull-request comment posted, beside the composite action's npm ci + build",
  run: ({ quick }) => measureActionStart(quick ? ACTION_START_SIZES.quick : ACTION_START_SIZES.full),
};
