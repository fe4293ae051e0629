/**
 * The CLI's bundle (`dist/cli/`, made by `npm run build`), which the package's `bin` runs: the worker thread of a
 * large loading starts from it, and the server's native and order-sensitive packages stay packages.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Worker } from "node:worker_threads";
import { describe, expect, it } from "vitest";
import { loadDesired, type LoadResult } from "../../src/manifest/load.js";
import { CLI } from "../helpers/cli-path.js";

const dir = dirname(CLI);
const files = (): string[] => readdirSync(dir).filter((f) => f.endsWith(".js"));
const text = (f: string): string => readFileSync(join(dir, f), "utf8");

describe("the CLI's bundle", () => {
  it("is what the bin runs, with the loading's worker thread beside the module that starts it", () => {
    expect(CLI.endsWith(join("dist", "cli", "edgeplan.js"))).toBe(true);
    expect(files()).toContain("load-worker.js");
    const starters = files().filter((f) => text(f).includes('new URL("./load-worker.js", import.meta.url)'));
    expect(starters.length).toBe(1);
  });

  it("loads manifests in its worker entry as the sources do on the main thread, diagnostics and positions included", async () => {
    const root = mkdtempSync(join(tmpdir(), "edgeplan-worker-"));
    const worker = (): Worker => new Worker(join(dir, "load-worker.js"), { workerData: { edgeplanLoad: { paths: [root], options } } });
    const options = { cwd: root, env: {}, now: new Date("2026-01-01T00:00:00Z") };
    try {
      writeFileSync(
        join(root, "a.yaml"),
        "kind: WeightedBackend\nname: checkout\nbackends:\n  bkdhr_2rFLdTuZ0lNuhVDtUP0QgOFvUSn: 3\n---\nkind: WeightedBackend\nname: checkout\nbackends: {}\nweight: 2\n",
      );
      const thread = worker();
      const result = await new Promise<LoadResult>((resolve, reject) => {
        thread.once("message", resolve);
        thread.once("error", reject);
      });
      await thread.terminate();
      expect(result.diagnostics.map((d) => `${d.pos.file}:${d.pos.line}:${d.pos.col}: ${d.message}`)).toEqual([
        "a.yaml:7:7: name checkout is already used by the WeightedBackend at a.yaml:2:7; names must be unique across all manifests",
        "a.yaml:9:1: unknown field weight; remove it (the fields here are apiVersion, kind, name, description, metadata, backends, id, protect, ignore_changes, rollout)",
      ]);
      expect(result).toEqual(await loadDesired([root], options));
    } finally {
      rmSync(root, { recursive: true, force: true });
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
