/**
 * What benchmark scenarios share: their shape and a few measuring helpers. Kept apart from run.ts so that a
 * scenario module can be imported on its own (run.ts imports every scenario).
 */
import { readFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface BenchOptions {
  /** Fewer repetitions, for a quick look (CI, local runs). */
  quick: boolean;
}

/** What a scenario measured: `wall_ms` plus any numbers or words worth keeping (rss_mb, files, ...). */
export type Measurement = { wall_ms: number } & Record<string, number | string | boolean>;

export interface Scenario {
  name: string;
  /** One line: what is measured. */
  description: string;
  /** The wall time the scenario should stay under. */
  target_ms?: number;
  run(options: BenchOptions): Promise<Measurement>;
}

/** Median of a few timings: steadier than one run, cheaper than many. */
/** Where scenarios say what they are doing: stderr, so that the table on stdout stays clean. */
export function progress(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** Resident set size of this process in MiB, rounded to 0.1. */
export function rssMb(): number {
  return Math.round((process.memoryUsage().rss / (1024 * 1024)) * 10) / 10;
}

/** `p`-th percentile (0..100) of the values, nearest rank; 0 for none. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? 0;
}

/** Rounds to one decimal (ms and MB in results). */
export function round1(n: number): number {
  return Math.round(n * 10) / 10;
}

/** The repository root, whether this runs as TypeScript (bench/) or built (dist/bench/). */
export function repoRoot(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  return basename(here) === "bench" && basename(dirname(here)) === "dist" ? resolve(here, "..", "..") : resolve(here, "..");
}

/** The built CLI every scenario spawns: the file the package's `bin` names, what a user runs. */
export function builtCli(): string {
  const pkg = JSON.parse(readFileSync(join(repoRoot(), "package.json"), "utf8")) as { bin: { edgeplan: string } };
  return join(repoRoot(), pkg.bin.edgeplan);
}

/**
 * The verdict of a scenario whose targets are the fewest requests, no 429 and a wall time within `slack` of its bound.
 * A bound of 0 judges nothing, so it is a miss: a scenario must be sized so that its requests take time.
 */
export function requestTargets(
  m: { requests: number; minimal_requests: number; wall_ms: number; bound_ms: number; status_429: number },
  slack = 1.2,
): {
  wall_vs_bound: number;
  ok: boolean;
  target: string;
} {
  const wallVsBound = m.bound_ms > 0 ? Math.round((m.wall_ms / m.bound_ms) * 100) / 100 : 0;
  return {
    wall_vs_bound: wallVsBound,
    ok: m.requests === m.minimal_requests && m.status_429 === 0 && m.bound_ms > 0 && m.wall_ms <= slack * m.bound_ms,
    target: `requests = minimal, no 429, wall <= ${slack}x bound`,
  };
}
