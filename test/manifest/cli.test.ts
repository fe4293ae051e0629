/**
 * `edgeplan validate` as a user runs it: the built CLI, its output streams and its exit code.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { CLI as cli } from "../helpers/cli-path.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const tmp = mkdtempSync(path.join(tmpdir(), "edgeplan-cli-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs the CLI with no EDGEPLAN_* variables of the test runner. */
function run(args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EDGEPLAN_")));
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { cwd, env: { ...clean, ...env } }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

describe("edgeplan validate", () => {
  it("accepts the examples: exit 0, nothing on stderr", async () => {
    const { code, stdout, stderr } = await run(["validate", "examples"], repo);
    expect(stderr).toBe("");
    expect(stdout).toMatch(/^6 files, 11 objects: 0 errors, 0 warnings( \(\d+ YAML files? without a kind skipped: not (a manifest|manifests)\))?\n$/);
    expect(code).toBe(0);
  });

  it("prints every diagnostic to stderr and the summary to stdout, and exits 1 on errors", async () => {
    const dir = path.join(repo, "test/manifest/corpus/059-many-errors-one-file");
    const expected = readFileSync(path.join(dir, "expected.txt"), "utf8").split("\n");
    const { code, stdout, stderr } = await run(["validate"], dir);
    // expected.txt: the diagnostics, the summary, "exit N", and a final empty line.
    expect(stderr).toBe(`${expected.slice(0, -3).join("\n")}\n`);
    expect(stdout).toBe(`${expected.at(-3)}\n`);
    expect(code).toBe(1);
  });

  it("exits 0 with warnings only, and reads EDGEPLAN_VAR_* from its environment", async () => {
    const dir = mkdtempSync(path.join(tmp, "warn-"));
    const check = "rollout: {max_step: 50, interval: 1m, check: {url: 'https://status.example.com/?t=${EDGEPLAN_VAR_WHY}'}}";
    writeFileSync(path.join(dir, "empty.yaml"), `kind: WeightedBackend\nname: empty\nbackends: {}\n${check}\n`);
    const { code, stdout, stderr } = await run(["validate", "empty.yaml"], dir, { EDGEPLAN_VAR_WHY: "drained" });
    expect(stderr).toBe("empty.yaml:3:1: warning: weighted backend empty receives no traffic: it has no children; add children to backends\n");
    expect(stdout).toBe("1 file, 1 object: 0 errors, 1 warning\n");
    expect(code).toBe(0);
    // A plan sends no check: without the variable, a warning that apply needs it.
    const unset = await run(["validate", "empty.yaml"], dir);
    expect(unset.stderr).toContain(
      "empty.yaml:4:52: warning: ${EDGEPLAN_VAR_WHY}: EDGEPLAN_VAR_WHY is not set; a plan does not need it, but apply sends it in rollout.check.url: set it where apply runs\n",
    );
    expect(unset.code).toBe(0);
  });

  it("names skipped files with --verbose", async () => {
    const { code, stderr } = await run(["validate", "--verbose", "examples"], repo);
    expect(stderr).toContain("note: skipped examples/fixtures.yaml: no document in it has a kind, so it is not a manifest\n");
    expect(code).toBe(0);
  });

  it("exits 1 for a path that does not exist", async () => {
    const { code, stderr } = await run(["validate", "no-such-folder"], tmp);
    expect(stderr).toBe("no-such-folder:1:1: no such file or folder; check the path given to edgeplan\n");
    expect(code).toBe(1);
  });
});
