/**
 * `edgeplan fmt` with the built CLI: a messy manifest rewritten to the golden layout with its comments kept, `--check`
 * on the examples (formatted) and on a messy file, a file with YAML errors left alone, and the result read back to
 * the same objects by `validate`.
 */
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/cli-path.js";
import { runCliIn } from "../helpers/server.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-fmt-"));
  dirs.push(dir);
  return dir;
}

const edgeplan = runCliIn;

const MESSY = `# Checkout and its canary.
backends: {bkdtg_2rFMNyLVAcCk79odY7RXLmHO5iR: 9000,   checkout-canary: 1000}   # stable first
name: 'checkout'
kind: "WeightedBackend"
metadata:
    team: "payments"     # owner
    oncall: "#payments-oncall"
    count: "10"
protect: true
description: >-
  Checkout, 90/10
...
---
# the canary itself
kind: WeightedBackend
backends:
      bkdtg_2rFMShI8Ur050sW2QI0yg26sfMq: 10000
name: checkout-canary
---
saml:
  authorized_groups: [eng, "ops"]
  idp_metadata_file: idp.xml
  allow_idp_initiated: false
route: edghtsrt_2rFM0i4ZlcRW1sJ39HYqDbpjtpE
edge: edghts_2rFLmpE8q3WRHfs3a2LFkfhVsOU
kind: EdgeRoute
circuit_breaker:   absent
`;

const GOLDEN = `# Checkout and its canary.
kind: WeightedBackend
name: checkout
description: >-
  Checkout, 90/10
metadata:
  team: payments # owner
  oncall: "#payments-oncall"
  count: "10"
backends:
  bkdtg_2rFMNyLVAcCk79odY7RXLmHO5iR: 9000
  checkout-canary: 1000
  # stable first
protect: true
---
# the canary itself
kind: WeightedBackend
name: checkout-canary
backends:
  bkdtg_2rFMShI8Ur050sW2QI0yg26sfMq: 10000
---
kind: EdgeRoute
edge: edghts_2rFLmpE8q3WRHfs3a2LFkfhVsOU
route: edghtsrt_2rFM0i4ZlcRW1sJ39HYqDbpjtpE
saml:
  idp_metadata_file: idp.xml
  allow_idp_initiated: false
  authorized_groups:
    - eng
    - ops
circuit_breaker: absent
`;

const IDP = readFileSync(join(REPO_ROOT, "examples", "saml", "idp", "okta.xml"), "utf8");

function messyProject(): string {
  const dir = tempDir();
  mkdirSync(join(dir, "m"));
  writeFileSync(join(dir, "m", "checkout.yaml"), MESSY);
  writeFileSync(join(dir, "m", "idp.xml"), IDP);
  return dir;
}

describe("edgeplan fmt (built CLI)", () => {
  it("rewrites a messy manifest to the canonical layout, keeping its comments and its objects", async () => {
    const dir = messyProject();
    const before = await edgeplan(dir, ["validate", "m"]);
    chmodSync(join(dir, "m", "checkout.yaml"), 0o600);
    const r = await edgeplan(dir, ["fmt", "m"]);
    expect(r).toEqual({ code: 0, stdout: "m/checkout.yaml\n", stderr: "formatted 1 file of 1\n" });
    expect(readFileSync(join(dir, "m", "checkout.yaml"), "utf8")).toBe(GOLDEN);
    // Written atomically over the file, which keeps its permissions; no temporary file is left.
    expect(statSync(join(dir, "m", "checkout.yaml")).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, "m")).sort()).toEqual(["checkout.yaml", "idp.xml"]);
    // The same objects, the same diagnostics (none).
    expect(await edgeplan(dir, ["validate", "m"])).toEqual(before);
    expect(before.stdout).toBe("1 file, 3 objects: 0 errors, 0 warnings\n");
    // Formatted once, it stays as it is.
    expect(await edgeplan(dir, ["fmt", "m"])).toEqual({ code: 0, stdout: "", stderr: "formatted 0 files of 1\n" });
  });

  it("--check writes nothing, names the files that would change and exits 1", async () => {
    const dir = messyProject();
    writeFileSync(join(dir, "m", "done.yaml"), "kind: WeightedBackend\nname: done\nbackends:\n  bkdtg_2rFMShI8Ur050sW2QI0yg26sfMq: 1\n");
    const r = await edgeplan(dir, ["fmt", "--check", "m"]);
    expect(r).toEqual({ code: 1, stdout: "m/checkout.yaml\n", stderr: "1 file of 2 not formatted; run: edgeplan fmt m\n" });
    expect(readFileSync(join(dir, "m", "checkout.yaml"), "utf8")).toBe(MESSY);
  });

  it("--check passes on the examples", async () => {
    const r = await edgeplan(REPO_ROOT, ["fmt", "--check", "examples"]);
    expect(r).toEqual({ code: 0, stdout: "", stderr: "0 files of 6 not formatted\n" });
  });

  it("leaves a file with YAML errors as it is, reports it and exits 1, and formats the others", async () => {
    const dir = messyProject();
    const broken = "kind: WeightedBackend\nname: [broken\n";
    writeFileSync(join(dir, "m", "broken.yaml"), broken);
    const r = await edgeplan(dir, ["fmt", "m"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("m/checkout.yaml\n");
    expect(r.stderr).toMatch(/^m\/broken\.yaml:\d+:\d+: YAML syntax: .*\nformatted 1 file of 2; 1 error above, its file left as it is\n$/);
    expect(readFileSync(join(dir, "m", "broken.yaml"), "utf8")).toBe(broken);
    expect(readFileSync(join(dir, "m", "checkout.yaml"), "utf8")).toBe(GOLDEN);
  });

  it("takes the project file's paths and skips YAML without a kind", async () => {
    const dir = messyProject();
    writeFileSync(join(dir, "edgeplan.yaml"), "paths: [m]\n");
    writeFileSync(join(dir, "m", "fixtures.yaml"), "edges:   [ ]\n");
    const r = await edgeplan(dir, ["fmt"]);
    expect(r).toEqual({ code: 0, stdout: "m/checkout.yaml\n", stderr: "formatted 1 file of 1\n" });
    expect(readFileSync(join(dir, "m", "checkout.yaml"), "utf8")).toBe(GOLDEN);
    expect(readFileSync(join(dir, "m", "fixtures.yaml"), "utf8")).toBe("edges:   [ ]\n");
  });

  it("writes through a link to the file it names, which stays a link", async () => {
    const dir = tempDir();
    mkdirSync(join(dir, "m", "zz"), { recursive: true });
    writeFileSync(join(dir, "m", "zz", "real.yaml"), MESSY);
    writeFileSync(join(dir, "m", "idp.xml"), IDP);
    // Found first by the walk (sorted), the link stands for the file; the file itself is then not read twice.
    symlinkSync(join("zz", "real.yaml"), join(dir, "m", "a-link.yaml"));
    const r = await edgeplan(dir, ["fmt", "m"]);
    expect(r).toEqual({ code: 0, stdout: "m/a-link.yaml\n", stderr: "formatted 1 file of 1\n" });
    expect(lstatSync(join(dir, "m", "a-link.yaml")).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(dir, "m", "zz", "real.yaml"), "utf8")).toBe(GOLDEN);
  });
});
