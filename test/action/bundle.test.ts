/**
 * The committed bundle (action.yml `runs.main`) is what `npm run bundle` makes of the sources, byte for byte, and
 * holds nothing of `serve` or `--local`: no better-sqlite3, no embedded server.
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bundleAction, BUNDLE, CLI_DIR, ROOT } from "../../scripts/bundle.mjs";
import { actionYml } from "./run-cli.js";

const committed = (): string => readFileSync(join(ROOT, BUNDLE), "utf8");

describe("the action bundle", () => {
  it("is the file action.yml runs", () => {
    expect(actionYml().runs.main).toBe(BUNDLE);
  });

  it("is what the sources give (else: run `npm run bundle` and commit bundle/index.mjs)", async () => {
    const out = join(mkdtempSync(join(tmpdir(), "edgeplan-bundle-")), "index.mjs");
    await bundleAction(out);
    const fresh = readFileSync(out, "utf8");
    expect(fresh.length).toBeGreaterThan(0);
    expect(fresh === committed(), `${BUNDLE} differs from what the sources give: run \`npm run bundle\` and commit ${BUNDLE}`).toBe(true);
  });

  it("leaves out serve and --local: no native module, no embedded server", () => {
    const text = committed();
    expect(text).not.toMatch(/better-sqlite3|better_sqlite3|\.node["']|process\.dlopen/);
    expect(text).not.toContain("src/server/");
    expect(text).not.toContain("reflect-metadata");
    expect(text).toContain('throw new Error("--local and serve are not part of the GitHub Action; run them with the edgeplan CLI (npm install edgeplan)")');
    // Nothing in it changes from one build to the next.
    expect(text).not.toMatch(/\b20\d\d-\d\d-\d\dT\d\d:/);
  });

  it("and the CLI's read YAML with the yaml package's platform-neutral build, which reads no process.env per token", () => {
    const cli = readdirSync(join(ROOT, CLI_DIR)).filter((f) => f.endsWith(".js"));
    const texts = [committed(), ...cli.map((f) => readFileSync(join(ROOT, CLI_DIR, f), "utf8"))];
    // The yaml parser is in both (its message for a bad token), and the Node build's per-token debug hooks in neither.
    expect(texts.filter((t) => t.includes("Not a YAML token")).length).toBeGreaterThanOrEqual(2);
    for (const text of texts) expect(text).not.toMatch(/LOG_TOKENS|LOG_STREAM/);
  });
});
