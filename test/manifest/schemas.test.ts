/**
 * The committed JSON Schemas and the files that point at them: schemas/ must hold exactly what the code generates,
 * and every example must name a schema that exists and fits the kinds it holds.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { CLI as cli } from "../helpers/cli-path.js";
import { writeSchemas } from "../../src/commands/schema.js";
import { SCHEMAS } from "../../src/model/schemas.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const tmp = mkdtempSync(path.join(tmpdir(), "edgeplan-schemas-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const REGENERATE = "run `npm run build && node dist/cli/edgeplan.js schema` (npm run schema) and commit schemas/";

describe("schemas/", () => {
  it("holds exactly the files the code generates, byte for byte", async () => {
    const out = path.join(tmp, "generated");
    await writeSchemas(out);
    for (const { file } of SCHEMAS) {
      const committed = path.join(repo, "schemas", file);
      let onDisk: string;
      try {
        onDisk = readFileSync(committed, "utf8");
      } catch {
        throw new Error(`schemas/${file} is missing: ${REGENERATE}`);
      }
      expect(onDisk, `schemas/${file} is out of date: ${REGENERATE}`).toBe(readFileSync(path.join(out, file), "utf8"));
    }
  });

  it("are JSON Schema draft-07 documents that refuse unknown fields", () => {
    for (const file of ["weighted-backend.schema.json", "edge-route.schema.json"]) {
      const schema = JSON.parse(readFileSync(path.join(repo, "schemas", file), "utf8")) as Record<string, unknown>;
      expect(schema.$schema).toBe("http://json-schema.org/draft-07/schema#");
      expect(schema.additionalProperties).toBe(false);
    }
    const either = JSON.parse(readFileSync(path.join(repo, "schemas/manifest.schema.json"), "utf8")) as { oneOf: Array<{ properties: { kind: { const: string } } }> };
    expect(either.oneOf.map((s) => s.properties.kind.const)).toEqual(["WeightedBackend", "EdgeRoute"]);
  });

  it("are written by `edgeplan schema --out DIR`", async () => {
    const out = path.join(tmp, "cli");
    const { stdout } = await promisify(execFile)(process.execPath, [cli, "schema", "--out", out], { cwd: tmp });
    expect(stdout).toBe(SCHEMAS.map(({ file }) => `wrote cli/${file}\n`).join(""));
    for (const { file } of SCHEMAS) {
      expect(readFileSync(path.join(out, file), "utf8")).toBe(readFileSync(path.join(repo, "schemas", file), "utf8"));
    }
  });
});

function manifestsUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) return name === "workflows" ? [] : manifestsUnder(p);
    // Fixtures files (one per environment in environments/) hold no manifest.
    return /\.ya?ml$/.test(name) && !/^fixtures(-[a-z]+)?\.yaml$/.test(name) ? [p] : [];
  });
}

describe("examples", () => {
  const files = manifestsUnder(path.join(repo, "examples"));

  it("exist", () => {
    expect(files.length).toBeGreaterThanOrEqual(4);
  });

  for (const file of files) {
    it(`${path.relative(repo, file)} points its editor at a schema for its kinds`, () => {
      const text = readFileSync(file, "utf8");
      const first = text.split("\n")[0] ?? "";
      const match = /^# yaml-language-server: \$schema=(\S+)$/.exec(first);
      expect(match, "the first line must be # yaml-language-server: $schema=<path>").not.toBeNull();
      const target = path.resolve(path.dirname(file), match?.[1] ?? "");
      expect(path.dirname(target)).toBe(path.join(repo, "schemas"));
      expect(() => statSync(target)).not.toThrow();
      const kinds = new Set([...text.matchAll(/^kind: (\w+)$/gm)].map((m) => m[1]));
      const expected =
        path.basename(file) === "edgeplan.yaml"
          ? "project.schema.json"
          : /^policies:$/m.test(text)
            ? "policies.schema.json"
            : /^expect:/m.test(text)
              ? "policy-test.schema.json"
              : kinds.size > 1
                ? "manifest.schema.json"
                : kinds.has("WeightedBackend")
                  ? "weighted-backend.schema.json"
                  : "edge-route.schema.json";
      expect([expected, "manifest.schema.json"]).toContain(path.basename(target));
    });
  }
});
