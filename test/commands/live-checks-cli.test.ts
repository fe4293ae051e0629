/**
 * The live checks of a plan report every problem at once (the real server in this process, `plan` called in
 * process): a route that does not exist on its edge, an edge that does not exist and a child id the account does
 * not hold are named together, each at its line and with the closest id, and the plan exits 1 with nothing written.
 */
import { afterAll, describe, expect, it } from "vitest";
import { captureIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import { errorOutcome } from "../../src/model/errors.js";
import { closeWorlds, EDGE, FIXTURES, HR1, HR2, R1, R2, startWorld } from "../apply/e2e.js";
import { fakeId } from "../helpers/server.js";

afterAll(closeWorlds);

/** A second edge, so that an edge typo has an edge list to be compared with. */
const EDGE2 = fakeId("edghts", 9001);
const R3 = fakeId("edghtsrt", 9001);
/** One letter O for a zero: each is one edit from exactly one id of the fixtures. */
const ROUTE_TYPO = R1.replace(/8001$/, "80O1");
const EDGE_TYPO = EDGE2.replace(/9001$/, "90O1");
const CHILD_TYPO = HR1.replace(/8001$/, "80O1");

const breaker = "circuit_breaker:\n  tripped_duration: 60\n  rolling_window: 120\n  num_buckets: 10\n  error_threshold_percentage: 0.5\n";
const route = (edge: string, id: string): string => `kind: EdgeRoute\nedge: ${edge}\nroute: ${id}\n${breaker}`;

describe("live checks of a plan", () => {
  it("a route typo, an edge typo and a child-id typo: one run names all three, each with its suggestion (exit 1)", async () => {
    const fixtures = { ...FIXTURES, edges: [...FIXTURES.edges, { id: EDGE2, routes: [{ id: R3, match: "/", match_type: "path_prefix" as const }] }] };
    const w = await startWorld({ fixtures });
    w.manifests({
      "a-route.yaml": route(EDGE, ROUTE_TYPO),
      "b-edge.yaml": route(EDGE_TYPO, R3),
      "c-checkout.yaml": `kind: WeightedBackend\nname: checkout\nbackends:\n  ${HR2}: 1\n  ${CHILD_TYPO}: 1\n`,
      "d-good.yaml": route(EDGE, R2),
    });
    const io = captureIO({ EDGEPLAN_API_URL: w.server.url, EDGEPLAN_API_KEY: w.server.apiKey, NO_COLOR: "1" }, w.dir);
    const err = await runPlan({ paths: ["m"], rateLimit: "off" }, io).catch((e: unknown) => e);
    const outcome = errorOutcome(err);
    expect(outcome.exitCode).toBe(1);
    expect(outcome.message).toBe(
      [
        `m/a-route.yaml:3:8: route ${ROUTE_TYPO} does not exist on edge ${EDGE}; did you mean ${R1}? edgeplan does not create routes or edges: correct the route id, or create the route on the edge first`,
        `m/b-edge.yaml:3:8: edge ${EDGE_TYPO} does not exist (named with route ${R3}); did you mean ${EDGE2}? edgeplan does not create routes or edges: correct the edge id, or create the edge first`,
        `m/c-checkout.yaml:5:3: weighted backend "checkout": child ${CHILD_TYPO} does not exist: this account has no HTTP response backend with that id; did you mean ${HR1}?`,
      ].join("\n"),
    );
    expect(io.out).toBe("");
    expect(w.writes()).toEqual([]);
  });
});
