/**
 * Commands that read the project file take `--config` and `--env` (in process): `fmt --env NAME` formats the paths
 * that environment sets; `show --config FILE` judges a saved plan by that file's policies, and `show --env` naming an
 * environment other than the plan's is refused.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runFmt } from "../../src/commands/fmt.js";
import { captureIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import { runShow } from "../../src/commands/show.js";
import { closeWorlds, HR1, startWorld } from "../apply/e2e.js";

afterAll(closeWorlds);

const PROJECT = "paths: [common]\nenvironments:\n  staging:\n    paths: [stg]\n  production:\n    paths: [prod]\n";
const MESSY = `name: web\nkind: WeightedBackend\nbackends: {${HR1}: 1}\n`;

describe("--config and --env of the commands that read the project file", () => {
  it("fmt --env NAME formats the paths of that environment; without it, the top level's", async () => {
    const w = await startWorld();
    for (const dir of ["common", "stg", "prod"]) {
      mkdirSync(join(w.dir, dir));
      writeFileSync(join(w.dir, dir, "web.yaml"), MESSY);
    }
    writeFileSync(join(w.dir, "edgeplan.yaml"), PROJECT);
    const io = captureIO({}, w.dir);
    expect(await runFmt({ paths: [], check: true, env: "production" }, io)).toBe(1);
    expect(io.out).toBe("prod/web.yaml\n");
    const plain = captureIO({}, w.dir);
    expect(await runFmt({ paths: [], check: true }, plain)).toBe(1);
    expect(plain.out).toBe("common/web.yaml\n");
    await expect(runFmt({ paths: [], env: "qa" }, captureIO({}, w.dir))).rejects.toThrow(
      "--env qa: no such environment in edgeplan.yaml; the environments are staging, production",
    );
  });

  it("show --config judges by that file's policies; show --env must be the plan's environment", async () => {
    const w = await startWorld();
    w.manifests({ "web.yaml": MESSY });
    writeFileSync(join(w.dir, "edgeplan.yaml"), "paths: [m]\nenvironments:\n  staging: {}\n");
    const env = { EDGEPLAN_API_URL: w.server.url, EDGEPLAN_API_KEY: w.server.apiKey, NO_COLOR: "1" };
    expect((await runPlan({ paths: [], out: "saved.json", rateLimit: "off" }, captureIO(env, w.dir))).exitCode).toBe(0);
    writeFileSync(
      join(w.dir, "strict.yaml"),
      'policies:\n  - name: no-creates\n    description: Nothing is created.\n    level: warn\n    expression: change.action != "create"\n',
    );
    const judged = captureIO(env, w.dir);
    expect(await runShow("saved.json", { config: "strict.yaml", env: "staging" }, judged)).toBe(0);
    expect(judged.out).toContain("no-creates");
    await expect(runShow("saved.json", { env: "production" }, captureIO(env, w.dir))).rejects.toThrow(
      "--env production: saved.json was made in environment staging, and is shown as it was made: leave out --env, or plan again with --env production",
    );
  });
});
