/**
 * Keeps the manifest reference (docs/manifests.md), the README section and examples/README.md true to the code:
 * every field of the zod schemas has a row in the reference table of its kind, with the API default the loader
 * applies, and every example file is described.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CircuitBreakerManifestSchema, EdgeRouteManifestSchema, SamlManifestSchema, WeightedBackendManifestSchema } from "../../src/model/manifest-schema.js";
import { CIRCUIT_BREAKER_DEFAULTS, SAML_DEFAULTS } from "../../src/model/wire.js";
import { PROJECT_KEYS } from "../../src/model/project-schema.js";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
// Code blocks hold YAML comments that would read as headings.
const reference = readFileSync(path.join(repo, "docs/manifests.md"), "utf8").replace(/^```[\s\S]*?^```$/gm, "");

/** The text of a section, from its heading to the next heading of the same or a higher level. */
function section(heading: string): string {
  const level = /^#+/.exec(heading)?.[0].length ?? 2;
  const start = reference.indexOf(`\n${heading}\n`);
  expect(start, `docs/manifests.md has no section "${heading}"`).toBeGreaterThanOrEqual(0);
  const rest = reference.slice(start + heading.length + 2);
  const next = rest.search(new RegExp(`^#{1,${level}} `, "m"));
  return next < 0 ? rest : rest.slice(0, next);
}

function row(text: string, field: string): string | undefined {
  return text.split("\n").find((line) => line.startsWith(`| \`${field}\` |`));
}

describe("docs/manifests.md", () => {
  const tables = [
    { heading: "## WeightedBackend", schema: WeightedBackendManifestSchema },
    { heading: "## EdgeRoute", schema: EdgeRouteManifestSchema },
    { heading: "### saml", schema: SamlManifestSchema },
    { heading: "### circuit_breaker", schema: CircuitBreakerManifestSchema },
  ];
  for (const { heading, schema } of tables) {
    it(`has a row for every field of ${heading.replace(/^#+ /, "")}`, () => {
      const text = section(heading);
      for (const field of Object.keys(schema.shape)) expect(row(text, field), `no row for ${field}`).toBeDefined();
    });
  }

  it("has a row for every key of the project file", () => {
    const text = section("## The project file");
    for (const key of PROJECT_KEYS) expect(row(text, key), `no row for ${key}`).toBeDefined();
  });

  it("states the default the loader applies for every module field", () => {
    const saml = section("### saml");
    for (const [field, value] of Object.entries(SAML_DEFAULTS)) {
      expect(row(saml, field), field).toContain(`| \`${JSON.stringify(value)}\` |`);
    }
    const breaker = section("### circuit_breaker");
    for (const [field, value] of Object.entries(CIRCUIT_BREAKER_DEFAULTS)) {
      expect(row(breaker, field), field).toContain(`| \`${JSON.stringify(value)}\` |`);
    }
  });
});

describe("README and examples/README.md", () => {
  it("the README's manifests section links the reference and the examples", () => {
    const readme = readFileSync(path.join(repo, "README.md"), "utf8");
    const start = readme.indexOf("<!-- section:manifests -->");
    const end = readme.indexOf("<!-- /section:manifests -->");
    const text = readme.slice(start, end);
    expect(text).toContain("(docs/manifests.md)");
    expect(text).toContain("(examples/README.md)");
  });

  it("examples/README.md describes every example file", () => {
    const readme = readFileSync(path.join(repo, "examples/README.md"), "utf8");
    const files = (dir: string): string[] =>
      readdirSync(dir).flatMap((name) => {
        const p = path.join(dir, name);
        if (statSync(p).isDirectory()) return name === "workflows" ? [] : files(p);
        return name === "README.md" ? [] : [path.relative(path.join(repo, "examples"), p)];
      });
    for (const f of files(path.join(repo, "examples"))) expect(readme, f).toContain(`](${f})`);
  });
});
