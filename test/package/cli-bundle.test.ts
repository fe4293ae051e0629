/**
 * The CLI's bundle (`dist/cli/`, made by `npm run build`), which the package's `bin` runs: the worker thread of a
 * large loading starts from it, and the server's native and order-sensitive packages stay packages.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { fastChecks } from "../../src/manifest/check-text.js";
import type { Answer, Ask } from "../../src/manifest/fast-check-worker.js";
import { WORKER_NICE } from "../../src/manifest/fast-worker.js";
import { runSteps } from "../../src/model/steps.js";
import { CLI } from "../helpers/cli-path.js";

const dir = dirname(CLI);
const files = (): string[] => readdirSync(dir).filter((f) => f.endsWith(".js"));
const text = (f: string): string => readFileSync(join(dir, f), "utf8");

describe("the CLI's bundle", () => {
  it("is what the bin runs, with the worker thread's entry beside the module that starts it", () => {
    expect(CLI.endsWith(join("dist", "cli", "edgeplan.js"))).toBe(true);
    expect(files()).toContain("fast-worker.js");
    const starters = files().filter((f) => text(f).includes('new URL("./fast-worker.js", import.meta.url)'));
    expect(starters.length).toBe(1);
  });

  it("runs the fast checks in its worker entry as the sources do on the main thread", async () => {
    const manifest = "kind: WeightedBackend\nname: checkout\nbackends:\n  bkdhr_2rFLdTuZ0lNuhVDtUP0QgOFvUSn: 3\n";
    const worker = new Worker(join(dir, "fast-worker.js"));
    try {
      const answer = await new Promise<Answer>((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
        worker.postMessage({ index: 7, text: manifest, display: "a.yaml" } satisfies Ask);
      });
      expect(answer.index).toBe(7);
      expect(answer.checks).toEqual(runSteps(fastChecks(manifest, "a.yaml")));
      if (process.platform === "linux") {
        // The worker thread gave way (its nice value), this thread did not.
        const nice = (stat: string): number => Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
        const threads = readdirSync("/proc/self/task").map((t) => nice(readFileSync(`/proc/self/task/${t}/stat`, "utf8")));
        expect(threads).toContain(WORKER_NICE);
        expect(nice(readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8"))).toBe(0);
      }
    } finally {
      await worker.terminate();
    }
  });

  it("imports better-sqlite3, pg, @peculiar/x509 and reflect-metadata as packages instead of holding them", () => {
    const all = files().map(text).join("\n");
    for (const name of ["better-sqlite3", "pg", "@peculiar/x509", "reflect-metadata"]) {
      expect(all, name).toMatch(new RegExp(`import\\(\\s*"${name.replace("/", "\\/")}"\\s*\\)|from "${name.replace("/", "\\/")}"`));
    }
    // better-sqlite3's own code (its native binding's loader) is not in it.
    expect(all).not.toContain("better_sqlite3.node");
  });
});
