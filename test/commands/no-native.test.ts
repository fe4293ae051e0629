/**
 * validate, plan, apply and export load no native module: only `serve` and `--local` need better-sqlite3, and they
 * import it lazily. Each command runs (built CLI, real server) with `process.dlopen`, through which Node loads every
 * native addon, made to fail; `plan --local` shows that the guard does catch one.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { closeWorlds, HR1, HR2, startWorld, wbYaml } from "../apply/e2e.js";

afterAll(closeWorlds);

const guard = join(mkdtempSync(join(tmpdir(), "edgeplan-no-native-")), "no-native.mjs");
writeFileSync(guard, "process.dlopen = (_module, file) => {\n  throw new Error(`native module loaded: ${file}`);\n};\n");
const NO_NATIVE = { NODE_OPTIONS: `--import=${pathToFileURL(guard).href}` };

describe("commands without a native module", () => {
  it("validate, plan, apply and export run with native modules refused", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": wbYaml("checkout", { [HR1]: 9000, [HR2]: 1000 }) });

    const validate = await w.cli(["validate", "m"], NO_NATIVE);
    expect(validate.stderr).toBe("");
    expect(validate.code).toBe(0);
    const plan = await w.cli(["plan", "m", "--detailed-exitcode"], NO_NATIVE);
    expect(plan.stderr).not.toContain("native module loaded");
    expect(plan.code).toBe(2);
    const apply = await w.cli(["apply", "m", "--auto-approve"], NO_NATIVE);
    expect(apply.code).toBe(0);
    expect([...(await w.owned()).keys()]).toEqual(["checkout"]);
    const exported = await w.cli(["export", "--out", "exported"], NO_NATIVE);
    expect(exported.stderr).not.toContain("native module loaded");
    expect(exported.code).toBe(0);
  });

  it("plan --local needs better-sqlite3, and the guard refuses it", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": wbYaml("checkout", { [HR1]: 9000, [HR2]: 1000 }) });
    const local = await w.cli(["plan", "m", "--local"], NO_NATIVE);
    expect(local.code).toBe(1);
    expect(local.stderr).toMatch(/native module loaded: .*better_sqlite3\.node/);
    const allowed = await w.cli(["plan", "m", "--local"]);
    expect(allowed.code).toBe(0);
  });
});
