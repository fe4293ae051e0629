/**
 * Scoping a run, end to end: the built CLI against the real server over loopback. `--target` and `--exclude` change
 * only what they name and read less; `ignore_changes` leaves a hand-made change in place; `edgeplan.yaml` gives the
 * paths and stack of a bare `edgeplan apply`, and a flag wins over it.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PlanSchema } from "../../src/model/plan-schema.js";
import { closeWorlds, EDGE, HR1, HR2, markerOf, R1, startWorld, type World } from "../apply/e2e.js";

afterAll(closeWorlds);

const checkout = (a: number, b: number, description = "Checkout"): string =>
  `kind: WeightedBackend\nname: checkout\ndescription: ${description}\nbackends:\n  ${HR1}: ${a}\n  ${HR2}: ${b}\n`;
const search = (description: string): string => `kind: WeightedBackend\nname: search\ndescription: ${description}\nbackends:\n  ${HR1}: 1\n`;
const route = (buckets: number): string =>
  `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${R1}\ncircuit_breaker:\n  tripped_duration: 60\n  rolling_window: 120\n  num_buckets: ${buckets}\n  error_threshold_percentage: 0.5\n`;

/** The requests of the log from `from` on, as `METHOD path`, sorted. */
const requests = (w: World, from: number): string[] =>
  w
    .log(from)
    .map((l) => `${l.method} ${l.path}`)
    .sort();
/**
 * The requests of one apply begun at `from` inside its lease (docs/reliability.md, section 6), sorted: its create
 * and delete are checked and left out; the listing that decides who holds it stays in.
 */
const applyRequests = (w: World, from: number): string[] => {
  w.changeWrites(from);
  return w
    .log(from)
    .slice(1, -1)
    .map((l) => `${l.method} ${l.path}`)
    .sort();
};

/** Applies a first version of everything, then changes all three objects in the manifests. */
async function appliedThenChanged(): Promise<{ w: World; ids: Map<string, string> }> {
  const w = await startWorld();
  w.manifests({ "checkout.yaml": checkout(9000, 1000), "search.yaml": search("Search"), "route.yaml": route(10) });
  expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
  const ids = new Map([...(await w.owned())].map(([name, wb]) => [name, wb.id]));
  w.manifests({ "checkout.yaml": checkout(8000, 2000), "search.yaml": search("Search, new pool"), "route.yaml": route(20) });
  return { w, ids };
}

