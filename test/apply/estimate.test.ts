/**
 * The plan's request estimate against what the server received: `estimate.requests` is exactly what apply sends
 * from its first write of a change to its last convergence read when nothing fails. Built CLI, real server (its request log),
 * a mixed plan (creates, updates, deletes, module sets, replaces and deletes on several edges) at two sizes: one
 * whose convergence check reads the touched weighted backends by id, one that lists the account instead; and a saved
 * plan, whose check reads by id and reads the outputs' modules too.
 */
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Estimate } from "../../src/model/plan.js";
import { fakeId } from "../helpers/server.js";
import { closeWorlds, FIXTURES, HR1, HR2, IDP_XML, startWorld, wbYaml, type World } from "./e2e.js";

afterAll(closeWorlds);

const EDGES = [1, 2, 3].map((e) => ({
  id: fakeId("edghts", 8100 + e),
  routes: [1, 2].map((r) => ({ id: fakeId("edghtsrt", 8100 + e * 10 + r), match: `/r${r}`, match_type: "path_prefix" as const })),
}));
const ROUTES = EDGES.flatMap((e) => e.routes.map((r) => ({ edge: e.id, route: r.id })));
const CB = (buckets: number): string =>
  `circuit_breaker:\n  tripped_duration: 120\n  rolling_window: 300\n  num_buckets: ${buckets}\n  volume_threshold: 20\n  error_threshold_percentage: 0.2\n`;
const SAML = "saml:\n  idp_metadata_file: okta.xml\n  allow_idp_initiated: false\n";

/** Manifests: weighted backends `w<i>` for i in `names`, each with its weights, and the routes' modules. */
function manifests(names: number[], weightOf: (i: number) => number, modules: string[]): Record<string, string> {
  const files: Record<string, string> = { "okta.xml": IDP_XML };
  for (const i of names) files[`w${i}.yaml`] = wbYaml(`w${i}`, { [HR1]: weightOf(i), [HR2]: 10 });
  files["routes.yaml"] = ROUTES.map((r, k) => `kind: EdgeRoute\nedge: ${r.edge}\nroute: ${r.route}\n${modules[k] ?? ""}`).join("---\n");
  return files;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);
const APPLY = ["apply", "m", "--auto-approve", "--prune", "--force", "--rate-limit", "off", "--format", "json"];

/** The estimate of the plan apply printed (the plan of the one JSON document on its stdout). */
function printedEstimate(stdout: string): Estimate {
  return (JSON.parse(stdout) as { plan: { estimate: Estimate } }).plan.estimate;
}

/**
 * Requests the server received from the first write of a change of the run that began at log index `mark`. The
 * run's lease (docs/reliability.md, section 6) comes around it: its create first, its delete last; the estimate
 * covers neither (nor the listing that decides who holds the lease, before the plan is made), nor the GETs of the
 * lease that a run taking more than 5 s makes to check it is still held (docs/cli.md, "Request estimate").
 */
function fromFirstWrite(w: World, mark: number): { requests: number; writes: number; reads: number } {
  const all = w.log(mark);
  expect(`${all[0]?.method} ${all[0]?.path} ${all[0]?.status}`).toBe("POST /backends/weighted 201");
  expect(`${all[all.length - 1]?.method} ${all[all.length - 1]?.status}`).toBe("DELETE 204");
  const leasePath = all[all.length - 1]?.path;
  const lines = all.slice(1, -1).filter((l) => !(l.method === "GET" && l.path === leasePath));
  const first = lines.findIndex((l) => l.method !== "GET");
  expect(first).toBeGreaterThanOrEqual(0);
  const run = lines.slice(first);
  const writes = run.filter((l) => l.method !== "GET").length;
  expect(
    run.every((l) => l.status < 400 || (l.method === "GET" && l.status === 404)),
    "nothing failed",
  ).toBe(true);
  return { requests: run.length, writes, reads: run.length - writes };
}

/** Runs an apply; what it printed, and what the server received from its first write on. */
async function applyAndCount(w: World, args: string[]): Promise<{ run: { stdout: string }; seen: ReturnType<typeof fromFirstWrite>; mark: number }> {
  const mark = w.log().length;
  const run = await w.cli(args);
  expect(run.code, run.stderr).toBe(0);
  return { run, seen: fromFirstWrite(w, mark), mark };
}

async function setUp(initial: number): Promise<World> {
  const w = await startWorld({ fixtures: { edges: EDGES, backends: FIXTURES.backends } });
  w.manifests(manifests(range(0, initial), () => 50, [CB(5), SAML, CB(5), "", SAML, ""]));
  const first = await w.cli(APPLY);
  expect(first.code, first.stderr).toBe(0);
  return w;
}

