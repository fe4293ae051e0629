/**
 * How manifests are read, through the built CLI (`edgeplan validate` and `edgeplan plan --local`): one YAML version,
 * alias keys checked like any key, and every file that cannot be read reported at the line that named it (exit 1,
 * never an internal error).
 */
import { execFile, execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CLI } from "../helpers/cli-path.js";

const tmp = mkdtempSync(path.join(tmpdir(), "edgeplan-read-"));
// Readable by the unprivileged user the permission tests run as.
chmodSync(tmp, 0o755);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** As root, a file with mode 000 can still be read: the permission tests run the CLI as `nobody` then. */
const unprivileged = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI in `cwd` with no EDGEPLAN_* variables of the test runner. */
function run(args: string[], cwd: string, as: { uid?: number; gid?: number } = {}): Promise<Run> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("EDGEPLAN_")));
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd, env, ...as }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

/** A fresh folder under the test's temporary folder, with the given files, writable by everyone (plan --local writes .edgeplan/ there). */
function folder(files: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(tmp, "case-"));
  chmodSync(dir, 0o777);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

const BACKEND = "bkdhr_2rFLmpE8q3WRHfs3a2LFkfhVsOU";
const ROUTE = [
  "kind: EdgeRoute",
  "edge: edghts_2rFLmpE8q3WRHfs3a2LFkfhVsOU",
  "route: edghtsrt_2rFLrPDVjzfYgym9MMvkYSSNdqk",
  "saml:",
  "  idp_metadata_file: idp/okta.xml",
  "  allow_idp_initiated: false",
  "",
].join("\n");
const IDP_AT = "route.yaml:5:22: saml.idp_metadata_file idp/okta.xml";

/** `validate` and `plan --local` on the same manifests: the same diagnostics, exit 1, nothing planned. */
async function expectRefused(dir: string, args: string[], diagnostics: string[], as: { uid?: number; gid?: number } = {}): Promise<void> {
  const errors = diagnostics.length;
  const validate = await run(["validate", ...args], dir, as);
  expect(validate.stderr).toBe(diagnostics.map((d) => `${d}\n`).join(""));
  expect(validate.stdout).toMatch(new RegExp(`: ${errors} errors?, 0 warnings\\n$`));
  expect(validate.code).toBe(1);
  const plan = await run(["plan", "--local", ...args], dir, as);
  const summary = `edgeplan: ${errors} error${errors === 1 ? "" : "s"} in the manifests; nothing was sent to the API\n`;
  expect(plan.stderr).toBe(`${diagnostics.map((d) => `${d}\n`).join("")}${summary}`);
  expect(plan.stdout).toBe("");
  expect(plan.code).toBe(1);
}

describe("one YAML version", () => {
  it("refuses %YAML 1.1 at its line and reads the document as YAML 1.2 (yes is text, 010 is 10)", async () => {
    const dir = folder({ "m.yaml": `%YAML 1.1\n---\nkind: WeightedBackend\nname: checkout\nprotect: yes\nbackends:\n  ${BACKEND}: 010\n` });
    await expectRefused(
      dir,
      ["m.yaml"],
      [
        "m.yaml:1:1: %YAML 1.1 asks for another YAML version; remove the directive: manifests are YAML 1.2",
        'm.yaml:5:10: protect: expected true or false, got the text "yes"; YAML 1.2 reads yes, no, on and off as text: write true or false',
      ],
    );
  });

  it("refuses %YAML 1.1 even when the document means the same in both versions", async () => {
    const dir = folder({ "m.yaml": `%YAML 1.1\n---\nkind: WeightedBackend\nname: checkout\nbackends:\n  ${BACKEND}: 90\n` });
    await expectRefused(dir, ["m.yaml"], ["m.yaml:1:1: %YAML 1.1 asks for another YAML version; remove the directive: manifests are YAML 1.2"]);
  });

  it("accepts %YAML 1.2 and plans the weights YAML 1.2 reads", async () => {
    const dir = folder({ "m.yaml": `%YAML 1.2\n---\nkind: WeightedBackend\nname: checkout\nprotect: true\nbackends:\n  ${BACKEND}: 010\n` });
    const validate = await run(["validate", "m.yaml"], dir);
    expect([validate.stderr, validate.stdout, validate.code]).toEqual(["", "1 file, 1 object: 0 errors, 0 warnings\n", 0]);
    const plan = await run(["plan", "--local", "--format", "json", "m.yaml"], dir);
    expect(plan.code).toBe(0);
    const change = (JSON.parse(plan.stdout) as { changes: Array<{ after: { backends: Record<string, number> } }> }).changes[0];
    expect(change?.after.backends).toEqual({ [BACKEND]: 10 });
  });
});

