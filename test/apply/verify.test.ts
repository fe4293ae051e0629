/**
 * The pure parts of apply: staleness of a saved plan, what is read again after a run and how it joins the live
 * state, the convergence verdicts, the refusals, and the report.
 */
import { describe, expect, it } from "vitest";
import { buildRiskRefusal, parseAckRules, unacknowledgedRisks } from "../../src/apply/approval.js";
import type { ApplyOutcome, ApplyReport, ChangeResult } from "../../src/model/apply-report.js";
import { buildApplyHeadline, renderApplyJson, renderApplyMarkdown, renderApplyText } from "../../src/render/apply-report.js";
import { buildStalePlanError, buildTouchedByPlan, diffStale } from "../../src/apply/stale.js";
import { buildConvergenceFromPlan, buildConvergenceFromReplan, buildOutputsFromLive, buildTouchedAfterRun, mergeLive, settleHalted } from "../../src/apply/verify.js";
import { diffOutputs } from "../../src/core/outputs.js";
import { buildPlan, DEFAULT_MAX_SHIFT } from "../../src/core/plan.js";
import { EdgeplanError, StalePlanError, UnsafePlanError } from "../../src/model/errors.js";
import type { Plan } from "../../src/model/plan.js";
import { renderJson } from "../../src/render/json.js";
import type { LiveState } from "../../src/model/state.js";
import {
  absent,
  CB,
  desiredRoute,
  desiredWb,
  EDGE,
  hrId,
  inventoryMetadata,
  liveRouteOf,
  liveWb,
  markerMetadata,
  present,
  ROUTE,
  samlModule,
  samlSettings,
  wbId,
} from "../core/builders.js";

const OPTIONS = { stack: "default", prune: true, takeover: false, maxShift: DEFAULT_MAX_SHIFT };
const SAML_ADDR = `edge_route.${EDGE}/${ROUTE}.saml`;
const CB_ADDR = `edge_route.${EDGE}/${ROUTE}.circuit_breaker`;

/** a: update (description), m: create, n: create referencing m, gone: delete (prune), SAML set, circuit breaker deleted. */
function scenario(): { plan: Plan; live: LiveState; desired: Parameters<typeof buildPlan>[0] } {
  const desired = {
    weightedBackends: [desiredWb("a", { description: "A" }), desiredWb("m", { backends: { [hrId(1)]: 100 } }), desiredWb("n", { backends: { m: 100 } })],
    edgeRoutes: [desiredRoute(present(samlSettings()), absent())],
  };
  const live: LiveState = {
    weightedBackends: [
      liveWb(1, { description: "old", metadata: markerMetadata("default", "a") }),
      liveWb(2, { metadata: markerMetadata("default", "gone"), backends: { [hrId(2)]: 100 } }),
      liveWb(3, { metadata: JSON.stringify({ team: "other" }) }),
      // The stack's inventory: it set the circuit breaker the manifest now says absent.
      liveWb(4, { metadata: inventoryMetadata("default", [CB_ADDR]) }),
    ],
    routes: [liveRouteOf(null, CB)],
  };
  return { plan: buildPlan(desired, live, OPTIONS), live, desired };
}

function outcomeOf(plan: Plan, statuses: Record<string, ChangeResult["status"]>, createdIds: Record<string, string>): ApplyOutcome {
  const results: ChangeResult[] = plan.changes.map((c) => {
    const status = statuses[c.address] ?? "done";
    return {
      address: c.address,
      kind: c.kind,
      action: c.action,
      status,
      id: c.kind === "weighted_backend" || c.kind === "inventory" ? (c.id ?? createdIds[c.address] ?? null) : null,
      ms: status === "done" || status === "failed" ? 5 : null,
      message: status,
    };
  });
  const counts = { done: 0, failed: 0, skipped: 0, not_started: 0 };
  for (const r of results) counts[r.status]++;
  return { results, createdIds, interrupted: counts.not_started > 0, counts };
}

describe("the scenario plan", () => {
  it("has the changes the tests below rely on", () => {
    const { plan } = scenario();
    expect(plan.changes.map((c) => `${c.address} ${c.action}`)).toEqual([
      `${CB_ADDR} delete`,
      `${SAML_ADDR} replace`,
      // The SAML module is declared for the first time: recorded, and the deleted circuit breaker forgotten.
      "inventory.default#1 update",
      "weighted_backend.a update",
      "weighted_backend.gone delete",
      "weighted_backend.m create",
      "weighted_backend.n create",
    ]);
  });
});

