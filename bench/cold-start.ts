/**
 * Benchmark `cold-start`: a fresh process of the built CLI, as a shell or a CI step starts it: `edgeplan --version`
 * and `edgeplan validate examples`, each run several times, the median reported (with node's own start, `node -e
 * ""`, beside them for scale). Target: `--version` under 150 ms.
 */
import { spawn } from "node:child_process";
import { builtCli, median, percentile, repoRoot, round1, type Measurement, type Scenario } from "./measure.js";

export interface ColdStartSize {
  runs: number;
}

export const COLD_START_SIZES: { full: ColdStartSize; quick: ColdStartSize } = { full: { runs: 15 }, quick: { runs: 5 } };

const TARGET_MS = 150;

/** Wall time of one process from spawn to exit; rejects unless it exits 0. */
function timeProcess(args: string[], cwd: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const proc = spawn(process.execPath, args, { cwd, stdio: ["ignore", "ignore", "pipe"], env: { PATH: process.env.PATH ?? "", NO_COLOR: "1" } });
    let err = "";
    proc.stderr.setEncoding("utf8").on("data", (c: string) => (err += c));
    const timer = setTimeout(() => proc.kill("SIGKILL"), 60_000);
    proc.once("close", (code) => {
      clearTimeout(timer);
      const ms = performance.now() - started;
      if (code !== 0) reject(new Error(`node ${args.join(" ")} exited ${code}: ${err.slice(-500)}`));
      else resolve(ms);
    });
  });
}

async function timeRuns(args: string[], cwd: string, runs: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) times.push(await timeProcess(args, cwd));
  return times;
}

/** Measures the cold starts. */
export async function measureColdStart(size: ColdStartSize): Promise<Measurement> {
  const root = repoRoot();
  const cli = builtCli();
  const node = await timeRuns(["-e", ""], root, size.runs);
  const version = await timeRuns([cli, "--version"], root, size.runs);
  const validate = await timeRuns([cli, "validate", "examples"], root, size.runs);
  const wall = median(version);
  return {
    wall_ms: round1(wall),
    version_p90_ms: round1(percentile(version, 90)),
    validate_examples_ms: round1(median(validate)),
    validate_examples_p90_ms: round1(percentile(validate, 90)),
    node_ms: round1(median(node)),
    runs: size.runs,
    ok: wall < TARGET_MS,
    target: `edgeplan --version under ${TARGET_MS} ms (median)`,
    summary: `--version ${round1(wall)} ms, validate examples ${round1(median(validate))} ms, node alone ${round1(median(node))} ms`,
  };
}

export const coldStartScenario: Scenario = {
  name: "cold-start",
  description: "edgeplan --version and edgeplan validate examples in a fresh process (median of several)",
  run: ({ quick }) => measureColdStart(quick ? COLD_START_SIZES.quick : COLD_START_SIZES.full),
};
