/**
 * Benchmark `validate-large`: `loadDesired` over the plan-read fleet's manifests (5,000 weighted backends and 1,000
 * routes with both modules: 101 files, about 1.5 MB), side by side with what the `yaml` package alone takes on the
 * same files (read, `parseAllDocuments`, `toJS`). The ratio says what edgeplan's checks, positions and normalisation
 * cost against parsing alone. Runs alternate so that both meet the same machine.
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { parseAllDocuments } from "yaml";
import { loadDesired } from "../src/manifest/load.js";
import { makeWorkDir, seedFleet } from "./fleet.js";
import { median, progress, round1, rssMb, type Scenario } from "./measure.js";
import { PLAN_READ_SIZES } from "./plan-read.js";

/** Reads and parses every YAML file of `dir` with `yaml` alone; returns the number of documents. */
function parseAlone(dir: string): number {
  let documents = 0;
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith(".yaml"))
    .sort()) {
    for (const doc of parseAllDocuments(readFileSync(join(dir, name), "utf8"))) {
      doc.toJS();
      documents++;
    }
  }
  return documents;
}

/** How many times the CPU time of `yaml` alone loading may take: the checks, positions and normalisation on top. */
export const VALIDATE_LARGE_SLACK = 1.5;

export const validateLargeScenario: Scenario = {
  name: "validate-large",
  description: "loadDesired over the plan-read fleet's manifests (6,000 objects), against yaml.parseAllDocuments + toJS alone",
  async run({ quick }) {
    const dir = makeWorkDir();
    try {
      const size = quick ? PLAN_READ_SIZES.quick : PLAN_READ_SIZES.full;
      const fleet = await seedFleet(join(dir, "live.db"), size.fleet, dir);
      progress(`validate-large: ${fleet.files} files`);
      const load: number[] = [];
      const alone: number[] = [];
      // CPU time (user and system, this process) beside wall time: on a shared machine it varies far less.
      const loadCpu: number[] = [];
      const aloneCpu: number[] = [];
      const cpuMs = (since: NodeJS.CpuUsage): number => {
        const used = process.cpuUsage(since);
        return (used.user + used.system) / 1000;
      };
      let objects = 0;
      let documents = 0;
      const runLoad = async (): Promise<void> => {
        const start = performance.now();
        const cpu = process.cpuUsage();
        const result = await loadDesired([fleet.manifests], { cwd: dir, env: {} });
        load.push(performance.now() - start);
        loadCpu.push(cpuMs(cpu));
        if (result.diagnostics.some((d) => d.severity === "error")) throw new Error("the fleet's manifests should be valid");
        objects = result.objects;
      };
      const runAlone = (): void => {
        const start = performance.now();
        const cpu = process.cpuUsage();
        documents = parseAlone(fleet.manifests);
        alone.push(performance.now() - start);
        aloneCpu.push(cpuMs(cpu));
      };
      // Each goes first in half of the rounds, so that neither pays the other's garbage more often.
      for (let i = 0; i < (quick ? 3 : 5); i++) {
        if (i % 2 === 0) {
          await runLoad();
          runAlone();
        } else {
          runAlone();
          await runLoad();
        }
      }
      if (documents !== objects) throw new Error(`yaml alone read ${documents} documents, loadDesired ${objects}`);
      // The first run of each compiles the code: it is left out of the medians.
      const wall = median(load.slice(1));
      const parse = median(alone.slice(1));
      const cpu = median(loadCpu.slice(1));
      const parseCpu = median(aloneCpu.slice(1));
      return {
        wall_ms: round1(wall),
        yaml_alone_ms: round1(parse),
        vs_yaml_alone: Math.round((wall / parse) * 100) / 100,
        cpu_ms: round1(cpu),
        yaml_alone_cpu_ms: round1(parseCpu),
        cpu_vs_yaml_alone: Math.round((cpu / parseCpu) * 100) / 100,
        ok: cpu <= VALIDATE_LARGE_SLACK * parseCpu,
        target: `CPU time <= ${VALIDATE_LARGE_SLACK}x yaml.parseAllDocuments + toJS alone`,
        files: fleet.files,
        objects,
        runs: load.length - 1,
        rss_mb: rssMb(),
        summary:
          `${Math.round((wall / parse) * 100) / 100}x the wall time of yaml.parseAllDocuments + toJS alone (${round1(parse)} ms), ` +
          `${Math.round((cpu / parseCpu) * 100) / 100}x its CPU time (${round1(cpu)} / ${round1(parseCpu)} ms)`,
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};