describe("staleness of a saved plan", () => {
  it("reads again exactly the objects the plan touches", () => {
    const { plan } = scenario();
    expect(buildTouchedByPlan(plan)).toEqual({
      weightedBackendIds: [wbId(4), wbId(1), wbId(2)],
      modules: [
        { edge: EDGE, route: ROUTE, module: "circuit_breaker" },
        { edge: EDGE, route: ROUTE, module: "saml" },
      ],
    });
  });

  it("is fresh when nothing changed", () => {
    const { plan, live } = scenario();
    expect(diffStale(plan, live)).toEqual([]);
  });

  it("names each object that changed, vanished, appeared with a planned create's marker, or whose module changed", () => {
    const { plan } = scenario();
    const now: LiveState = {
      weightedBackends: [
        liveWb(1, { description: "edited by hand", metadata: markerMetadata("default", "a") }),
        liveWb(3, { metadata: JSON.stringify({ team: "other" }) }),
        liveWb(9, { metadata: markerMetadata("default", "m") }),
        liveWb(10, { metadata: markerMetadata("another-stack", "n") }),
        liveWb(4, { metadata: inventoryMetadata("default", [CB_ADDR]) }),
      ],
      routes: [liveRouteOf(samlModule(ROUTE), null)],
    };
    const stale = diffStale(plan, now);
    expect(stale).toEqual([
      { address: CB_ADDR, id: null, reason: "was deleted since the plan was made" },
      { address: SAML_ADDR, id: null, reason: "was set since the plan was made" },
      { address: "weighted_backend.a", id: wbId(1), reason: "changed since the plan was made" },
      { address: "weighted_backend.gone", id: wbId(2), reason: "no longer exists" },
      { address: "weighted_backend.m", id: wbId(9), reason: `is planned as a create, but ${wbId(9)} carries its owner marker by now` },
    ]);
    const err = buildStalePlanError("plan.json", stale, "edgeplan plan m --out plan.json");
    expect(err).toBeInstanceOf(StalePlanError);
    expect(err.exitCode).toBe(1);
    expect(err.addresses).toEqual([CB_ADDR, SAML_ADDR, "weighted_backend.a", "weighted_backend.gone", "weighted_backend.m"]);
    expect(err.message).toBe(
      [
        "the saved plan plan.json is stale: 5 objects it touches have changed since it was made:",
        `  ${CB_ADDR}: was deleted since the plan was made`,
        `  ${SAML_ADDR}: was set since the plan was made`,
        `  weighted_backend.a (${wbId(1)}): changed since the plan was made`,
        `  weighted_backend.gone (${wbId(2)}): no longer exists`,
        `  weighted_backend.m: is planned as a create, but ${wbId(9)} carries its owner marker by now`,
        "No change was sent. Plan again with: edgeplan plan m --out plan.json; or pass --refresh to plan again from the manifests and apply that.",
      ].join("\n"),
    );
  });
});

