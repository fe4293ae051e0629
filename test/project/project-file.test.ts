/**
 * The project file loader (`edgeplan.yaml`, `--config FILE`) and the precedence of its values, on real files in a
 * temporary folder; and `ignore_changes` entries checked at their lines in a manifest.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { chooseEnvironment, fillFromProject } from "../../src/commands/project.js";
import { loadDesired } from "../../src/manifest/load.js";
import { loadProjectFile } from "../../src/project/project-file.js";
import { formatDiagnostic } from "../../src/model/errors.js";
import { projectFolders } from "./folder.js";

const folder = projectFolders("edgeplan-project-");

describe("the project file", () => {
  it("is optional in the working directory, and required when --config names it", async () => {
    const dir = folder({});
    expect(await loadProjectFile(dir)).toEqual({ settings: {}, diagnostics: [] });
    await expect(loadProjectFile(dir, "ci/edgeplan.yaml")).rejects.toThrow("--config ci/edgeplan.yaml: cannot read the project file (no such file)");
  });

  it("gives its settings under the options' names, paths relative to the file", async () => {
    const dir = folder({ "ci/prod.yaml": "paths: manifests\nstack: production\nrate_limit: 60/60s\ntimeout: 10s\nprune: true\n" });
    expect(await loadProjectFile(dir, "ci/prod.yaml")).toEqual({
      file: "ci/prod.yaml",
      settings: { paths: ["ci/manifests"], stack: "production", rateLimit: "60/60s", timeout: "10s", prune: true },
      diagnostics: [],
    });
    // The folder of the file bounds its paths, for a file named by --config as for edgeplan.yaml.
    writeFileSync(join(dir, "ci/prod.yaml"), "paths: ../manifests\n");
    expect((await loadProjectFile(dir, "ci/prod.yaml")).diagnostics.map(formatDiagnostic)).toEqual([
      "ci/prod.yaml:1:8: paths: this path leads outside the project's folder (the folder of the project file); name a file or folder inside the project's folder, or give other paths on the command line",
    ]);
  });

  it("reports every problem at its line, with the flags' own words", async () => {
    const dir = folder({ "edgeplan.yaml": "stack: [a]\nconcurrency: 0\ntimeout: 2h\nmax_deletes: -1\n---\nstack: b\n" });
    const result = await loadProjectFile(dir);
    expect(result.diagnostics.map(formatDiagnostic)).toEqual(["edgeplan.yaml:6:1: the project file holds one document; remove this one"]);
    writeFileSync(join(dir, "edgeplan.yaml"), "stack: [a]\nconcurrency: 0\ntimeout: 2h\nmax_deletes: -1\n");
    expect((await loadProjectFile(dir)).diagnostics.map(formatDiagnostic)).toEqual([
      "edgeplan.yaml:1:8: stack: expected text, got a list",
      'edgeplan.yaml:2:14: concurrency: expected a whole number from 1 to 256, got "0"',
      'edgeplan.yaml:3:10: timeout: expected milliseconds from 1 to 600000 (or a duration such as 30s), got "2h"',
      'edgeplan.yaml:4:14: max_deletes: expected a whole number from 0 to 1000000, got "-1"',
    ]);
  });

  it("reads environments: each one's settings and vars apart from the top level's, every problem at its line", async () => {
    const dir = folder({
      "edgeplan.yaml":
        "paths: m\nstack: web\nenvironments:\n  staging:\n    stack: web-staging\n    api_key_env: KEY_STAGING\n    vars: {edge: e1}\n  production:\n    paths: [prod]\n    vars: {edge: e2}\n",
    });
    expect(await loadProjectFile(dir)).toEqual({
      file: "edgeplan.yaml",
      settings: { paths: ["m"], stack: "web" },
      environments: {
        staging: { settings: { stack: "web-staging", apiKeyEnv: "KEY_STAGING" }, vars: { edge: "e1" } },
        production: { settings: { paths: ["prod"] }, vars: { edge: "e2" } },
      },
      diagnostics: [],
    });
    writeFileSync(join(dir, "edgeplan.yaml"), "environments:\n  Prod:\n    stack: p\n  qa:\n    api_key: x\n    timeout: 2h\n    vars: {1x: y}\n    paths: ../out\n");
    expect((await loadProjectFile(dir)).diagnostics.map(formatDiagnostic)).toEqual([
      'edgeplan.yaml:2:3: environments: "Prod" is not an environment name: use lowercase letters, digits and -, starting with a letter or digit, at most 63 characters',
      "edgeplan.yaml:5:5: environments.qa.api_key: the API key never goes in edgeplan.yaml (it would be committed): set EDGEPLAN_API_KEY or pass --api-key-file FILE",
      'edgeplan.yaml:6:14: environments.qa.timeout: expected milliseconds from 1 to 600000 (or a duration such as 30s), got "2h"',
      'edgeplan.yaml:7:12: environments.qa.vars: "1x" is not a variable name: use letters, digits and _, not starting with a digit',
    ]);
  });

  it("chooses the environment --env or EDGEPLAN_ENV names, or the only one; its settings over the top level's", () => {
    const project = {
      file: "edgeplan.yaml",
      settings: { stack: "web", rateLimit: "60/60s" },
      environments: { staging: { settings: { stack: "web-staging" }, vars: { a: "1" } }, production: { settings: {}, vars: {} } },
      diagnostics: [],
    };
    expect(chooseEnvironment(project, "staging", {})).toEqual({
      environment: { name: "staging", vars: { a: "1" } },
      settings: { stack: "web-staging", rateLimit: "60/60s" },
    });
    expect(chooseEnvironment(project, undefined, { EDGEPLAN_ENV: "production" }).settings).toEqual({ stack: "web", rateLimit: "60/60s" });
    expect(() => chooseEnvironment(project, undefined, {})).toThrow("edgeplan.yaml defines 2 environments (staging, production): choose one with --env NAME or EDGEPLAN_ENV");
    expect(() => chooseEnvironment(project, "stagin", {})).toThrow(
      "--env stagin: no such environment in edgeplan.yaml; the environments are staging, production; did you mean staging?",
    );
    const one = { ...project, environments: { staging: project.environments.staging } };
    expect(chooseEnvironment(one, undefined, {}).environment).toEqual({ name: "staging", vars: { a: "1" } });
    expect(chooseEnvironment({ settings: {}, diagnostics: [] }, undefined, {})).toEqual({ environment: null, settings: {} });
  });

  it("fills only what neither a flag nor the environment gives", () => {
    const settings = { paths: ["manifests"], stack: "file", apiUrl: "https://file.example", concurrency: 8, prune: true };
    expect(fillFromProject({ paths: [], concurrency: "2" }, settings, {})).toEqual({
      paths: ["manifests"],
      stack: "file",
      apiUrl: "https://file.example",
      concurrency: "2",
      prune: true,
    });
    expect(fillFromProject({ paths: ["other"], prune: false }, settings, { EDGEPLAN_STACK: "env", EDGEPLAN_API_URL: "https://env.example" })).toEqual({
      paths: ["other"],
      concurrency: 8,
      prune: false,
    });
  });
});

describe("ignore_changes in manifests", () => {
  it("refuses the owner marker and unknown fields at their lines", async () => {
    const dir = folder({
      "m/a.yaml": [
        "kind: WeightedBackend",
        "name: checkout",
        "backends: {bkdhr_32ELHVckeVuUNCrvOOKGhxp33Gw: 1}",
        "ignore_changes:",
        "  - description",
        "  - metadata.edgeplan",
        "---",
        "kind: EdgeRoute",
        "edge: edghts_2G4e8ay6UX87bXwr8GXBHKATNk6",
        "route: edghtsrt_32ELHwJPhCQPmmUX0L0b2M0hXZw",
        "circuit_breaker: absent",
        "ignore_changes: [circuit_breaker.num_bucket]",
        "",
      ].join("\n"),
    });
    const loaded = await loadDesired(["m"], { cwd: dir, env: {} });
    expect(loaded.diagnostics.map(formatDiagnostic)).toEqual([
      "m/a.yaml:6:5: ignore_changes[1]: metadata.edgeplan cannot be ignored: the owner marker is how edgeplan finds its objects; it is never ignorable",
      "m/a.yaml:12:18: ignore_changes[0]: circuit_breaker.num_bucket: circuit_breaker has no field num_bucket; its fields are enabled, tripped_duration, rolling_window, num_buckets, volume_threshold, error_threshold_percentage",
    ]);
  });
});
