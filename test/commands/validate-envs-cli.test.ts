/**
 * `validate` for every outcome and every environment (in process, on temporary folders): `--format json` prints one
 * document on stdout for a project-level error too (no environment chosen, an unknown one, a project file that cannot
 * be read), exit 1; `--all-envs` validates once per environment, grouped in text and one entry each in JSON, and is
 * refused with `--env`; without environments it validates once and says so.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runValidate } from "../../src/commands/validate.js";
import { ValidateDocumentSchema } from "../../src/model/validate-schema.js";

const HR = "bkdhr_000000000000000000000008001";
const PROJECT = 'paths: [m]\nenvironments:\n  staging:\n    vars: {desc: "Staging pool"}\n  production:\n    vars: {}\n';
const MANIFEST = `kind: WeightedBackend\nname: web\ndescription: "\${var.desc}"\nbackends:\n  ${HR}: 1\n`;

/** A project folder with these files; runs validate in it and returns the exit code and both streams. */
async function validate(files: Record<string, string>, paths: string[], options: { envName?: string; config?: string; format?: string; allEnvs?: boolean }) {
  const cwd = mkdtempSync(join(tmpdir(), "edgeplan-validate-"));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(cwd, name, ".."), { recursive: true });
    writeFileSync(join(cwd, name), text);
  }
  let out = "";
  let err = "";
  const code = await runValidate(paths, { ...options, cwd, env: {}, stdout: { write: (s: string) => (out += s) }, stderr: { write: (s: string) => (err += s) } });
  return { code, out, err };
}

const doc = (out: string) => {
  const parsed = JSON.parse(out);
  expect(ValidateDocumentSchema.safeParse(parsed).error).toBeUndefined();
  return parsed;
};

describe("validate --format json: one document for every outcome", () => {
  it("no environment chosen, an unknown one, a project file that cannot be read: a diagnostic of the project file, exit 1", async () => {
    const files = { "edgeplan.yaml": PROJECT, "m/web.yaml": MANIFEST };
    const none = await validate(files, [], { format: "json" });
    expect(none.code).toBe(1);
    expect(none.err).toBe("");
    expect(doc(none.out)).toMatchObject({ kind: "validate", environment: null, ok: false, counts: { errors: 1 } });
    expect(doc(none.out).diagnostics[0]).toEqual({
      file: "edgeplan.yaml",
      line: 1,
      col: 1,
      severity: "error",
      message: "edgeplan.yaml defines 2 environments (staging, production): choose one with --env NAME or EDGEPLAN_ENV",
    });

    const unknown = await validate(files, [], { format: "json", envName: "producton" });
    expect(unknown.code).toBe(1);
    expect(doc(unknown.out).diagnostics.map((d: { message: string }) => d.message)).toContain(
      "--env producton: no such environment in edgeplan.yaml; the environments are staging, production; did you mean production?",
    );

    const missing = await validate({}, [], { format: "json", config: "nope.yaml" });
    expect(missing.code).toBe(1);
    expect(doc(missing.out)).toMatchObject({
      ok: false,
      files: [],
      diagnostics: [{ file: "nope.yaml", line: 1, col: 1, severity: "error", message: "--config nope.yaml: cannot read the project file (no such file)" }],
    });

    const good = await validate(files, [], { format: "json", envName: "staging" });
    expect(good.code).toBe(0);
    expect(doc(good.out)).toMatchObject({ environment: "staging", ok: true, files: ["m/web.yaml"], objects: 1, diagnostics: [] });
  });
});

describe("validate --all-envs", () => {
  const files = { "edgeplan.yaml": PROJECT, "m/web.yaml": MANIFEST };

  it("text: a summary per environment, the diagnostics grouped under their environment; exit 1 when one fails", async () => {
    const run = await validate(files, [], { allEnvs: true });
    expect(run.code).toBe(1);
    expect(run.out).toBe("staging: 1 file, 1 object: 0 errors, 0 warnings\nproduction: 1 file, 1 object: 1 error, 0 warnings\n");
    expect(run.err).toBe(
      "environment production:\nm/web.yaml:3:14: ${var.desc}: environment production has no variable desc (its vars: none); add it under environments.production.vars in edgeplan.yaml\n",
    );
  });

  it("json: one entry per environment, ok only when every one is", async () => {
    const run = await validate(files, [], { allEnvs: true, format: "json" });
    expect(run.code).toBe(1);
    const d = doc(run.out);
    expect(d.ok).toBe(false);
    expect(d.environments.map((e: { environment: string; ok: boolean }) => [e.environment, e.ok])).toEqual([
      ["staging", true],
      ["production", false],
    ]);
  });

  it("is refused with --env, and without environments validates once and says so", async () => {
    await expect(validate(files, [], { allEnvs: true, envName: "staging" })).rejects.toThrow(
      "--all-envs validates every environment of the project file: leave out --env staging, or leave out --all-envs",
    );
    const plain = await validate({ "m/web.yaml": MANIFEST.replace("${var.desc}", "Web") }, ["m"], { allEnvs: true });
    expect(plain).toEqual({
      code: 0,
      out: "1 file, 1 object: 0 errors, 0 warnings\n",
      err: "note: --all-envs: the project file defines no environments, so the manifests are validated once, as without it\n",
    });
  });

  it("with errors in the project file, validates once and says that is why", async () => {
    const broken = await validate({ ...files, "edgeplan.yaml": `${PROJECT}bogus: 1\n` }, [], { allEnvs: true });
    expect(broken.code).toBe(1);
    expect(broken.err.split("\n")[0]).toBe("note: --all-envs: the project file has errors, so the manifests are validated once, as without it");
    expect(broken.err.split("\n")[1]).toMatch(/^edgeplan\.yaml:7:1: unknown field bogus; remove it \(the fields here are paths, stack, /);
  });
});