describe("after the run", () => {
  const created = { "weighted_backend.m": wbId(20), "weighted_backend.n": wbId(21) };

  it("reads again what ran (planned ids and created ids), plus the SAML routes whose outputs are shown", () => {
    const { plan } = scenario();
    const outcome = outcomeOf(plan, { "weighted_backend.n": "skipped", "weighted_backend.gone": "failed" }, { "weighted_backend.m": wbId(20) });
    expect(buildTouchedAfterRun(plan, outcome)).toEqual({
      weightedBackendIds: [wbId(1), wbId(2), wbId(4), wbId(20)],
      modules: [
        { edge: EDGE, route: ROUTE, module: "circuit_breaker" },
        { edge: EDGE, route: ROUTE, module: "saml" },
      ],
    });
    const other = { edge: EDGE, route: "edghtsrt_000000000000000000000000009" };
    expect(buildTouchedAfterRun(plan, outcome, [other]).modules).toContainEqual({ ...other, module: "saml" });
  });

  /** The live side as a complete run leaves it. */
  function converged(): LiveState {
    return {
      weightedBackends: [
        liveWb(1, { description: "A", metadata: markerMetadata("default", "a") }),
        liveWb(20, { metadata: markerMetadata("default", "m") }),
        liveWb(21, { metadata: markerMetadata("default", "n"), backends: { [wbId(20)]: 100 } }),
        liveWb(4, { metadata: inventoryMetadata("default", [SAML_ADDR]) }),
      ],
      routes: [liveRouteOf(samlModule(ROUTE, { authorized_groups: ["engineering"] }), null)],
    };
  }

  it("merges the re-read objects into the live state read before, and plans again to converged", () => {
    const { plan, live, desired } = scenario();
    const outcome = outcomeOf(plan, {}, created);
    const touched = buildTouchedAfterRun(plan, outcome);
    const merged = mergeLive(live, touched, converged());
    expect(merged.weightedBackends.map((w) => w.id)).toEqual([wbId(1), wbId(3), wbId(4), wbId(20), wbId(21)]); // 2 deleted, 3 untouched
    expect(merged.routes).toHaveLength(1);
    expect(merged.routes[0]?.saml?.entity_id).toBe(`https://idp.edgeplan.localhost/saml/${ROUTE}`);
    expect(merged.routes[0]?.circuit_breaker).toBeNull();
    expect(buildConvergenceFromReplan(buildPlan(desired, merged, OPTIONS))).toEqual({ checked: true, converged: true, remaining: [] });
  });

  it("names what still differs after a partial run", () => {
    const { plan, live, desired } = scenario();
    const outcome = outcomeOf(plan, { "weighted_backend.n": "failed" }, { "weighted_backend.m": wbId(20) });
    const touched = buildTouchedAfterRun(plan, outcome);
    const reread = converged();
    reread.weightedBackends = reread.weightedBackends.filter((w) => w.id !== wbId(21));
    const verdict = buildConvergenceFromReplan(buildPlan(desired, mergeLive(live, touched, reread), OPTIONS));
    expect(verdict).toEqual({ checked: true, converged: false, remaining: [{ address: "weighted_backend.n", reason: "will be created" }] });
  });

  it("checks a saved plan against its own after values", () => {
    const { plan } = scenario();
    expect(buildConvergenceFromPlan(plan, outcomeOf(plan, {}, created), converged())).toEqual({ checked: true, converged: true, remaining: [] });

    const reread = converged();
    reread.weightedBackends = [
      liveWb(1, { description: "someone else", metadata: markerMetadata("default", "a") }),
      liveWb(2, { metadata: markerMetadata("default", "gone"), backends: { [hrId(2)]: 100 } }),
      liveWb(20, { metadata: markerMetadata("default", "m") }),
      liveWb(21, { metadata: markerMetadata("default", "n"), backends: { [wbId(20)]: 100 } }),
      liveWb(4, { metadata: inventoryMetadata("default", [SAML_ADDR]) }),
    ];
    const verdict = buildConvergenceFromPlan(plan, outcomeOf(plan, { [SAML_ADDR]: "not_started" }, created), reread);
    expect(verdict.converged).toBe(false);
    expect(verdict.remaining).toEqual([
      { address: SAML_ADDR, reason: "will be set (the route has none yet) (not started)" },
      { address: "weighted_backend.a", reason: "still differs from the plan" },
      { address: "weighted_backend.gone", reason: "still exists" },
    ]);
  });

  it("takes the outputs from the SAML module as read now", () => {
    const { plan } = scenario();
    expect(plan.outputs[0]?.known_after_apply).toBe(true);
    const [out] = buildOutputsFromLive(plan.outputs, converged().routes);
    expect(out).toMatchObject({
      address: SAML_ADDR,
      known_after_apply: false,
      entity_id: `https://idp.edgeplan.localhost/saml/${ROUTE}`,
      assertion_consumer_service_url: `https://idp.edgeplan.localhost/saml/${ROUTE}/acs`,
      single_logout_url: `https://idp.edgeplan.localhost/saml/${ROUTE}/slo`,
    });
  });
});