describe("--target and --exclude (built CLI, real server)", () => {
  it("apply --target changes only the target, and reads no edge when no module is targeted", async () => {
    const { w, ids } = await appliedThenChanged();
    const from = w.log().length;
    const run = await w.cli(["apply", "m", "--auto-approve", "--target", "weighted_backend.checkout"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.startsWith('Targeted plan (only weighted_backend.checkout): the rest of stack "default" is not planned')).toBe(true);
    expect(run.stdout).toContain("Plan: 0 to create, 1 to update, 0 to delete.");
    expect(run.stdout).toContain("Converged: the live state matches the manifests within the targets.");
    expect(w.changeWrites(from).map((l) => `${l.method} ${l.path}`)).toEqual([`PATCH /backends/weighted/${ids.get("checkout")}`]);
    // The lease's listing, one listing to plan, one read of what changed to check convergence; no edge read.
    expect(applyRequests(w, from)).toEqual([
      "GET /backends/weighted",
      "GET /backends/weighted",
      `GET /backends/weighted/${ids.get("checkout")}`,
      `PATCH /backends/weighted/${ids.get("checkout")}`,
    ]);
    const owned = await w.owned();
    expect(owned.get("checkout")?.backends).toEqual({ [HR1]: 8000, [HR2]: 2000 });
    expect(owned.get("search")?.description).toBe("Search");

    const whole = w.log().length;
    const rest = await w.cli(["plan", "m"]);
    // The whole plan reads both: the listing and the page of edges that holds the edge.
    expect(requests(w, whole)).toEqual(["GET /backends/weighted", "GET /edges/https"]);
    expect(rest.stdout).toContain("~ weighted_backend.search");
    expect(rest.stdout).toContain(`~ edge_route.${EDGE}/${R1}.circuit_breaker`);
    expect(rest.stdout).not.toContain("~ weighted_backend.checkout");
  });

  it("apply --target of a module lists the weighted backends only for its lease; --exclude leaves its address alone", async () => {
    const { w, ids } = await appliedThenChanged();
    let from = w.log().length;
    const run = await w.cli(["apply", "m", "--auto-approve", "--target", `edge_route.${EDGE}/*.circuit_breaker`]);
    expect(run.code, run.stderr).toBe(0);
    expect(applyRequests(w, from)).toEqual([
      "GET /backends/weighted",
      `GET /edges/https/${EDGE}`,
      `GET /edges/https/${EDGE}`,
      `PUT /edges/https/${EDGE}/routes/${R1}/circuit_breaker`,
    ]);

    from = w.log().length;
    const excluded = await w.cli(["apply", "m", "--auto-approve", "--exclude", "weighted_backend.search"]);
    expect(excluded.code, excluded.stderr).toBe(0);
    expect(excluded.stdout).toContain("Targeted plan (without weighted_backend.search)");
    expect(w.changeWrites(from).map((l) => `${l.method} ${l.path}`)).toEqual([`PATCH /backends/weighted/${ids.get("checkout")}`]);
    expect((await w.owned()).get("search")?.description).toBe("Search");
    expect((await w.owned()).get("checkout")?.backends).toEqual({ [HR1]: 8000, [HR2]: 2000 });
  });

  it("a saved targeted plan applies only its targets, and refuses --target on top", async () => {
    const { w, ids } = await appliedThenChanged();
    const saved = await w.cli(["plan", "m", "--target", "weighted_backend.search", "--format", "json", "--out", "p.json"]);
    expect(saved.code, saved.stderr).toBe(0);
    const plan = PlanSchema.parse(JSON.parse(saved.stdout));
    expect(plan.targeted).toBe(true);
    expect(plan.options.targets).toEqual(["weighted_backend.search"]);
    expect(plan.changes.map((c) => c.address)).toEqual(["weighted_backend.search"]);

    const refused = await w.cli(["apply", "--plan", "p.json", "--target", "weighted_backend.checkout", "--auto-approve"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("edgeplan: --target and --exclude cannot be combined with --plan");

    const from = w.log().length;
    const applied = await w.cli(["apply", "--plan", "p.json", "--auto-approve"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain("Targeted plan (only weighted_backend.search)");
    expect(w.changeWrites(from).map((l) => `${l.method} ${l.path}`)).toEqual([`PATCH /backends/weighted/${ids.get("search")}`]);
    expect((await w.owned()).get("checkout")?.backends).toEqual({ [HR1]: 9000, [HR2]: 1000 });
  });

  it("refuses an address that names no kind, saying what an address looks like", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": checkout(9000, 1000) });
    const run = await w.cli(["plan", "m", "--target", "checkout"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'edgeplan: --target: expected an address such as weighted_backend.checkout or edge_route.EDGE_ID/ROUTE_ID.saml, starting with weighted_backend or edge_route (* matches within one segment); got "checkout"\n',
    );
    expect(w.log()).toEqual([]);
  });

  it("a mistyped --target is a warning with the nearest address, and an error (exit 1) under --detailed-exitcode", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": checkout(9000, 1000) });
    const warning = "  ! --target weighted_backend.chekout names nothing in the manifests or among the stack's objects; did you mean weighted_backend.checkout?";
    const plain = await w.cli(["plan", "m", "--target", "weighted_backend.chekout"]);
    expect(plain.code).toBe(0);
    expect(plain.stdout + plain.stderr).toContain(warning);
    const detailed = await w.cli(["plan", "m", "--target", "weighted_backend.chekout", "--detailed-exitcode", "--out", "typo.json"]);
    expect(detailed.code).toBe(1);
    expect(detailed.stdout + detailed.stderr).toContain(warning);
    expect(detailed.stderr.trimEnd().split("\n").at(-1)).toBe(
      "edgeplan: a --target names nothing (see the warning above); with --detailed-exitcode that is an error, and no plan was saved",
    );
    expect(existsSync(join(w.dir, "typo.json"))).toBe(false);
  });
});

describe("ignore_changes (built CLI, real server)", () => {
  it("a hand-made change to an ignored field survives an apply, and the plan notes it", async () => {
    const w = await startWorld();
    const manifest = `${checkout(9000, 1000, "Checkout")}ignore_changes: [description]\n`;
    w.manifests({ "checkout.yaml": manifest });
    expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
    const id = (await w.owned()).get("checkout")?.id as string;
    const hand = await w.raw.patch(`/backends/weighted/${id}`, {
      description: "Checkout (incident 4711: on-call)",
      metadata: (await w.owned()).get("checkout")?.metadata,
      backends: { [HR1]: 9000, [HR2]: 1000 },
    });
    expect(hand.status).toBe(200);

    // The manifest moves on elsewhere: the weights change, the description stays as the on-call wrote it.
    w.manifests({ "checkout.yaml": manifest.replace("9000", "7000").replace("1000", "3000") });
    const from = w.log().length;
    const run = await w.cli(["apply", "m", "--auto-approve", "--ack", "traffic-shift"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("  # ignored: description differs\n");
    expect(run.stdout).not.toContain("~ description:");
    expect(w.changeWrites(from).length).toBe(1);
    const after = (await w.owned()).get("checkout");
    expect(after?.description).toBe("Checkout (incident 4711: on-call)");
    expect(after?.backends).toEqual({ [HR1]: 7000, [HR2]: 3000 });

    const again = await w.cli(["plan", "m", "--detailed-exitcode"]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("No changes. Live state matches the manifests.");
    expect(again.stdout).toContain("  # weighted_backend.checkout: ignored: description differs\n");
  });
});

describe("edgeplan.yaml (built CLI, real server)", () => {
  it("a bare `edgeplan apply` takes the file's paths and stack; a flag wins over the file", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": checkout(9000, 1000) });
    writeFileSync(join(w.dir, "edgeplan.yaml"), "paths: [m]\nstack: production\nmax_shift: 30\nconcurrency: 2\n");

    const run = await w.cli(["apply", "--auto-approve"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('edgeplan will make these changes (stack "production")');
    expect(run.stderr).toContain('Applying 1 change to stack "production" (at most 2 at once)');
    const made = (await w.list()).map(markerOf);
    expect(made).toEqual([{ stack: "production", name: "checkout" }]);

    // The file's max_shift (30) makes a 40-point shift a risk; --max-shift on the command line wins.
    w.manifests({ "checkout.yaml": checkout(5000, 5000) });
    const risky = await w.cli(["plan"]);
    expect(risky.stdout).toContain("traffic-shift");
    const flagged = await w.cli(["plan", "--max-shift", "50"]);
    expect(flagged.stdout).not.toContain("traffic-shift");

    const other = await w.cli(["plan", "--stack", "staging"]);
    expect(other.stdout).toContain('edgeplan will make these changes (stack "staging")');
    expect(other.stdout).toContain("+ weighted_backend.checkout");
    const byEnv = await w.cli(["plan"], { EDGEPLAN_STACK: "from-env" });
    expect(byEnv.stdout).toContain('(stack "from-env")');
  });

  it("refuses a project file with problems at file:line:col, before any request, and validate finds them too", async () => {
    const w = await startWorld();
    w.manifests({ "checkout.yaml": checkout(9000, 1000) });
    writeFileSync(join(w.dir, "edgeplan.yaml"), "paths: [m]\nrate_limit: 10/s\napi_key: secret\nconcurency: 3\n");
    const expected =
      'edgeplan.yaml:2:13: rate_limit: expected N/DURATION such as 120/60s, 20/1s or 500/100ms (N >= 1; units ms, s, m, h), or "off"; got "10/s"\n' +
      "edgeplan.yaml:3:1: api_key: the API key never goes in edgeplan.yaml (it would be committed): set EDGEPLAN_API_KEY or pass --api-key-file FILE\n" +
      "edgeplan.yaml:4:1: unknown field concurency; did you mean concurrency?\n";
    const run = await w.cli(["plan"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`${expected}edgeplan: 3 errors in edgeplan.yaml; nothing was sent to the API\n`);
    expect(run.stderr).not.toContain("secret");
    expect(w.log()).toEqual([]);

    const validate = await w.cli(["validate"]);
    expect(validate.code).toBe(1);
    expect(validate.stderr).toBe(expected);
    expect(validate.stdout).toBe("1 file, 1 object: 3 errors, 0 warnings\n");
  });
});
