/**
 * `edgeplan show PLANFILE` end to end: a plan saved by the built CLI against the real server, shown again in each
 * format without the server; a tampered file and a file that is not JSON are refused with exit 1.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../helpers/server.js";
import { closeWorlds, HR1, HR2, startWorld, wbYaml } from "../apply/e2e.js";

afterAll(closeWorlds);

describe("edgeplan show (built CLI)", () => {
  it("renders a saved plan in every format, without contacting the API", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": wbYaml("checkout", { [HR1]: 9000, [HR2]: 1000 }) });
    const planned = await w.cli(["plan", "m", "--out", "saved.json"]);
    expect(planned.code).toBe(0);
    const file = join(w.dir, "saved.json");
    const before = w.log().length;

    // Run where the server is unknown: show needs no API.
    const show = (...args: string[]) => runCli(["show", file, ...args], { NO_COLOR: "1", EDGEPLAN_API_URL: "", EDGEPLAN_API_KEY: "" });
    const text = await show();
    expect(text).toEqual({ code: 0, stdout: planned.stdout, stderr: "" });
    expect(text.stdout).toBe(TEXT);

    const json = await show("--format", "json");
    expect(json.code).toBe(0);
    expect(json.stdout).toBe(readFileSync(file, "utf8"));

    const md = await show("--format", "markdown");
    expect(md.code).toBe(0);
    expect(md.stdout).toMatch(/^### edgeplan plan: stack `default`\n/);
    expect(md.stdout).toContain("weighted_backend.checkout");

    const html = await show("--format", "html");
    expect(html.code).toBe(0);
    expect(html.stdout).toMatch(/^<!DOCTYPE html>/i);
    expect(html.stdout).toContain("weighted_backend.checkout");
    expect(w.log().length).toBe(before);
  });

  it("refuses a tampered plan and a file that is not JSON, with exit 1 and what to do", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": wbYaml("checkout", { [HR1]: 9000, [HR2]: 1000 }) });
    expect((await w.cli(["plan", "m", "--out", "saved.json"])).code).toBe(0);
    const saved = JSON.parse(readFileSync(join(w.dir, "saved.json"), "utf8"));
    // The weights shown stay 9000/1000; the request would send 1/9999.
    saved.changes[0].request.body.backends = { [HR1]: 1, [HR2]: 9999 };
    writeFileSync(join(w.dir, "tampered.json"), JSON.stringify(saved));
    const tampered = await w.cli(["show", "tampered.json"]);
    expect(tampered.code).toBe(1);
    expect(tampered.stdout).toBe("");
    expect(tampered.stderr).toBe(TAMPERED);

    writeFileSync(join(w.dir, "notes.txt"), "not a plan\n");
    const notJson = await w.cli(["show", "notes.txt"]);
    expect(notJson).toEqual({
      code: 1,
      stdout: "",
      stderr: "edgeplan: notes.txt: the file is not JSON, so it is not a saved plan; make one with: edgeplan plan --out notes.txt\n",
    });
    const missing = await w.cli(["show", "gone.json"]);
    expect(missing).toEqual({
      code: 1,
      stdout: "",
      stderr: "edgeplan: gone.json: cannot read the saved plan (no such file); make one with: edgeplan plan --out gone.json\n",
    });
  });
});

const TEXT = `edgeplan will make these changes (stack "default"); symbols:
  +  create

  # weighted_backend.checkout will be created (m/checkout.yaml:1:1)
  + weighted_backend.checkout
      + description: ""
      + metadata: {"edgeplan":{"name":"checkout","stack":"default"}}
      + backends:
          + ${HR1}: 9000 (90%)
          + ${HR2}: 1000 (10%)

Plan: 1 to create, 0 to update, 0 to delete.
Estimate: apply will send 2 requests (1 write, 1 read to check convergence); at 120/60s and 4 at once, that is about 1 s.
`;
const TAMPERED = `edgeplan: the saved plan tampered.json does not agree with itself (1 disagreement), so it is not shown:
  weighted_backend.checkout: request.body.backends is {"${HR1}":1,"${HR2}":9999}, but the change shows {"${HR1}":9000,"${HR2}":1000}
A saved plan is shown only as edgeplan wrote it: make the plan again (edgeplan plan --out tampered.json).
`;
