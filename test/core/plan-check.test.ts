/**
 * The checks of a saved plan against itself (`checkPlan`) and against the live side (`checkPlanAgainstLive`), on
 * plain data: every golden scenario's plan passes both, and each edit a person could make to the file is named.
 */
import { readdirSync, readFileSync, existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { buildLiveState } from "../../src/api/live-state.js";
import { checkPlanAgainstLive } from "../../src/apply/live-check.js";
import { buildSavedPlanLimits, checkPlan } from "../../src/core/plan-check.js";
import { PlanSchema } from "../../src/model/plan-schema.js";
import type { ModuleChange, Plan, WeightedBackendChange } from "../../src/model/plan.js";

const scenarios = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "scenarios");
const withPlans = readdirSync(scenarios)
  .filter((d) => existsSync(path.join(scenarios, d, "plan.json")))
  .sort();

function scenario(name: string): { plan: Plan; live: ReturnType<typeof buildLiveState> } {
  const plan = PlanSchema.parse(JSON.parse(readFileSync(path.join(scenarios, name, "plan.json"), "utf8"))) as Plan;
  const live = JSON.parse(readFileSync(path.join(scenarios, name, "live.json"), "utf8")) as { weighted_backends: never[]; routes: never[] };
  return { plan, live: buildLiveState(live.weighted_backends, live.routes) };
}

describe("checkPlan and checkPlanAgainstLive", () => {
  it.each(withPlans)("find nothing in the plan of scenario %s, as buildPlan made it", (name) => {
    const { plan, live } = scenario(name);
    expect(checkPlan(plan)).toEqual([]);
    expect(checkPlanAgainstLive(plan, live)).toEqual([]);
  });
});

/** The scenario's plan and live side, given to `edit` to change, then both checks. */
function edited(name: string, edit: (plan: Plan, live: ReturnType<typeof buildLiveState>) => void): { own: string[]; live: string[] } {
  const { plan, live } = scenario(name);
  edit(plan, live);
  const words = (d: { address: string; what: string }): string => `${d.address}: ${d.what}`;
  return { own: checkPlan(plan).map(words), live: checkPlanAgainstLive(plan, live).map(words) };
}
const wb = (plan: Plan, i = 0): WeightedBackendChange => plan.changes[i] as WeightedBackendChange;
const CHECKOUT = "weighted_backend.checkout";
const CHECKOUT_ID = "bkdwd_32ELJ018aspm4G7VmSUfOoD6V1v";