describe("alias keys", () => {
  it("a key repeated through an alias is the duplicate-key error, at the alias", async () => {
    const dir = folder({ "m.yaml": `kind: WeightedBackend\n&k name: checkout\n*k : other\nbackends:\n  ${BACKEND}: 100\n` });
    await expectRefused(dir, ["m.yaml"], ["m.yaml:3:1: this key appears twice in the same mapping; keep one of them"]);
  });
});

describe("files that cannot be read", () => {
  it("an idp_metadata_file that is a folder, a named pipe, a dangling link or a loop of links: at the manifest value", async () => {
    const dir = folder({ "route.yaml": ROUTE });
    mkdirSync(path.join(dir, "idp/okta.xml"), { recursive: true });
    await expectRefused(dir, ["."], [`${IDP_AT} is not a file; name the XML file itself`]);
    rmSync(path.join(dir, "idp/okta.xml"), { recursive: true });
    execFileSync("mkfifo", [path.join(dir, "idp/okta.xml")]);
    await expectRefused(dir, ["."], [`${IDP_AT} is not a file; name the XML file itself`]);
    rmSync(path.join(dir, "idp/okta.xml"));
    symlinkSync("gone.xml", path.join(dir, "idp/okta.xml"));
    await expectRefused(dir, ["."], [`${IDP_AT}: no such file; check the path (it is relative to this manifest)`]);
    rmSync(path.join(dir, "idp/okta.xml"));
    symlinkSync("okta.xml", path.join(dir, "idp/okta.xml"));
    await expectRefused(dir, ["."], [`${IDP_AT}: a loop of symbolic links; fix the path`]);
  });

  it("an idp_metadata_file without read permission: at the manifest value", async () => {
    const dir = folder({ "route.yaml": ROUTE, "idp/okta.xml": "<EntityDescriptor/>" });
    chmodSync(path.join(dir, "idp/okta.xml"), 0o000);
    await expectRefused(dir, ["."], [`${IDP_AT}: permission denied; check its permissions`], unprivileged);
  });

  it("manifest files and folders without permission: at the path", async () => {
    const manifest = `kind: WeightedBackend\nname: checkout\nbackends:\n  ${BACKEND}: 100\n`;
    const dir = folder({ "a/m.yaml": manifest, "b/m.yaml": manifest, "c/m.yaml": manifest });
    chmodSync(path.join(dir, "a/m.yaml"), 0o000);
    // b can be listed but not entered; c can be entered but not listed.
    chmodSync(path.join(dir, "b"), 0o644);
    chmodSync(path.join(dir, "c"), 0o311);
    await expectRefused(
      dir,
      ["."],
      [
        "a/m.yaml:1:1: cannot read this file (permission denied); check its permissions",
        "b/m.yaml:1:1: cannot read this file (permission denied); check its permissions",
        "c:1:1: cannot read this folder (permission denied); check its permissions",
      ],
      unprivileged,
    );
    await expectRefused(dir, ["b/m.yaml"], ["b/m.yaml:1:1: cannot read this path (permission denied); check its permissions"], unprivileged);
    chmodSync(path.join(dir, "b"), 0o755);
    chmodSync(path.join(dir, "c"), 0o755);
  });

  it("manifest links that lead nowhere or in a loop: at the link", async () => {
    const dir = folder();
    symlinkSync("gone.yaml", path.join(dir, "dangling.yaml"));
    symlinkSync("loop-b.yaml", path.join(dir, "loop-a.yaml"));
    symlinkSync("loop-a.yaml", path.join(dir, "loop-b.yaml"));
    await expectRefused(
      dir,
      ["."],
      [
        "dangling.yaml:1:1: cannot read this symbolic link (no such file); fix the path or remove it",
        "loop-a.yaml:1:1: cannot read this symbolic link (a loop of symbolic links); fix the path or remove it",
        "loop-b.yaml:1:1: cannot read this symbolic link (a loop of symbolic links); fix the path or remove it",
      ],
    );
    await expectRefused(dir, ["loop-a.yaml"], ["loop-a.yaml:1:1: cannot read this path (a loop of symbolic links); fix the path or remove it"]);
  });

  it("a project file that is a named pipe: refused at once, not read for ever", async () => {
    const dir = folder({ "m.yaml": `kind: WeightedBackend\nname: checkout\nbackends:\n  ${BACKEND}: 100\n` });
    execFileSync("mkfifo", [path.join(dir, "edgeplan.yaml")]);
    for (const args of [
      ["validate", "m.yaml"],
      ["plan", "--local", "m.yaml"],
    ]) {
      const { code, stdout, stderr } = await run(args, dir);
      expect([stderr, stdout, code]).toEqual(["edgeplan: --config edgeplan.yaml: cannot read the project file (not a regular file)\n", "", 1]);
    }
  });
});