/** The mixed change: `creates` new, `updates` re-weighted, `deletes` removed (pruned), and module changes on every edge. */
function mixed(initial: number, counts: { creates: number; updates: number; deletes: number }): Record<string, string> {
  const kept = range(counts.deletes, initial);
  const names = [...kept, ...range(initial, initial + counts.creates)];
  const updated = new Set(kept.slice(0, counts.updates));
  const created = new Set(range(initial, initial + counts.creates));
  // Route 0: CB replaced; 1: SAML deleted; 2: CB deleted; 3: CB set; 4: SAML kept; 5: SAML set.
  // New objects get weights of their own, so that no create and delete pair up as a rename.
  return manifests(names, (i) => (updated.has(i) ? 70 : created.has(i) ? 60 : 50), [CB(10), "saml: absent\n", "circuit_breaker: absent\n", CB(5), SAML, SAML]);
}

describe.concurrent("estimate.requests is what the server receives from the first write on", { timeout: 120_000 }, () => {
  it("a mixed plan whose check reads the touched objects by id (305 objects, 4 of them touched)", async () => {
    const w = await setUp(305);
    w.manifests(mixed(305, { creates: 1, updates: 1, deletes: 1 }));
    const plan = await w.cli(["plan", "m", "--prune", "--rate-limit", "off", "--format", "json"]);
    const planned = (JSON.parse(plan.stdout) as { estimate: Estimate }).estimate;
    const { run, seen, mark } = await applyAndCount(w, APPLY);
    // 3 weighted backends, 5 modules and the inventory object that records the modules written, and the create and
    // delete of the account's claim lease, with its listing (4 pages: 305 objects and the two leases); 4 GETs by id
    // (listing 306 would take 4 pages: not fewer) and the first page of the edge list, which holds the 3 edges
    // that had a module touched.
    expect(seen).toEqual({ requests: 20, writes: 11, reads: 9 });
    expect(printedEstimate(run.stdout)).toMatchObject(seen);
    expect(planned).toEqual({ ...seen, seconds: 1, rate_limit: null, concurrency: 4 });
    expect(w.log(mark).filter((l) => l.method === "GET" && /^\/backends\/weighted\/bkdwd_/.test(l.path)).length).toBe(4);
    // The routes of the 3 edges: one page for the apply's plan, one for its check.
    expect(
      w
        .log(mark)
        .filter((l) => l.method === "GET" && l.path.startsWith("/edges/"))
        .map((l) => l.path),
    ).toEqual(["/edges/https", "/edges/https"]);
  });

  it("a mixed plan whose check lists the account (20 objects, 48 touched)", async () => {
    const w = await setUp(20);
    w.manifests(mixed(20, { creates: 30, updates: 10, deletes: 8 }));
    const { run, seen } = await applyAndCount(w, APPLY);
    // 48 weighted backends, 5 modules and the inventory object written, the claim lease's create, delete and listing
    // (one page); one list page (43 objects) and one page of the edge list (3 edges).
    expect(seen).toEqual({ requests: 59, writes: 56, reads: 3 });
    expect(printedEstimate(run.stdout)).toMatchObject(seen);
  });

  it("a saved plan (one saved without an estimate): its check reads by id, and the SAML modules of its outputs", async () => {
    const w = await setUp(20);
    w.manifests(mixed(20, { creates: 30, updates: 10, deletes: 8 }));
    const saved = await w.cli(["plan", "m", "--prune", "--rate-limit", "off", "--out", "p.json"]);
    expect(saved.code, saved.stderr).toBe(0);
    // A plan saved before plans carried an estimate is applied as well, and estimated again.
    const file = path.join(w.dir, "p.json");
    const { estimate, ...older } = JSON.parse(readFileSync(file, "utf8")) as { estimate: Estimate };
    expect(estimate.writes).toBe(56);
    writeFileSync(file, JSON.stringify(older));
    const { run, seen } = await applyAndCount(w, ["apply", "--plan", "p.json", "--auto-approve", "--force", "--rate-limit", "off", "--format", "json"]);
    // The claim lease's create, delete and listing; 49 GETs by id (48 weighted backends and the inventory object; the
    // deleted ones answer 404) and one page of the edge list (3 edges, the outputs' routes among them).
    expect(seen).toEqual({ requests: 107, writes: 56, reads: 51 });
    expect(printedEstimate(run.stdout)).toMatchObject(seen);
  });
});