describe("checkPlan names each edit of a saved plan", () => {
  it("a request sent with another method or to another path", () => {
    expect(edited("006-update-weights", (p) => Object.assign(wb(p).request, { method: "POST" })).own).toEqual([
      `${CHECKOUT}: request.method is POST, but an update sends PATCH`,
    ]);
    expect(edited("006-update-weights", (p) => Object.assign(wb(p).request, { path: "/backends/weighted/bkdwd_other" })).own).toEqual([
      `${CHECKOUT}: request.path is /backends/weighted/bkdwd_other, but the change's id gives /backends/weighted/${CHECKOUT_ID}`,
    ]);
  });

  it("diffs or weights that are not what before and after give", () => {
    expect(edited("005-update-description-metadata", (p) => (wb(p).diffs = [])).own).toEqual([`${CHECKOUT}: the diffs shown are not what before and after give`]);
    const shares = edited("006-update-weights", (p) => {
      const w = wb(p).weights[0];
      if (w) w.share_after = 50;
    }).own;
    expect(shares).toHaveLength(1);
    expect(shares[0]).toMatch(/^weighted_backend\.checkout: the weights shown are not what before and after give: bkdhr_\w+ is shown as \{.*"share_after":50/);
  });

  it("refs that point away from the create of the child's name, and a change that does not wait for its create", () => {
    expect(edited("010-reference-created-by-name", (p) => (wb(p).refs = { "checkout-canary": CHECKOUT })).own).toEqual([
      `${CHECKOUT}: refs.checkout-canary points at ${CHECKOUT}, but only weighted_backend.checkout-canary, created by this plan, gives the id of child "checkout-canary"`,
    ]);
    expect(edited("010-reference-created-by-name", (p) => (wb(p).depends_on = [])).own).toEqual([
      `${CHECKOUT}: refs.checkout-canary: the change does not wait for weighted_backend.checkout-canary (depends_on)`,
    ]);
  });

  it("dependencies that name no change or form a cycle", () => {
    expect(edited("010-reference-created-by-name", (p) => (wb(p, 1).depends_on = [CHECKOUT])).own).toEqual([
      `${CHECKOUT}: depends_on forms a cycle: ${CHECKOUT} -> weighted_backend.checkout-canary -> ${CHECKOUT}`,
    ]);
    expect(edited("006-update-weights", (p) => (wb(p).depends_on = ["weighted_backend.nothing"])).own).toEqual([
      `${CHECKOUT}: depends_on names weighted_backend.nothing, which the plan does not change`,
    ]);
  });

  it("two changes of one object", () => {
    const found = edited("028-protect-toggle", (p) => {
      const search = wb(p, 1);
      Object.assign(search, { id: CHECKOUT_ID, request: { ...search.request, path: `/backends/weighted/${CHECKOUT_ID}` } });
    }).own;
    expect(found).toEqual([`weighted_backend.search: ${CHECKOUT_ID} is changed by ${CHECKOUT} too; a plan changes an object once`]);
  });

  it("deletes without --prune, or that the orphans do not list as deleted", () => {
    expect(edited("012-orphans-pruned", (p) => (p.options.prune = false)).own).toEqual([
      "weighted_backend.old-blue: a delete needs --prune, and the plan was made without it",
      "weighted_backend.old-storefront: a delete needs --prune, and the plan was made without it",
    ]);
    expect(edited("012-orphans-pruned", (p) => (p.orphans = p.orphans.filter((o) => o.address !== "weighted_backend.old-blue"))).own).toEqual([
      "weighted_backend.old-blue: is deleted, but the plan's orphans do not list it as deleted",
    ]);
  });

  it("a takeover without --takeover, a rollout halt, and a rollout step larger than its max_step", () => {
    expect(edited("017-takeover", (p) => (p.options.takeover = false)).own).toEqual([`${CHECKOUT}: a takeover needs --takeover, and the plan was made without it`]);
    expect(edited("039-rollout-first-step", (p) => Object.assign(wb(p).rollout ?? {}, { phase: "halt" })).own).toEqual([
      `${CHECKOUT}: a halt is written by apply when a check fails; a plan holds one only to write again a rollback that failed`,
    ]);
    expect(edited("039-rollout-first-step", (p) => Object.assign(wb(p).rollout ?? {}, { max_step: 1 })).own).toEqual([
      `${CHECKOUT}: the step moves a share of traffic by more than its max_step, 1 points`,
    ]);
    // The final weights a reviewer reads are those the step leads to: shown otherwise, the plan is refused.
    const final = (p: Plan): Record<string, number> => (wb(p).rollout as { final: Record<string, number> }).final;
    const shownElsewhere = edited("039-rollout-first-step", (p) => {
      const [first, second] = Object.keys(final(p));
      Object.assign(final(p), { [first as string]: final(p)[second as string], [second as string]: final(p)[first as string] });
    });
    expect(shownElsewhere.own).toEqual([`${CHECKOUT}: the weights written are not step 1 of 3 from rollout.from to rollout.final`]);
  });

  it("a module whose after holds a field the kind does not have", () => {
    const found = edited("023-circuit-breaker-replace-and-delete", (p) => {
      const c = p.changes[0] as ModuleChange;
      (c.after as Record<string, unknown>).extra = 1;
      (c.request.body as Record<string, unknown>).extra = 1;
    }).own;
    expect(found[0]).toMatch(/\.circuit_breaker: after is not a circuit breaker module's settings \(its fields, defaults filled\)$/);
    expect(found[1]).toMatch(/\.circuit_breaker: request\.body is \{.*"extra":1.*\}, but the change shows \{/);
  });
});

describe("checkPlanAgainstLive names each change the live side does not allow", () => {
  const setMarker = (live: ReturnType<typeof buildLiveState>, marker: unknown): void => {
    const object = live.weightedBackends.find((l) => l.id === CHECKOUT_ID);
    if (object) object.metadata = JSON.stringify({ edgeplan: marker });
  };

  it("an update of an object another stack owns, and a before that is not the object", () => {
    const owned = edited("006-update-weights", (_p, live) => setMarker(live, { stack: "other", name: "checkout" })).live;
    expect(owned).toContain(`${CHECKOUT}: ${CHECKOUT_ID} belongs to stack "other" as "checkout", so stack "default" does not change it as "checkout"`);
    const changed = edited("006-update-weights", (p) => Object.assign(wb(p).before ?? {}, { description: "shown" })).live;
    expect(changed).toEqual([expect.stringMatching(/^weighted_backend\.checkout: before\.description is "shown", but bkdwd_\w+ holds "/)]);
  });

  it("an adoption of an object with a marker, a takeover of its own stack's object, a rename of another name's", () => {
    const adopted = edited("015-adopt-by-id", (_p, live) => setMarker(live, { stack: "default", name: "x" })).live;
    expect(adopted).toContain(`weighted_backend.legacy-api: ${CHECKOUT_ID} belongs to stack "default" as "x", so it is not adopted: only an object with no marker is`);
    const taken = edited("017-takeover", (_p, live) => setMarker(live, { stack: "default", name: "checkout" })).live;
    expect(taken).toContain(`${CHECKOUT}: ${CHECKOUT_ID} belongs to stack "default" as "checkout", so it is not taken over: only another stack's object is`);
    const renamed = edited("014-rename", (_p, live) => setMarker(live, { stack: "other", name: "checkout" })).live;
    expect(renamed).toContain(
      `weighted_backend.checkout-eu: ${CHECKOUT_ID} belongs to stack "other" as "checkout", so it is not renamed to "checkout-eu" by stack "default"`,
    );
  });

  it("a delete of an object whose live marker is protected", () => {
    const found = edited("012-orphans-pruned", (_p, live) => setMarker(live, { stack: "default", name: "old-blue", protect: true })).live;
    expect(found).toContain(`weighted_backend.old-blue: ${CHECKOUT_ID} is protected (protect: true in its owner marker): edgeplan never deletes it`);
  });
});

describe("buildSavedPlanLimits", () => {
  const plan = { options: { prune: false, takeover: false, max_shift: 100, max_deletes: 500, targets: [], excludes: [] } };
  it("takes the flags given to apply, else the plan's thresholds no looser than the defaults", () => {
    expect(buildSavedPlanLimits(plan, {}, 0)).toEqual({ maxShift: 50, maxDeletes: 10 });
    expect(buildSavedPlanLimits(plan, {}, 1000)).toEqual({ maxShift: 50, maxDeletes: 300 });
    expect(buildSavedPlanLimits(plan, { maxShift: 95, maxDeletes: 400 }, 0)).toEqual({ maxShift: 95, maxDeletes: 400 });
    expect(buildSavedPlanLimits({ options: { ...plan.options, max_shift: 20, max_deletes: 3 } }, {}, 1000)).toEqual({ maxShift: 20, maxDeletes: 3 });
  });
});
