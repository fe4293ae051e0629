/**
 * What a pull request can make edgeplan read and print, as a user runs the built CLI: the project file names
 * manifest paths inside its own folder only, and no diagnostic quotes the text of a file that is not a manifest (a
 * key file, a git config holding a credential), in any format.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI as cli } from "../helpers/cli-path.js";
import { loadDesired } from "../../src/manifest/load.js";
import { projectPathProblem, withoutQuotedSource } from "../../src/model/confine.js";
import { formatDiagnostic } from "../../src/model/errors.js";

const tmp = mkdtempSync(path.join(tmpdir(), "edgeplan-confine-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const CANARY = "CANARY-7f3a9c-secret";
/** What actions/checkout leaves in .git/config: the token, base64, in a header. */
const GIT_CONFIG = `[core]\n\tbare = false\n[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic ${Buffer.from(`x-access-token:${CANARY}`).toString("base64")}\n`;
const BASE64_CANARY = Buffer.from(`x-access-token:${CANARY}`).toString("base64");

/** A project folder with a key file beside it (outside it) and a .git/config holding the canary. */
function project(projectFile: string): { dir: string; key: string } {
  const root = mkdtempSync(path.join(tmp, "w-"));
  const dir = path.join(root, "repo");
  mkdirSync(path.join(dir, ".git"), { recursive: true });
  mkdirSync(path.join(root, "secrets"));
  const key = path.join(root, "secrets", "key");
  writeFileSync(key, `${CANARY}\n`);
  writeFileSync(path.join(dir, ".git", "config"), GIT_CONFIG);
  writeFileSync(path.join(dir, "edgeplan.yaml"), projectFile);
  return { dir, key };
}

