/**
 * The benchmark runner: `node dist/bench/run.js [--quick] [--check] [name...]` (`npm run bench -- ...`) runs the
 * registered scenarios one after another against the real CLI and server on loopback, prints a table and writes
 * bench/results.json as `{"results": [{name, wall_ms, ...}]}`. `--quick` runs the smaller sizes (under a minute);
 * `--check` exits 1 when a scenario misses its target or cannot run. Speed targets live here, never in unit tests.
 */
import { writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { actionStartScenario } from "./action-start.js";
import { agentScenario } from "./agent.js";
import { applyWriteScenario } from "./apply-write.js";
import { coldStartScenario } from "./cold-start.js";
import { diffCpuScenario } from "./diff-cpu.js";
import { planReadScenario } from "./plan-read.js";
import { policyCpuScenario } from "./policy-cpu.js";
import { rateLimitedScenario } from "./rate-limited.js";
import { serverScenario } from "./server-load.js";
import { serverPgScenario } from "./server-pg.js";
import { validateScenario } from "./validate.js";
import { validateLargeScenario } from "./validate-large.js";
import type { Measurement, Scenario } from "./measure.js";

/** Every scenario, in the order they run. Add a scenario by importing it and appending it here. */
export const SCENARIOS: Scenario[] = [
  planReadScenario,
  applyWriteScenario,
  rateLimitedScenario,
  diffCpuScenario,
  policyCpuScenario,
  validateScenario,
  validateLargeScenario,
  coldStartScenario,
  actionStartScenario,
  serverScenario,
  serverPgScenario,
  agentScenario,
];

/** The columns the table shows, in order, when any result has them; everything else stays in results.json. */
const COLUMNS = ["name", "requests", "minimal_requests", "wall_ms", "bound_ms", "wall_vs_bound", "command_ms", "command_vs_bound", "status_429", "rss_mb", "ok"] as const;

/** One short line of what a result says beyond the columns: its target, and the reference strategy's ratios. */
function notes(r: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof r.error === "string") parts.push(`FAILED: ${r.error.split("\n")[0]?.slice(0, 160) ?? ""}`);
  if (typeof r.summary === "string") parts.push(r.summary);
  if (typeof r.reference_requests_ratio === "number" && typeof r.reference_wall_ratio === "number") {
    parts.push(`reference: ${r.reference_requests_ratio}x requests, ${r.reference_wall_ratio}x wall`);
  }
  if (typeof r.targeted_requests_ratio === "number") parts.push(`one edge targeted: ${r.targeted_requests_ratio}x fewer requests`);
  if (typeof r.target === "string") parts.push(`target: ${r.target}`);
  else if (typeof r.target_ms === "number") parts.push(`target: wall <= ${r.target_ms} ms`);
  return parts.join("; ");
}

function table(rows: Array<Record<string, unknown>>): string {
  const columns: string[] = [...COLUMNS.filter((c) => rows.some((r) => r[c] !== undefined)), "notes"];
  const cell = (r: Record<string, unknown>, c: string): string => (c === "notes" ? notes(r) : r[c] === undefined ? "" : String(r[c]));
  const cells = [columns, ...rows.map((r) => columns.map((c) => cell(r, c)))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? "").length)));
  return cells
    .map((row) =>
      row
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

async function main(argv: string[]): Promise<number> {
  const options = { quick: argv.includes("--quick") };
  const check = argv.includes("--check");
  const names = argv.filter((a) => !a.startsWith("--"));
  const unknown = names.filter((n) => !SCENARIOS.some((s) => s.name === n));
  if (unknown.length > 0) {
    process.stderr.write(`bench: unknown scenario ${unknown.join(", ")}; known: ${SCENARIOS.map((s) => s.name).join(", ")}\n`);
    return 1;
  }
  const results: Array<Record<string, unknown>> = [];
  let missed = 0;
  for (const scenario of SCENARIOS.filter((s) => names.length === 0 || names.includes(s.name))) {
    process.stderr.write(`bench: ${scenario.name}: ${scenario.description}\n`);
    const started = performance.now();
    let measured: Measurement;
    try {
      measured = await scenario.run(options);
    } catch (err) {
      // One scenario that cannot run does not cost the others their figures; it counts as a missed target.
      process.stderr.write(`bench: ${scenario.name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      missed++;
      results.push({ name: scenario.name, ok: false, error: err instanceof Error ? err.message : String(err) });
      continue;
    }
    process.stderr.write(`bench: ${scenario.name}: done in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
    // A scenario may judge its own targets (requests, bounds, rates) besides the wall time of target_ms; one that
    // judges nothing is a miss, so that --check can always fail.
    const judged = scenario.target_ms !== undefined || measured.ok !== undefined;
    const ok = judged && (scenario.target_ms === undefined || measured.wall_ms <= scenario.target_ms) && measured.ok !== false;
    if (!ok) missed++;
    results.push({
      name: scenario.name,
      ...measured,
      wall_ms: Math.round(measured.wall_ms * 10) / 10,
      ...(scenario.target_ms !== undefined ? { target_ms: scenario.target_ms } : {}),
      ok,
    });
  }
  process.stdout.write(`${table(results)}\n`);
  const out = fileURLToPath(new URL("../../bench/results.json", import.meta.url));
  const mode = options.quick ? "quick" : "full";
  writeFileSync(out, `${JSON.stringify({ mode, node: process.version, cpus: availableParallelism(), results }, null, 2)}\n`);
  process.stderr.write(`bench: wrote ${out}\n`);
  return check && missed > 0 ? 1 : 0;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
