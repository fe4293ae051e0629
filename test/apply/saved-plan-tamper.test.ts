/**
 * A saved plan is untrusted input: `apply --plan FILE` with the BUILT CLI against the real server, each time with a
 * file edited after `plan --out`. What a user checks: exit 1, the message naming the change and what disagrees,
 * and the server holding exactly what it held before (no write but the lease; none at all when the file disagrees
 * with itself, which is found before anything is sent). An untampered plan still applies (test/apply/cli.test.ts).
 */
import { closeSync, openSync, readFileSync, writeFileSync, ftruncateSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { liveWeightedBackend } from "../../src/api/live-state.js";
import { buildLiveValue, buildWeightedBackendBody, buildWeights, diffWeightedBackendSides } from "../../src/kinds/weighted-backend.js";
import type { ModuleChange, Plan, WeightedBackendChange } from "../../src/model/plan.js";
import { closeWorlds, EDGE, HR1, HR2, IDP_XML, R1, R2, seed, startWorld, wbYaml, type World } from "./e2e.js";
import { weightedBackendFingerprint } from "../../src/model/state.js";

afterAll(closeWorlds);

const routeYaml = (route: string, body: string): string => `kind: EdgeRoute\nedge: ${EDGE}\nroute: ${route}\n${body}`;
const CB_YAML = (tripped: number): string =>
  `circuit_breaker:\n  tripped_duration: ${tripped}\n  rolling_window: 300\n  num_buckets: 5\n  volume_threshold: 20\n  error_threshold_percentage: 0.2\n`;
const SAML_YAML = "saml:\n  idp_metadata_file: okta.xml\n  allow_idp_initiated: false\n  authorized_groups: [engineering]\n";
const ADVICE = (file: string): string =>
  `No change was sent. A saved plan is applied only as edgeplan wrote it: make the plan again (edgeplan plan --out ${file}), review it, and apply that file.`;

/** Applies `first` from the manifests, then saves the plan of `second` to plan.json and returns it. */
async function savedPlan(w: World, first: Record<string, string>, second: Record<string, string>): Promise<Plan> {
  w.manifests(first);
  expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
  w.manifests(second);
  const planned = await w.cli(["plan", "m", "--out", "plan.json"]);
  expect(planned.code).toBe(0);
  return JSON.parse(readFileSync(join(w.dir, "plan.json"), "utf8")) as Plan;
}

/** What the server holds: every weighted backend (a lease left behind would show), and the edge with its routes' modules. */
async function held(w: World): Promise<unknown> {
  const edge = await w.raw.get(`/edges/https/${EDGE}`);
  expect(edge.status).toBe(200);
  return { weightedBackends: await w.list(), edge: edge.json };
}

interface Refused {
  stderr: string;
  /** Requests the refused run sent. */
  sent: string[];
}

/** Writes the tampered plan to t.json, applies it, checks exit 1, no stdout, and an unchanged server. */
async function applyTampered(w: World, plan: unknown, extra: string[] = []): Promise<Refused> {
  writeFileSync(join(w.dir, "t.json"), typeof plan === "string" ? plan : JSON.stringify(plan, null, 2));
  const before = await held(w);
  const mark = w.log().length;
  const run = await w.cli(["apply", "--plan", "t.json", "--auto-approve", ...extra]);
  expect(run.code, run.stderr).toBe(1);
  const sent = w.log(mark).map((l) => `${l.method} ${l.path}`);
  expect(await held(w)).toEqual(before);
  return { stderr: run.stderr, sent };
}

/** The refusal of a file that disagrees with itself: nothing at all was sent. */
function expectSelfRefusal(r: Refused, lines: string[]): void {
  const n = lines.length;
  expect(r.stderr).toBe(
    [
      `edgeplan: the saved plan t.json does not agree with itself (${n} ${n === 1 ? "disagreement" : "disagreements"}), so it is not applied:`,
      ...lines.map((l) => `  ${l}`),
      ADVICE("t.json"),
      "",
    ].join("\n"),
  );
  expect(r.sent).toEqual([]);
}

/** The refusal of a file that disagrees with the live side: the lease taken and released, then reads only. */
function expectLiveRefusal(w: World, r: Refused, lines: string[], mark: number): void {
  const n = lines.length;
  expect(r.stderr).toBe(
    [
      `edgeplan: the saved plan t.json does not agree with the live side (${n} ${n === 1 ? "disagreement" : "disagreements"}), so it is not applied:`,
      ...lines.map((l) => `  ${l}`),
      ADVICE("t.json"),
      "",
    ].join("\n"),
  );
  expect(w.changeWrites(mark)).toEqual([]);
}

const wbChange = (plan: Plan, name: string): WeightedBackendChange => plan.changes.find((c) => c.kind === "weighted_backend" && c.name === name) as WeightedBackendChange;
const moduleChange = (plan: Plan, kind: "saml" | "circuit_breaker"): ModuleChange => plan.changes.find((c) => c.kind === kind) as ModuleChange;
const json = (v: unknown): string => JSON.stringify(v);

describe.concurrent("apply --plan: a tampered saved plan is refused, and the server is left as it was", { timeout: 90_000 }, () => {
  it("a weighted backend update whose body differs from the change it shows", async () => {
    const w = await startWorld();
    const plan = await savedPlan(w, { "x.yaml": wbYaml("x", { [HR1]: 9000, [HR2]: 1000 }) }, { "x.yaml": wbYaml("x", { [HR1]: 5000, [HR2]: 5000 }) });
    const x = wbChange(plan, "x");
    const shown = x.request.body?.backends;
    (x.request.body as { backends: Record<string, number> }).backends = { [HR1]: 0, [HR2]: 10000 };
    const r = await applyTampered(w, plan);
    expectSelfRefusal(r, [`weighted_backend.x: request.body.backends is ${json({ [HR1]: 0, [HR2]: 10000 })}, but the change shows ${json(shown)}`]);
  });

  it("a weighted backend create whose body differs from the change it shows", async () => {
    const w = await startWorld();
    const plan = await savedPlan(
      w,
      { "x.yaml": wbYaml("x", { [HR1]: 1 }) },
      { "x.yaml": wbYaml("x", { [HR1]: 1 }), "n.yaml": wbYaml("n", { [HR1]: 100 }, { description: "new" }) },
    );
    const n = wbChange(plan, "n");
    (n.request.body as { description: string }).description = "something else";
    const r = await applyTampered(w, plan);
    expectSelfRefusal(r, ['weighted_backend.n: request.body.description is "something else", but the change shows "new"']);
  });

  it("a SAML module whose body differs from the change it shows", async () => {
    const w = await startWorld();
    const plan = await savedPlan(
      w,
      { "r.yaml": routeYaml(R1, SAML_YAML), "okta.xml": IDP_XML },
      { "r.yaml": routeYaml(R1, SAML_YAML.replace("[engineering]", "[engineering, sales]")), "okta.xml": IDP_XML },
    );
    const saml = moduleChange(plan, "saml");
    (saml.request.body as Record<string, unknown>).authorized_groups = ["everyone"];
    const r = await applyTampered(w, plan);
    expect(r.stderr).toContain(`\n  edge_route.${EDGE}/${R1}.saml: request.body is {"allow_idp_initiated":false,"authorized_groups":["everyone"],`);
    expect(r.stderr).toMatch(/, but the change shows \{"allow_idp_initiated":false,"authorized_groups":\["engineering","sales"\],/);
    expect(r.stderr.split("\n")[0]).toBe("edgeplan: the saved plan t.json does not agree with itself (1 disagreement), so it is not applied:");
    expect(r.sent).toEqual([]);
  });

  it("a circuit breaker module whose body differs from the change it shows", async () => {
    const w = await startWorld();
    const plan = await savedPlan(w, { "r.yaml": routeYaml(R2, CB_YAML(120)) }, { "r.yaml": routeYaml(R2, CB_YAML(60)) });
    (moduleChange(plan, "circuit_breaker").request.body as Record<string, unknown>).tripped_duration = 1;
    const r = await applyTampered(w, plan);
    const body = (tripped: number): string =>
      `{"enabled":true,"error_threshold_percentage":0.2,"num_buckets":5,"rolling_window":300,"tripped_duration":${tripped},"volume_threshold":20}`;
    expectSelfRefusal(r, [`edge_route.${EDGE}/${R2}.circuit_breaker: request.body is ${body(1)}, but the change shows ${body(60)}`]);
  });

  it("the owner marker dropped from the metadata", async () => {
    const w = await startWorld();
    const plan = await savedPlan(w, { "x.yaml": wbYaml("x", { [HR1]: 1 }, { description: "one" }) }, { "x.yaml": wbYaml("x", { [HR1]: 1 }, { description: "two" }) });
    const x = wbChange(plan, "x");
    const after = x.after as { metadata: Record<string, unknown> };
    delete after.metadata.edgeplan;
    (x.request.body as { metadata: string }).metadata = "{}";
    const r = await applyTampered(w, plan);
    expectSelfRefusal(r, [
      'weighted_backend.x: after.metadata holds no owner marker, but stack "default" marks "x" {"name":"x","stack":"default"}',
      "weighted_backend.x: the diffs shown are not what before and after give",
    ]);
  });

  it("an extra child in the body and after, which the weights shown leave out", async () => {
    const w = await startWorld();
    const plan = await savedPlan(w, { "x.yaml": wbYaml("x", { [HR1]: 1 }, { description: "one" }) }, { "x.yaml": wbYaml("x", { [HR1]: 1 }, { description: "two" }) });
    const x = wbChange(plan, "x");
    (x.after as { backends: Record<string, number> }).backends[HR2] = 100;
    (x.request.body as { backends: Record<string, number> }).backends[HR2] = 100;
    const r = await applyTampered(w, plan);
    expectSelfRefusal(r, [`weighted_backend.x: the weights shown are not what before and after give: they leave out ${HR2}`]);
  });

  it("refs pointed at another create of the plan", async () => {
    const w = await startWorld();
    const plan = await savedPlan(
      w,
      { "x.yaml": wbYaml("x", { [HR1]: 1 }) },
      { "x.yaml": wbYaml("x", { [HR1]: 1 }), "a.yaml": wbYaml("a", { [HR1]: 1 }), "b.yaml": wbYaml("b", { [HR2]: 1 }), "p.yaml": wbYaml("p", { a: 100 }) },
    );
    const p = wbChange(plan, "p");
    p.refs = { a: "weighted_backend.b" };
    p.depends_on = ["weighted_backend.b"];
    const r = await applyTampered(w, plan);
    expectSelfRefusal(r, ['weighted_backend.p: refs.a points at weighted_backend.b, but only weighted_backend.a, created by this plan, gives the id of child "a"']);
  });

  it("risks emptied (and the threshold raised): a 90-point shift still needs --ack traffic-shift", async () => {
    const w = await startWorld();
    const plan = await savedPlan(w, { "x.yaml": wbYaml("x", { [HR1]: 9000, [HR2]: 1000 }) }, { "x.yaml": wbYaml("x", { [HR1]: 0, [HR2]: 10000 }) });
    expect(plan.risks.map((r) => r.rule)).toEqual(["traffic-shift"]);
    plan.risks = [];
    plan.options.max_shift = 100;
    const r = await applyTampered(w, plan);
    expect(r.stderr).toBe(
      [
        "edgeplan: the plan has 1 risk that must be acknowledged before it is applied:",
        `  traffic-shift (--ack traffic-shift): weighted_backend.x: traffic moves by more than 50 percentage points: ${HR1} from 90% to 0%; ${HR2} from 10% to 100%. ` +
          "Check the weights (a gradual rollout moves traffic in smaller steps), then apply with --ack traffic-shift.",
        "No change was sent. If the plan is what you want, apply it with --ack traffic-shift (or --force to acknowledge every risk).",
        "",
      ].join("\n"),
    );
    const acked = await w.cli(["apply", "--plan", "t.json", "--auto-approve", "--ack", "traffic-shift"]);
    expect(acked.code).toBe(0);
    expect((await w.owned()).get("x")?.backends).toEqual({ [HR1]: 0, [HR2]: 10000 });
  });

  it("a plan made with a looser --max-shift needs it given again on apply, since the rendering does not show it", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 9000, [HR2]: 1000 }) });
    expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 0, [HR2]: 10000 }) });
    expect((await w.cli(["plan", "m", "--max-shift", "95", "--out", "loose.json"])).code).toBe(0);
    const mark = w.log().length;
    const refused = await w.cli(["apply", "--plan", "loose.json", "--auto-approve"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /^edgeplan: the plan has 1 risk that must be acknowledged before it is applied:\n {2}traffic-shift \(--ack traffic-shift\): weighted_backend\.x: traffic moves by more than 50 percentage points/,
    );
    expect(w.changeWrites(mark)).toEqual([]);
    const applied = await w.cli(["apply", "--plan", "loose.json", "--auto-approve", "--max-shift", "95"]);
    expect(applied.code).toBe(0);
    expect((await w.owned()).get("x")?.backends).toEqual({ [HR1]: 0, [HR2]: 10000 });
  });

  it("an update rewritten as the delete of a protected object (orphans, prune and summary made to agree)", async () => {
    const w = await startWorld();
    const plan = await savedPlan(
      w,
      { "x.yaml": wbYaml("x", { [HR1]: 1 }, { description: "one", protect: true }) },
      { "x.yaml": wbYaml("x", { [HR1]: 1 }, { description: "two", protect: true }) },
    );
    const x = wbChange(plan, "x");
    const before = x.before as NonNullable<WeightedBackendChange["before"]>;
    Object.assign(x, {
      action: "delete",
      after: null,
      diffs: diffWeightedBackendSides(before, null),
      weights: buildWeights(before.backends, null, new Map(), new Set()),
      request: { method: "DELETE", path: x.request.path, body: null },
    });
    plan.options.prune = true;
    plan.orphans = [{ address: x.address, id: x.id as string, name: "x", protected: false, action: "delete", reason: "orphan" }];
    plan.summary = { ...plan.summary, update: 0, delete: 1 };
    const mark = w.log().length;
    const r = await applyTampered(w, plan);
    expectLiveRefusal(w, r, [`weighted_backend.x: ${x.id} is protected (protect: true in its owner marker): edgeplan never deletes it`], mark);
  });

  it("another stack's object swapped in, with its id and fingerprint", async () => {
    const w = await startWorld();
    const other = await seed(w, { description: "theirs", metadata: JSON.stringify({ edgeplan: { name: "o", stack: "other" } }), backends: { [HR2]: 7 } });
    const plan = await savedPlan(w, { "x.yaml": wbYaml("x", { [HR1]: 1 }, { description: "one" }) }, { "x.yaml": wbYaml("x", { [HR1]: 1 }, { description: "two" }) });
    const x = wbChange(plan, "x");
    const live = liveWeightedBackend(other);
    const before = buildLiveValue(live);
    const after = x.after as NonNullable<WeightedBackendChange["after"]>;
    Object.assign(x, {
      id: other.id,
      fingerprint: weightedBackendFingerprint(live),
      before,
      diffs: diffWeightedBackendSides(before, after),
      weights: buildWeights(before.backends, after.backends, new Map(), new Set()),
      request: { method: "PATCH", path: `/backends/weighted/${other.id}`, body: buildWeightedBackendBody(after) },
    });
    const mark = w.log().length;
    const r = await applyTampered(w, plan);
    expectLiveRefusal(w, r, [`weighted_backend.x: ${other.id} belongs to stack "other" as "o", so stack "default" does not change it as "x"`], mark);
  });

  it("a summary that does not count the changes", async () => {
    const w = await startWorld();
    const plan = await savedPlan(w, { "x.yaml": wbYaml("x", { [HR1]: 1 }) }, { "x.yaml": wbYaml("x", { [HR1]: 2 }), "n.yaml": wbYaml("n", { [HR1]: 1 }) });
    plan.summary = { ...plan.summary, create: 0, update: 0, total: 0 };
    const r = await applyTampered(w, plan);
    expectSelfRefusal(r, [
      "summary: the summary does not count the plan's changes: create 0 where the plan has 1, update 0 where the plan has 1, total 0 where the plan has 2",
    ]);
  });

  it("a changed stack", async () => {
    const w = await startWorld();
    const plan = await savedPlan(w, { "x.yaml": wbYaml("x", { [HR1]: 1 }) }, { "x.yaml": wbYaml("x", { [HR1]: 2 }) });
    plan.stack = "other";
    const r = await applyTampered(w, plan);
    expectSelfRefusal(r, [
      'weighted_backend.x: the owner marker in after.metadata is {"name":"x","stack":"default"}, but stack "other" marks "x" {"name":"x","stack":"other"}',
    ]);
  });

  it("a file nested 50,000 levels deep, and a file larger than any plan, each refused naming the file", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 1 }) });
    const deep = await applyTampered(w, `{"format_version":1,"stack":${"[".repeat(50_000)}${"]".repeat(50_000)}}`);
    expect(deep.stderr).toBe(
      "edgeplan: --plan t.json: the file nests objects and arrays more than 256 levels deep, more than a saved plan may have; make one with: edgeplan plan --out t.json\n",
    );
    expect(deep.sent).toEqual([]);

    const big = join(w.dir, "big.json");
    const fd = openSync(big, "w");
    ftruncateSync(fd, 256 * 1024 * 1024 + 1); // sparse: the size is there, the disk is not used
    closeSync(fd);
    const mark = w.log().length;
    const run = await w.cli(["apply", "--plan", "big.json", "--auto-approve"]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe("edgeplan: --plan big.json: the file has more than 268435456 bytes, more than any saved plan; make one with: edgeplan plan --out big.json\n");
    expect(w.log(mark)).toEqual([]);
  });
});