describe("approval", () => {
  it("takes repeated and comma-separated --ack values, and refuses unknown rules listing the rules", () => {
    expect(parseAckRules(["traffic-shift", "mass-delete,auth-removal"])).toEqual(["auth-removal", "traffic-shift", "mass-delete"]);
    expect(() => parseAckRules(["traffic-shift", "trafic", "x"])).toThrow(EdgeplanError);
    expect(() => parseAckRules(["trafic"])).toThrow('--ack: unknown rule "trafic"; the rules are auth-removal, traffic-shift, no-traffic, mass-delete');
  });

  it("refuses risks that are not acknowledged, naming each and the flag", () => {
    // A SAML delete (auth-removal), weights moved from one child to the other (traffic-shift), every weight 0 (no-traffic).
    const p = buildPlan(
      {
        weightedBackends: [desiredWb("a", { backends: { [hrId(1)]: 0, [hrId(2)]: 100 } }), desiredWb("z", { backends: { [hrId(1)]: 0 } })],
        edgeRoutes: [desiredRoute(absent(), absent())],
      },
      {
        weightedBackends: [
          liveWb(1, { metadata: markerMetadata("default", "a"), backends: { [hrId(1)]: 100, [hrId(2)]: 0 } }),
          liveWb(2, { metadata: markerMetadata("default", "z"), backends: { [hrId(1)]: 100 } }),
        ],
        routes: [liveRouteOf(samlModule(ROUTE), null)],
      },
      OPTIONS,
    );
    expect(p.risks.map((r) => r.rule)).toEqual(["auth-removal", "traffic-shift", "no-traffic"]);
    expect(unacknowledgedRisks(p, ["traffic-shift"], false).map((r) => r.rule)).toEqual(["auth-removal", "no-traffic"]);
    expect(unacknowledgedRisks(p, [], true)).toEqual([]);
    const err = buildRiskRefusal(unacknowledgedRisks(p, ["traffic-shift"], false));
    expect(err).toBeInstanceOf(UnsafePlanError);
    const lines = err.message.split("\n");
    expect(lines[0]).toBe("the plan has 2 risks that must be acknowledged before it is applied:");
    expect(lines[1]).toMatch(/^ {2}auth-removal \(--ack auth-removal\): edge_route\..*\.saml: the SAML module is deleted/);
    expect(lines[2]).toMatch(/^ {2}no-traffic \(--ack no-traffic\): weighted_backend\.z: /);
    expect(lines[3]).toBe("No change was sent. If the plan is what you want, apply it with --ack auth-removal --ack no-traffic (or --force to acknowledge every risk).");
  });
});

