/**
 * A minimal benchmark runner: `node dist/bench/run.js [--quick] [name...]` runs the registered scenarios one after
 * another, prints a table and writes bench/results.json as `{"results": [{name, wall_ms, ...}]}`. `--check` exits 1
 * when a scenario misses its target. Speed targets live here, never in unit tests.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { planReadScenario } from "./plan-read.js";
import { validateScenario } from "./validate.js";
import type { Measurement, Scenario } from "./measure.js";

/** Every scenario, in the order they run. Add a scenario by importing it and appending it here. */
export const SCENARIOS: Scenario[] = [planReadScenario, validateScenario];

function table(rows: Array<Record<string, unknown>>): string {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const cells = [columns, ...rows.map((r) => columns.map((c) => (r[c] === undefined ? "" : String(r[c]))))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? "").length)));
  return cells.map((row) => row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join("  ").trimEnd()).join("\n");
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
    const measured: Measurement = await scenario.run(options);
    const ok = scenario.target_ms === undefined || measured.wall_ms <= scenario.target_ms;
    if (!ok) missed++;
    results.push({
      name: scenario.name,
      ...measured,
      wall_ms: Math.round(measured.wall_ms * 10) / 10,
      ...(scenario.target_ms !== undefined ? { target_ms: scenario.target_ms, ok } : {}),
    });
  }
  process.stdout.write(`${table(results)}\n`);
  const out = fileURLToPath(new URL("../../bench/results.json", import.meta.url));
  writeFileSync(out, `${JSON.stringify({ results }, null, 2)}\n`);
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
