/**
 * The published CLI: `npm pack` of this repository into an empty folder, installed there with
 * `npm install ./edgeplan-X.tgz`, runs `edgeplan --version`, `validate`, `plan --local` and `demo` (better-sqlite3's
 * binding is the one `npm ci` of the repository built: see install.ts).
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/server.js";
import { cleanEnv, installPackage, VERSION } from "./install.js";

const run = promisify(execFile);

const EDGE = "edghts_2rFMA4dqHTlJ0hDOzrN9tjBQy96";
const ROUTE = "edghtsrt_2rFMEf2bt8lLdREcAkAK4ivFIeG";
const STABLE = "bkdtg_2rFMNyLVAcCk79odY7RXLmHO5iR";
const CANARY = "bkdtg_2rFMShI8Ur050sW2QI0yg26sfMq";

/** Another Node release compiles better-sqlite3's binding from its headers: a minute or more of both cores. */
const INSTALL_TIMEOUT = process.env.EDGEPLAN_TEST_NODE_MAJOR ? 900_000 : 300_000;

describe("the npm package", () => {
  it("holds the CLI's bundle, the schemas and the examples: no benchmark, no compiled sources, no source map", async () => {
    const packed = await run("npm", ["pack", "--dry-run", "--json", "--loglevel=error"], { cwd: REPO_ROOT, env: cleanEnv(), timeout: 120_000 });
    const [{ files, unpackedSize }] = JSON.parse(packed.stdout) as [{ files: { path: string }[]; unpackedSize: number }];
    const topOf = (path: string): string => (path.startsWith("dist/") ? path.split("/", 2).join("/") : path.split("/")[0]!);
    const tops = new Set(files.map((f) => topOf(f.path)));
    expect([...tops].sort()).toEqual(["README.md", "dist/cli", "examples", "package.json", "schemas"]);
    expect(files.filter((f) => f.path.endsWith(".map"))).toEqual([]);
    // The size a user's install adds for edgeplan itself (its dependencies apart), reported with every run.
    process.stdout.write(`npm package: ${files.length} files, ${(unpackedSize / 1e6).toFixed(1)} MB unpacked\n`);
    expect(unpackedSize).toBeLessThan(8e6);
  }, 120_000);

  it("depends on exactly the packages the CLI's bundle leaves out", async () => {
    const { CLI_EXTERNAL } = (await import(join(REPO_ROOT, "scripts", "bundle.mjs"))) as { CLI_EXTERNAL: string[] };
    const { dependencies } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { dependencies: Record<string, string> };
    expect(Object.keys(dependencies).sort()).toEqual([...CLI_EXTERNAL].sort());
  });

  it(
    `installs into an empty folder on Node ${process.env.EDGEPLAN_TEST_NODE_MAJOR || process.versions.node} with no warning, and runs --version, validate, plan --local and demo`,
    async () => {
      const { app, bin: edgeplan, env, warnings, installedBytes } = await installPackage();
      expect(warnings).toEqual([]);
      process.stdout.write(`installed: ${(installedBytes / 1e6).toFixed(1)} MB in node_modules (edgeplan and its dependencies)\n`);
      expect(installedBytes).toBeLessThan(40e6);
      mkdirSync(join(app, "manifests"));

      // The install above ran no install script: none of the package's own is lost by that.
      const installed = JSON.parse(readFileSync(join(app, "node_modules", "edgeplan", "package.json"), "utf8")) as { scripts?: Record<string, string> };
      expect(Object.keys(installed.scripts ?? {}).filter((name) => /^(pre|post)?install$/.test(name))).toEqual([]);

      const shown = await run(edgeplan, ["--version"], { cwd: app, env });
      expect(shown.stdout).toBe(`${VERSION}\n`);

      writeFileSync(join(app, "manifests", "checkout.yaml"), `kind: WeightedBackend\nname: checkout\nbackends:\n  ${STABLE}: 9000\n  ${CANARY}: 1000\n`);
      writeFileSync(
        join(app, "fixtures.yaml"),
        `edges:\n  - id: ${EDGE}\n    hostports: ["api.example.com:443"]\n    routes:\n      - {id: ${ROUTE}, match: /v1, match_type: path_prefix}\n` +
          `backends:\n  - {id: ${STABLE}, type: tunnel_group}\n  - {id: ${CANARY}, type: tunnel_group}\n`,
      );
      const validated = await run(edgeplan, ["validate", "manifests"], { cwd: app, env });
      expect(`${validated.stdout}${validated.stderr}`).toBe("1 file, 1 object: 0 errors, 0 warnings\n");

      const planned = await run(edgeplan, ["plan", "manifests", "--local", "--fixtures", "fixtures.yaml", "--no-color"], { cwd: app, env });
      expect(planned.stdout).toContain("+ weighted_backend.checkout");
      expect(planned.stdout).toContain("Plan: 1 to create, 0 to update, 0 to delete.");
      expect(planned.stderr).toContain("local: embedded server with its state in .edgeplan/local.db");

      // The demo plans and applies the examples shipped in the package, then plans again.
      const demo = await run(edgeplan, ["demo"], { cwd: app, env });
      expect(demo.stderr).not.toMatch(/warning|deprecat/i);
      expect(demo.stderr).toContain("== 1/3 plan: what applying node_modules/edgeplan/examples to an empty local server would do");
      expect(demo.stderr.trimEnd().split("\n").pop()).toBe(
        "Demo done: the second plan has nothing to do. Next, on a copy of the examples in your own folder: " +
          "cp -r node_modules/edgeplan/examples edgeplan-examples && edgeplan plan --local edgeplan-examples",
      );
    },
    INSTALL_TIMEOUT,
  );
});