describe("the report", () => {
  function report(): ApplyReport {
    const { plan } = scenario();
    const outcome = outcomeOf(plan, { "weighted_backend.m": "failed", "weighted_backend.n": "skipped" }, {});
    for (const r of outcome.results) {
      if (r.address === "weighted_backend.m") r.message = "manifests/main.yaml:1:1: POST /backends/weighted: 400 ERR_NGROK_6501: no such backend";
      else if (r.address === "weighted_backend.n") r.message = "depends on weighted_backend.m, which failed";
      else r.message = r.kind === "weighted_backend" || r.kind === "inventory" ? `${r.action}d ${r.id}` : r.action === "delete" ? "deleted" : "set";
    }
    return {
      stack: "default",
      outcome,
      against: "manifests",
      convergence: {
        checked: true,
        converged: false,
        remaining: [
          { address: "weighted_backend.m", reason: "will be created" },
          { address: "weighted_backend.n", reason: "will be created" },
        ],
      },
      outputs: buildOutputsFromLive(plan.outputs, [liveRouteOf(samlModule(ROUTE), null)]),
    };
  }

  it("as text: done, failed, skipped (in that order), the convergence verdict and the outputs", () => {
    expect(renderApplyText(report())).toBe(
      [
        "",
        "Apply finished with failures: 5 done, 1 failed, 1 skipped.",
        `  done     ${CB_ADDR}: deleted (5 ms)`,
        `  done     ${SAML_ADDR}: set (5 ms)`,
        `  done     inventory.default#1: updated ${wbId(4)} (5 ms)`,
        `  done     weighted_backend.a: updated ${wbId(1)} (5 ms)`,
        `  done     weighted_backend.gone: deleted ${wbId(2)} (5 ms)`,
        "  failed   weighted_backend.m: manifests/main.yaml:1:1: POST /backends/weighted: 400 ERR_NGROK_6501: no such backend",
        "  skipped  weighted_backend.n: depends on weighted_backend.m, which failed",
        "",
        "Not converged: 2 objects do not match the manifests yet (edgeplan plan shows the details):",
        "  weighted_backend.m will be created",
        "  weighted_backend.n will be created",
        "",
        "Outputs: copy these into the IdP:",
        `  ${SAML_ADDR}`,
        `    entity id:           https://idp.edgeplan.localhost/saml/${ROUTE}`,
        `    ACS URL:             https://idp.edgeplan.localhost/saml/${ROUTE}/acs`,
        `    SLO URL:             https://idp.edgeplan.localhost/saml/${ROUTE}/slo`,
        `    metadata URL:        https://idp.edgeplan.localhost/saml/${ROUTE}`,
        "    certificate SHA-256: (not available)",
        "",
      ].join("\n"),
    );
  });

  it("shows only the outputs the run set or changed, and says nothing of the others, in text and Markdown", () => {
    const r = report();
    const before = scenario().plan.outputs;
    expect(before.map((o) => o.known_after_apply)).toEqual([true]);
    expect(diffOutputs(before, r.outputs)).toEqual([SAML_ADDR]);
    expect(diffOutputs(r.outputs, r.outputs)).toEqual([]);
    const unchanged = { ...r, changedOutputs: diffOutputs(r.outputs, r.outputs) };
    expect(renderApplyText(unchanged).endsWith("  weighted_backend.n will be created\n")).toBe(true);
    expect(renderApplyText(unchanged)).not.toContain("IdP");
    expect(renderApplyMarkdown(unchanged)).not.toContain("IdP");
    expect(renderApplyText({ ...r, changedOutputs: [SAML_ADDR] })).toBe(renderApplyText(r));
  });

  it("as Markdown and JSON", () => {
    const md = renderApplyMarkdown(report());
    expect(md.startsWith("### edgeplan apply: stack `default`\n\n**Apply finished with failures: 5 done, 1 failed, 1 skipped.**\n")).toBe(true);
    expect(md).toContain("| `weighted_backend.m` | failed | manifests/main.yaml:1:1: POST /backends/weighted: 400 ERR_NGROK_6501: no such backend |");
    expect(md).toContain("- `weighted_backend.n` will be created");
    const { plan } = scenario();
    const json = JSON.parse(renderApplyJson(plan, report())) as Record<string, unknown>;
    expect(json).toMatchObject({
      format_version: 1,
      kind: "apply",
      plan: { format_version: 1, stack: plan.stack },
      report: { status: "failed", counts: { done: 5, failed: 1, skipped: 1, not_started: 0 } },
    });
    expect(JSON.parse(renderApplyJson(plan, null))).toEqual({ format_version: 1, kind: "apply", plan: JSON.parse(renderJson(plan)), report: null });
  });

  it("headlines an interrupted run and a complete one", () => {
    const r = report();
    expect(buildApplyHeadline({ outcome: { ...r.outcome, interrupted: true, counts: { done: 2, failed: 0, skipped: 0, not_started: 4 } }, interruptedBy: "SIGINT" })).toBe(
      "Apply interrupted (SIGINT): 2 done, 4 not started.",
    );
    expect(buildApplyHeadline({ outcome: { ...r.outcome, counts: { done: 6, failed: 0, skipped: 0, not_started: 0 } } })).toBe("Apply complete: 6 done.");
  });

  it("a run that halted a rollout says so, never as a step still to come; a paused one says how to go on", () => {
    const outcome: ApplyOutcome = { results: [], createdIds: {}, interrupted: false, counts: { done: 1, failed: 0, skipped: 0, not_started: 0 } };
    const halted = [{ address: "weighted_backend.web", name: "web", reason: "check GET https://status.example.com/ok failed 3 times: HTTP 503" }];
    const underWay = {
      checked: true,
      converged: true,
      remaining: [],
      inProgress: [{ address: "weighted_backend.web", reason: "rollout step 2 of 3, due at 2026-01-01T00:05:00.000Z" }],
    };
    const settled = settleHalted(underWay, halted);
    expect(settled).toEqual({
      checked: true,
      converged: false,
      remaining: [{ address: "weighted_backend.web", reason: "rollout halted: check GET https://status.example.com/ok failed 3 times: HTTP 503" }],
    });
    const text = renderApplyText({ stack: "default", outcome, convergence: settled, outputs: [], changedOutputs: [], against: "manifests", halted });
    expect(text).toBe(
      [
        "",
        "Apply halted a rollout: 1 done.",
        "  halted  weighted_backend.web: check GET https://status.example.com/ok failed 3 times: HTTP 503; the weights it started from were written back",
        "",
        "Not converged: 1 object does not match the manifests yet (edgeplan plan shows the details):",
        "  weighted_backend.web rollout halted: check GET https://status.example.com/ok failed 3 times: HTTP 503",
        "",
      ].join("\n"),
    );

    const paused = {
      checked: true,
      converged: true,
      remaining: [],
      paused: [{ address: "weighted_backend.web", reason: 'rollout paused before step 2 of 4 (pause step 2 of 4); run "edgeplan rollout promote web" to go on' }],
    };
    expect(renderApplyText({ stack: "default", outcome, convergence: paused, outputs: [], changedOutputs: [], against: "manifests" })).toBe(
      [
        "",
        "Apply complete: 1 done.",
        "",
        "Paused: the live state matches the manifests but for the rollouts that wait for a person:",
        '  weighted_backend.web: rollout paused before step 2 of 4 (pause step 2 of 4); run "edgeplan rollout promote web" to go on',
        "",
      ].join("\n"),
    );
  });
});
