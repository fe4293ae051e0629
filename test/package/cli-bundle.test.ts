/**
 * The CLI's bundle (`dist/cli/`, made by `npm run build`), which the package's `bin` runs: one entry, and the
 * server's native and order-sensitive packages stay packages.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { CLI } from "../helpers/cli-path.js";

const dir = dirname(CLI);
const files = (): string[] => readdirSync(dir).filter((f) => f.endsWith(".js"));
const text = (f: string): string => readFileSync(join(dir, f), "utf8");

describe("the CLI's bundle", () => {
  it("is what the bin runs, its one entry: no worker thread is started from a file beside it", () => {
    expect(CLI.endsWith(join("dist", "cli", "edgeplan.js"))).toBe(true);
    expect(files().filter((f) => !/^[a-z-]+-[A-Z0-9]{8}\.js$/.test(f))).toEqual(["edgeplan.js"]);
    expect(files().filter((f) => text(f).includes("new Worker("))).toEqual([]);
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
