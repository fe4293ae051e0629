/**
 * Which child ids a plan reads before writing (`childIdsToRead`) and the errors for those the account does not hold
 * (`findChildIdProblems`): pure, with plain data.
 */
import { describe, expect, it } from "vitest";
import { childIdsToRead, findChildIdProblems } from "../../src/core/child-ids.js";
import { PlanProblems } from "../../src/core/plan-index.js";
import type { ChildReadResult } from "../../src/model/reads.js";
import type { DesiredState, LiveState } from "../../src/model/state.js";
import { desiredWb, hrId, id, liveWb, markerMetadata, pos, wbId } from "./builders.js";

/** The problems found, thrown together as a plan throws them. */
function checkChildIds(d: DesiredState, live: LiveState, read: ChildReadResult): void {
  const problems = new PlanProblems();
  findChildIdProblems(d, live, read, problems);
  problems.throwIfErrors();
}

const desired = (...weightedBackends: DesiredState["weightedBackends"]): DesiredState => ({ weightedBackends, edgeRoutes: [] });
/** A stack lease object, as a running apply keeps one. */
const leaseObject = (n: number) =>
  liveWb(n, {
    backends: {},
    metadata: JSON.stringify({ edgeplan: { stack: "default", lease: { holder: { host: "h", pid: 1, started_at: "", token: "t" }, ttl_ms: 60_000, renewals: 0 } } }),
  });
const NOTHING_READ: ChildReadResult = { found: new Set(), known: new Map() };

describe("childIdsToRead", () => {
  it("reads nothing when every child id is one the live side already references, or a name", () => {
    const live = { weightedBackends: [liveWb(1, { backends: { [hrId(1)]: 1, [hrId(2)]: 1 } })], routes: [] };
    // hrId(2) is added to "b", but "a"'s live object already references it.
    const d = desired(desiredWb("a", { backends: { [hrId(1)]: 1, [hrId(2)]: 1 } }), desiredWb("b", { backends: { [hrId(2)]: 5, a: 5 } }));
    expect(childIdsToRead(d, live)).toEqual([]);
  });

  it("reads each new child backend once, sorted, its type from the prefix, and never a weighted backend", () => {
    const live = { weightedBackends: [liveWb(1)], routes: [] };
    const d = desired(
      desiredWb("a", { backends: { [id("bkdsc", 3)]: 1, [hrId(9)]: 1, [wbId(7)]: 1 } }),
      desiredWb("b", { backends: { [hrId(9)]: 1, [id("bkdfo", 4)]: 1, [id("bkdtg", 5)]: 1 } }),
    );
    expect(childIdsToRead(d, live)).toEqual([
      { type: "failover", id: id("bkdfo", 4) },
      { type: "http_response", id: hrId(9) },
      { type: "static_address", id: id("bkdsc", 3) },
      { type: "tunnel_group", id: id("bkdtg", 5) },
    ]);
  });
});

describe("checkChildIds", () => {
  it("passes when every child id is live, read and found, or a name", () => {
    const live = { weightedBackends: [liveWb(1)], routes: [] };
    const d = desired(desiredWb("a", { backends: { [hrId(1)]: 1, [hrId(2)]: 1, [wbId(1)]: 1, b: 1 } }), desiredWb("b"));
    expect(() => checkChildIds(d, live, { found: new Set([hrId(2)]), known: new Map() })).not.toThrow();
  });

  it("reports every unknown id at its line, with the kind its prefix asks for and a close id of that kind", () => {
    const lease = leaseObject(8);
    const live = { weightedBackends: [liveWb(1, { metadata: markerMetadata("default", "other") }), lease], routes: [] };
    const d = desired(
      desiredWb("a", {
        backends: { [hrId(22)]: 1, [wbId(2)]: 1, [id("bkdtg", 99)]: 1 },
        fieldSources: {
          [`backends.${hrId(22)}`]: pos(5, "m/a.yaml", 3),
          [`backends.${wbId(2)}`]: pos(6, "m/a.yaml", 3),
          [`backends.${id("bkdtg", 99)}`]: pos(7, "m/a.yaml", 3),
        },
      }),
    );
    const read: ChildReadResult = { found: new Set(), known: new Map([["http_response", [hrId(21), id("bkdhr", 555555)]]]) };
    expect(() => checkChildIds(d, live, read)).toThrow(
      [
        `m/a.yaml:5:3: weighted backend "a": child ${hrId(22)} does not exist: this account has no HTTP response backend with that id; did you mean ${hrId(21)}?`,
        `m/a.yaml:6:3: weighted backend "a": child ${wbId(2)} does not exist: this account has no weighted backend with that id; did you mean ${wbId(1)}?`,
        `m/a.yaml:7:3: weighted backend "a": child ${id("bkdtg", 99)} does not exist: this account has no tunnel group backend with that id; check the id, or remove the child`,
      ].join("\n"),
    );
  });

  it("never suggests a lease object", () => {
    const lease = leaseObject(3);
    const d = desired(desiredWb("a", { backends: { [wbId(4)]: 1 } }));
    expect(() => checkChildIds(d, { weightedBackends: [lease], routes: [] }, NOTHING_READ)).toThrow(
      `main.yaml:1:1: weighted backend "a": child ${wbId(4)} does not exist: this account has no weighted backend with that id; check the id, or remove the child`,
    );
  });
});
