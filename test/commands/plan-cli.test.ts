/**
 * `edgeplan plan` end to end: the built CLI against the real server over loopback, checking what a user sees:
 * exit codes, the three formats on stdout, the saved plan, and the requests the run made.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { accountFingerprint } from "../../src/api/account.js";
import { PlanSchema } from "../../src/model/plan-schema.js";
import { closeWorlds, EDGE, HR1, HR2, R1, startWorld } from "../apply/e2e.js";

afterAll(closeWorlds);

const CHECKOUT = `kind: WeightedBackend
name: checkout
description: Checkout
backends:
  ${HR1}: 9000
  ${HR2}: 1000
`;
const ROUTE = `kind: EdgeRoute
edge: ${EDGE}
route: ${R1}
circuit_breaker:
  tripped_duration: 60
  rolling_window: 120
  num_buckets: 10
  error_threshold_percentage: 0.5
`;

describe("edgeplan plan (built CLI, real server)", () => {
  it("exits 0 with changes, 2 with --detailed-exitcode, and 0 once applied; reads with the fewest requests", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": CHECKOUT, "route.yaml": ROUTE });

    const from = w.log().length;
    const first = await w.cli(["plan", "m"]);
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("+ weighted_backend.checkout");
    expect(first.stdout).toContain(`+ edge_route.${EDGE}/${R1}.circuit_breaker`);
    // The circuit breaker is declared for the first time: the inventory write that records it is part of the plan.
    expect(first.stdout).toContain("Plan: 3 to create (1 weighted backend, 1 module, 1 inventory record), 0 to update, 0 to delete.");
    // One page of weighted backends, one page of the account's edges (the edge with its routes and modules), and one
    // read of each child id the create introduces: nothing else.
    expect(
      w
        .log(from)
        .map((l) => `${l.method} ${l.path}`)
        .sort(),
    ).toEqual([`GET /backends/http_response/${HR1}`, `GET /backends/http_response/${HR2}`, `GET /backends/weighted`, `GET /edges/https`]);
    expect(w.writes(from)).toEqual([]);

    expect((await w.cli(["plan", "m", "--detailed-exitcode"])).code).toBe(2);
    expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
    const after = await w.cli(["plan", "m", "--detailed-exitcode"]);
    expect(after.code).toBe(0);
    expect(after.stdout).toContain("No changes. Live state matches the manifests.");
  });

  it("prints valid JSON and Markdown on stdout only, and saves the plan with --out", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": CHECKOUT });

    const json = await w.cli(["plan", "m", "--format", "json", "--out", "saved.json"]);
    expect(json.code).toBe(0);
    const plan = PlanSchema.parse(JSON.parse(json.stdout));
    expect(plan.format_version).toBe(1);
    expect(plan.changes.map((c) => [c.address, c.action])).toEqual([["weighted_backend.checkout", "create"]]);
    expect(json.stderr).toContain("plan saved to saved.json; apply it with: edgeplan apply --plan saved.json");
    // The saved plan is stdout's, with the API and account it was made for (which stdout leaves out).
    expect(plan.api).toBeUndefined();
    expect(JSON.parse(readFileSync(join(w.dir, "saved.json"), "utf8"))).toEqual({
      ...plan,
      api: { url: w.server.url, account: accountFingerprint(w.server.url, w.server.apiKey) },
    });

    const md = await w.cli(["plan", "m", "--format", "markdown"]);
    expect(md.code).toBe(0);
    expect(md.stdout).toContain("weighted_backend.checkout");
    expect(md.stdout).toContain("<details>");
    expect(md.stdout).not.toContain("\u001b[");

    const bad = await w.cli(["plan", "m", "--format", "yaml"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("--format");
  });

  it("exits 1 on invalid manifests and sends nothing but the listings it started while they loaded", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": CHECKOUT.replace("9000", "10001") });
    const from = w.log().length;
    const res = await w.cli(["plan", "m"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^m\/checkout\.yaml:5:\d+: .*10001/m);
    expect(res.stderr).toContain("1 error in the manifests; nothing was sent to the API but the listings of its weighted backends and edges\n");
    expect(res.stdout).toBe("");
    expect(
      w
        .log(from)
        .map((l) => `${l.method} ${l.path}`)
        .sort(),
    ).toEqual(["GET /backends/weighted", "GET /edges/https"]);
  });

  it("with every route excluded, reads no edge while invalid manifests load, and says the listing was the one request", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": CHECKOUT.replace("9000", "10001"), "route.yaml": ROUTE });
    const from = w.log().length;
    const res = await w.cli(["plan", "m", "--exclude", "edge_route.*"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("1 error in the manifests; nothing was sent to the API but the listing of its weighted backends\n");
    expect(w.log(from).map((l) => `${l.method} ${l.path}`)).toEqual(["GET /backends/weighted"]);
  });

  it("exits 1 with a key problem explained when the key is refused, and never prints the key", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": CHECKOUT });
    const wrong = "edgeplan-wrong-key-7f3a9c";
    const res = await w.cli(["plan", "m"], { EDGEPLAN_API_KEY: wrong });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("401");
    expect(res.stderr).toContain("EDGEPLAN_API_KEY");
    expect(res.stdout + res.stderr).not.toContain(wrong);
  });

  it("refuses plain http to a host that is not loopback before sending anything", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": CHECKOUT });
    const res = await w.cli(["plan", "m", "--api-url", "http://api.example.com"]);
    expect(res.code).toBe(1);
    expect(res.stderr).toContain("--insecure-http");
  });
});

describe("HTML pages from the CLI", () => {
  it("plan --html FILE writes the page beside another format; apply --html FILE writes the report's page", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": CHECKOUT, "route.yaml": ROUTE });
    const md = await w.cli(["plan", "m", "--format", "markdown", "--html", "plan.html"]);
    expect(md.code).toBe(0);
    expect(md.stdout.startsWith("### edgeplan plan: stack `default`\n")).toBe(true);
    expect(md.stdout).toContain("```mermaid\nflowchart LR\n");
    expect(md.stderr).toBe("plan written to plan.html (HTML; open it in a browser)\n");
    const page = readFileSync(join(w.dir, "plan.html"), "utf8");
    expect(page.startsWith("<!doctype html>\n")).toBe(true);
    expect(page).toContain('<p class="summary">Plan: 3 to create (1 weighted backend, 1 module, 1 inventory record), 0 to update, 0 to delete.</p>');
    // The header says which API was read, and when: the only bytes that differ from one run to the next.
    const header = /<p class="muted">API <code>http:\/\/127\.0\.0\.1:\d+<\/code>, stack <code>default<\/code>, planned at <time datetime="(\S+)">\1<\/time><\/p>/;
    expect(page).toMatch(header);
    const timeless = (html: string): string => html.replace(/<time datetime="\S+">\S+<\/time>/, "<time>");
    // Same plan, same bytes but the time: the page of `--format html` on stdout is the file's.
    expect(timeless((await w.cli(["plan", "m", "--format", "html"])).stdout)).toBe(timeless(page));

    // apply --format html refused (no terminal, no --auto-approve): the plan was asked about on stderr as text, and
    // stdout holds the plan's page, one whole document.
    const refused = await w.cli(["apply", "m", "--format", "html"]);
    expect(refused.code).toBe(1);
    expect(timeless(refused.stdout)).toBe(timeless(page));
    expect(refused.stderr).toContain("Plan: 3 to create (1 weighted backend, 1 module, 1 inventory record), 0 to update, 0 to delete.\n");
    // Only the refused apply's lease was written (the plans before it write nothing).
    expect(w.changeWrites()).toEqual([]);

    const applied = await w.cli(["apply", "m", "--auto-approve", "--html", "report.html"]);
    expect(applied.code).toBe(0);
    expect(applied.stdout).toContain("\nApply complete: 3 done.\n"); // the text report is unchanged
    expect(applied.stderr).toContain("apply report written to report.html (HTML; open it in a browser)\n");
    const report = readFileSync(join(w.dir, "report.html"), "utf8");
    expect(report).toContain('<p class="summary">Apply complete: 3 done.</p>');
    expect(report).toContain('<p class="add">Converged: the live state matches the manifests.</p>');
    expect(report).not.toMatch(/<script|<link|src=|url\(/);
  });
});
