/**
 * Golden scenarios: each folder `NNN-name/` holds manifests (`manifests/`), the live side as wire objects
 * (`live.json`), optional plan options (`options.json`), and the expected renderings (`plan.txt`, `plan.md`,
 * `plan.json`, `plan.html`), or `error.txt` when no plan can be made. `options.json` may hold `targets` and `excludes` (address
 * patterns): the live side is then read as a targeted run reads it. The runner loads the manifests as the CLI does (cwd = the
 * scenario folder, so paths in the output are relative), builds the live state with buildLiveState, plans, and
 * compares every rendering byte for byte.
 *
 * Regenerate after an intended change with `UPDATE_GOLDEN=1 npx vitest run test/scenarios`, then review the diff.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { buildLiveState } from "../../src/api/live-state.js";
import { buildPlan, DEFAULT_MAX_SHIFT, type PlanOptions } from "../../src/core/plan.js";
import { scopeDesired, scopeReachesKind } from "../../src/core/scope.js";
import { loadDesired } from "../../src/manifest/load.js";
import { isInventoryObject } from "../../src/model/inventory.js";
import { formatDiagnostic, ManifestError } from "../../src/model/errors.js";
import { PlanSchema } from "../../src/model/plan-schema.js";
import type { CircuitBreakerModule, SamlModule, WeightedBackend } from "../../src/model/wire.js";
import { renderHtml } from "../../src/render/html.js";
import { renderHtmlPage } from "../../src/render/html-page.js";
import { renderJson } from "../../src/render/json.js";
import { renderMarkdown } from "../../src/render/markdown.js";
import { renderText } from "../../src/render/text.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const update = process.env.UPDATE_GOLDEN === "1";
const scenarios = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && /^\d{3}-/.test(d.name))
  .map((d) => d.name)
  .sort();

interface LiveFile {
  weighted_backends: WeightedBackend[];
  routes: Array<{ edge: string; route: string; saml: SamlModule | null; circuit_breaker: CircuitBreakerModule | null }>;
}

/** What a scenario produces: each expected file's name and text. */
async function runScenario(dir: string): Promise<Record<string, string>> {
  const live = JSON.parse(readFileSync(path.join(dir, "live.json"), "utf8")) as LiveFile;
  const optionsFile = path.join(dir, "options.json");
  const overrides = existsSync(optionsFile) ? (JSON.parse(readFileSync(optionsFile, "utf8")) as Partial<PlanOptions>) : {};
  const options: PlanOptions = { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT, ...overrides };
  // A fixed clock, so that certificate expiry warnings do not change with the date the suite runs on.
  const loaded = await loadDesired(["manifests"], { cwd: dir, env: {}, now: new Date("2026-01-01T00:00:00Z") });
  const warnings = loaded.diagnostics.filter((d) => d.severity === "warning").map(formatDiagnostic);
  if (loaded.diagnostics.some((d) => d.severity === "error")) {
    return { "error.txt": `${loaded.diagnostics.map(formatDiagnostic).join("\n")}\n` };
  }
  try {
    // As the commands read: a targeted plan sees only what its scope reaches (src/commands/plan.ts fetchForPlan).
    const scope = { targets: options.targets ?? [], excludes: options.excludes ?? [] };
    // With only modules in scope, the listing is read for the inventories alone.
    const listed = scopeReachesKind(scope, "weighted_backend")
      ? live.weighted_backends
      : scopeReachesKind(scope, "edge_route")
        ? live.weighted_backends.filter(isInventoryObject)
        : [];
    const state = buildLiveState(listed, live.routes);
    // The routes of modules an inventory records and no manifest declares: the plan looks only those up.
    state.recorded = state.routes;
    const plan = buildPlan(scopeDesired(loaded.desired, scope), state, options);
    const out: Record<string, string> = {
      "plan.txt": renderText(plan, { color: false }),
      "plan.md": renderMarkdown(plan),
      "plan.json": renderJson(plan),
      "plan.html": withoutStylesheet(renderHtml(plan)),
    };
    if (warnings.length > 0) out["warnings.txt"] = `${warnings.join("\n")}\n`;
    return out;
  } catch (err) {
    if (!(err instanceof ManifestError)) throw err;
    return { "error.txt": `${err.message}\n` };
  }
}

/** The one stylesheet every page carries, as the page shell writes it (src/render/html-page.ts). */
const STYLESHEET = /<style>[\s\S]*?<\/style>/g;
const SHELL_STYLESHEET = renderHtmlPage("", []).match(STYLESHEET)?.[0] ?? "";

/**
 * A golden `plan.html` holds the page with its stylesheet named rather than copied: the stylesheet is the same
 * constant in every page (checked here: exactly one, and the shell's), so the goldens show only what the plan draws.
 */
function withoutStylesheet(html: string): string {
  expect(html.match(STYLESHEET)).toEqual([SHELL_STYLESHEET]);
  return html.replace(STYLESHEET, "<style>/* the stylesheet of src/render/html-page.ts */</style>");
}

const OUTPUT_FILES = ["plan.txt", "plan.md", "plan.json", "plan.html", "warnings.txt", "error.txt"];

describe("golden scenarios", () => {
  it("has at least 20 scenarios", () => {
    expect(scenarios.length).toBeGreaterThanOrEqual(20);
  });

  for (const name of scenarios) {
    it(name, async () => {
      const dir = path.join(here, name);
      const actual = await runScenario(dir);
      if (update) {
        for (const file of OUTPUT_FILES) {
          const target = path.join(dir, file);
          if (actual[file] !== undefined) writeFileSync(target, actual[file]);
          else if (existsSync(target)) rmSync(target);
        }
      }
      const expected: Record<string, string> = {};
      for (const file of OUTPUT_FILES) {
        const target = path.join(dir, file);
        if (existsSync(target)) expected[file] = readFileSync(target, "utf8");
      }
      expect(Object.keys(actual).sort(), `${name}: the set of expected files (regenerate with UPDATE_GOLDEN=1)`).toEqual(Object.keys(expected).sort());
      for (const file of Object.keys(expected)) {
        expect(actual[file], `${name}/${file} differs (regenerate with UPDATE_GOLDEN=1 and review the diff)`).toBe(expected[file]);
      }
    });
  }
});

describe("golden plans as saved plan files", () => {
  const withPlan = scenarios.filter((name) => existsSync(path.join(here, name, "plan.json")));

  it("every scenario holds either a plan or the error that stops it", () => {
    const withError = scenarios.filter((name) => existsSync(path.join(here, name, "error.txt")));
    expect([...withPlan, ...withError].sort()).toEqual([...scenarios].sort());
    expect(withError.length).toBeGreaterThan(0);
  });

  for (const name of withPlan) {
    it(`${name}: plan.json is valid against its schema and round-trips to the same bytes`, () => {
      const text = readFileSync(path.join(here, name, "plan.json"), "utf8");
      const parsed = PlanSchema.parse(JSON.parse(text));
      expect(renderJson(parsed)).toBe(text);
      expect(renderMarkdown(parsed).length).toBeLessThanOrEqual(60_000);
      // Every renderer reads only the plan: the plan read back from its file renders to the same bytes.
      expect(withoutStylesheet(renderHtml(parsed))).toBe(readFileSync(path.join(here, name, "plan.html"), "utf8"));
      expect(renderMarkdown(parsed)).toBe(readFileSync(path.join(here, name, "plan.md"), "utf8"));
    });
  }
});