function run(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EDGEPLAN_")));
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { cwd, env: clean }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

const OUT = "name a file or folder inside the project's folder, or give other paths on the command line";
const GIT = "which holds no manifests; name the folders of the manifests";

describe("manifest paths of the project file", () => {
  const cases: Array<[string, (key: string) => string, string]> = [
    ["an absolute path", (key) => `stack: prod\npaths:\n  - ${key}\n`, `edgeplan.yaml:3:5: paths: an absolute path is not read from the project file; ${OUT}`],
    ["a path with ..", () => "paths: ../secrets/key\n", `edgeplan.yaml:1:8: paths: this path leads outside the project's folder (the folder of the project file); ${OUT}`],
    ["a path into .git/", () => "paths: [manifests, .git/config]\n", `edgeplan.yaml:1:20: paths: this path is inside .git/, ${GIT}`],
    ["a link leading out", () => "paths: [link]\n", `edgeplan.yaml:1:9: paths: a symbolic link on this path leads outside the project's folder; ${OUT}`],
    ["a link into .git/", () => "paths: [config.yaml]\n", `edgeplan.yaml:1:9: paths: a symbolic link on this path leads into .git/, ${GIT}`],
  ];
  it.each(cases)("refuses %s at its line: exit 1, nothing read, in validate and plan", async (_name, text, message) => {
    const { dir, key } = project("");
    writeFileSync(path.join(dir, "edgeplan.yaml"), text(key));
    mkdirSync(path.join(dir, "manifests"));
    symlinkSync(path.dirname(key), path.join(dir, "link"));
    symlinkSync(path.join(dir, ".git", "config"), path.join(dir, "config.yaml"));
    const validate = await run(["validate"], dir);
    expect(validate).toEqual({ code: 1, stdout: "0 files, 0 objects: 1 error, 0 warnings\n", stderr: `${message}\n` });
    const plan = await run(["plan", "--api-url", "http://127.0.0.1:9", "--api-key-file", key], dir);
    expect(plan).toEqual({ code: 1, stdout: "", stderr: `${message}\nedgeplan: 1 error in edgeplan.yaml; nothing was sent to the API\n` });
  });

  it("reads a folder inside the project's folder, and a link that stays inside", async () => {
    const { dir } = project("paths: [inner]\n");
    mkdirSync(path.join(dir, "manifests"));
    writeFileSync(path.join(dir, "manifests", "a.yaml"), "kind: WeightedBackend\nname: a\nbackends:\n  bkdtg_2rFMNyLVAcCk79odY7RXLmHO5iR: 100\n");
    symlinkSync(path.join(dir, "manifests"), path.join(dir, "inner"));
    expect(await run(["validate"], dir)).toEqual({ code: 0, stdout: "1 file, 1 object: 0 errors, 0 warnings\n", stderr: "" });
  });

  it("judges paths with the pure rule", () => {
    expect(projectPathProblem("manifests/../other", "other")).toBeUndefined();
    expect(projectPathProblem("C:\\keys\\key", undefined)).toContain("an absolute path");
    expect(projectPathProblem("a/../../b", undefined)).toContain("leads outside");
    expect(projectPathProblem("sub/.GIT/config", undefined)).toContain("inside .git/");
    expect(projectPathProblem("missing", undefined)).toBeUndefined();
  });
});

describe("a file that is not a manifest, named on the command line", () => {
  it.each(["text", "json", "markdown"])("is not quoted by plan --format %s, nor by validate", async (format) => {
    const { dir, key } = project("stack: prod\n");
    const plan = await run(["plan", "--format", format, "--api-url", "http://127.0.0.1:9", "--api-key-file", key, key, ".git/config"], dir);
    const validate = await run(["validate", key, ".git/config"], dir);
    for (const r of [plan, validate]) {
      expect(r.code).toBe(1);
      expect(`${r.stdout}${r.stderr}`).not.toContain(CANARY);
      expect(`${r.stdout}${r.stderr}`).not.toContain(BASE64_CANARY);
    }
    expect(validate.stderr).toBe(
      [
        "../secrets/key:1:1: a manifest document must be a mapping with a kind, not text; start it with kind: WeightedBackend or kind: EdgeRoute",
        ".git/config:2:2: YAML syntax: Unexpected scalar at node end; fix the YAML at this position",
        ".git/config:2:72: YAML syntax: Unexpected map-value-ind token in YAML stream; fix the YAML at this position",
        ".git/config:2:74: YAML syntax: Unexpected scalar token in YAML stream; fix the YAML at this position",
        "",
      ].join("\n"),
    );
  });

  it("YAML messages keep what is wrong and drop the source they quote", () => {
    expect(withoutQuotedSource('Unexpected scalar token in YAML stream: "basic c2VjcmV0"')).toBe("Unexpected scalar token in YAML stream");
    expect(withoutQuotedSource("Unresolved tag: !secret")).toBe("Unresolved tag");
    expect(withoutQuotedSource("Invalid escape sequence \\q")).toBe("Invalid escape sequence");
    expect(withoutQuotedSource("Unknown directive %SECRET")).toBe("Unknown directive");
    expect(withoutQuotedSource("Implicit keys need to be on a single line")).toBe("Implicit keys need to be on a single line");
  });

  it("quotes no variable reference of a document that is not a mapping with a kind", async () => {
    const { dir } = project("");
    writeFileSync(path.join(dir, "token"), `\${${CANARY}}\n`);
    writeFileSync(path.join(dir, "settings.yaml"), `user: \${${CANARY}}\n`);
    const loaded = await loadDesired(["token", "settings.yaml"], { cwd: dir, env: {} });
    expect(loaded.diagnostics.map(formatDiagnostic)).toEqual([
      "settings.yaml:1:1: missing kind; add kind: WeightedBackend or kind: EdgeRoute",
      "token:1:1: a manifest document must be a mapping with a kind, not text; start it with kind: WeightedBackend or kind: EdgeRoute",
    ]);
  });
});

describe("the walk and idp_metadata_file", () => {
  it("follow no symbolic link into .git/, and read no IdP metadata there", async () => {
    const { dir } = project("");
    symlinkSync(path.join(dir, ".git", "config"), path.join(dir, "config.yaml"));
    const route = [
      "kind: EdgeRoute",
      "edge: edghts_2rFMA4dqHTlJ0hDOzrN9tjBQy96",
      "route: edghtsrt_2rFMEf2bt8lLdREcAkAK4ivFIeG",
      "saml:",
      "  idp_metadata_file: .git/config",
      "",
    ];
    writeFileSync(path.join(dir, "route.yaml"), route.join("\n"));
    const loaded = await loadDesired(["."], { cwd: dir, env: {} });
    expect(loaded.diagnostics.map(formatDiagnostic)).toEqual([
      "config.yaml:1:1: symbolic link leads into .git/; copy the files into the root instead",
      "route.yaml:5:22: saml.idp_metadata_file .git/config leads into .git/, which holds no IdP metadata; name the XML file itself",
    ]);
  });
});
