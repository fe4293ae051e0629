import { describe, expect, it } from "vitest";
import { ApplySchedule } from "../../src/apply/schedule.js";
import { InternalError } from "../../src/model/errors.js";
import { moduleChangeOf, wbChange } from "./builders.js";

const A = "weighted_backend.a";
const B = "weighted_backend.b";
const C = "weighted_backend.c";
const D = "weighted_backend.d";
const X = "weighted_backend.x";

describe("ApplySchedule", () => {
  it("starts a change as soon as its own dependencies are done, without waiting for the rest of a level", () => {
    // c <- b <- a (a references b references c), and x alone. x is slow: b must not wait for it.
    const s = new ApplySchedule([wbChange("a", "create", ["b"]), wbChange("b", "create", ["c"]), wbChange("c", "create"), wbChange("x", "update")]);
    expect(s.ready()).toEqual([C, X]);
    s.start(C);
    s.start(X);
    expect(s.ready()).toEqual([]);
    s.succeed(C);
    expect(s.ready()).toEqual([B]); // x is still running
    s.start(B);
    s.succeed(B);
    expect(s.ready()).toEqual([A]);
    s.start(A);
    s.succeed(A);
    expect(s.finished()).toBe(false);
    s.succeed(X);
    expect(s.finished()).toBe(true);
    expect(s.states().map((st) => st.status)).toEqual(["done", "done", "done", "done"]);
  });

  it("orders ready changes: longest chain first, then the rest by address, deletes last", () => {
    const s = new ApplySchedule([
      wbChange("a", "update"),
      wbChange("old", "delete"),
      moduleChangeOf("edghtsrt_1", "saml"),
      wbChange("z", "create"),
      wbChange("y", "create", ["z"]),
    ]);
    expect(s.ready()).toEqual(["weighted_backend.z", "edge_route.edghts_x/edghtsrt_1.saml", A, "weighted_backend.old"]);
  });

  it("deletes a chain from the top down: a delete waits for the delete of the object that referenced it", () => {
    // a references b references c; all three are deleted: a first, c last.
    const s = new ApplySchedule([wbChange("c", "delete", ["b"]), wbChange("b", "delete", ["a"]), wbChange("a", "delete")]);
    const order: string[] = [];
    for (let i = 0; i < 3; i++) {
      const [next] = s.ready();
      expect(s.ready()).toHaveLength(1);
      s.start(next as string);
      s.succeed(next as string);
      order.push(next as string);
    }
    expect(order).toEqual([A, B, C]);
  });

  it("a failure skips every change that depends on it, directly or not, and nothing else", () => {
    const s = new ApplySchedule([
      wbChange("a", "create", ["b"]),
      wbChange("b", "create", ["c"]),
      wbChange("c", "create"),
      wbChange("d", "create"),
      wbChange("x", "update", ["d"]),
    ]);
    s.start(C);
    s.start(D);
    expect(s.fail(C)).toEqual([B, A]);
    expect(s.state(A)).toEqual({ address: A, status: "skipped", blockedBy: C });
    expect(s.state(B)).toEqual({ address: B, status: "skipped", blockedBy: C });
    s.succeed(D);
    expect(s.ready()).toEqual([X]);
    s.start(X);
    s.succeed(X);
    expect(s.finished()).toBe(true);
    expect(Object.fromEntries(s.states().map((st) => [st.address, st.status]))).toEqual({
      [A]: "skipped",
      [B]: "skipped",
      [C]: "failed",
      [D]: "done",
      [X]: "done",
    });
  });

  it("cancel leaves what never started not_started and keeps what ran", () => {
    const s = new ApplySchedule([wbChange("a", "create", ["b"]), wbChange("b", "create"), wbChange("c", "update")]);
    s.start(B);
    s.succeed(B);
    s.start(C);
    expect(s.cancel()).toEqual([A]);
    expect(s.state(A).status).toBe("not_started");
    expect(s.state(C).status).toBe("running");
    s.succeed(C);
    expect(s.finished()).toBe(true);
  });

  it("refuses to start a change whose dependency is not done, and plans with a cycle or an unknown dependency", () => {
    const s = new ApplySchedule([wbChange("a", "create", ["b"]), wbChange("b", "create")]);
    expect(() => s.start(A)).toThrow(InternalError);
    expect(() => new ApplySchedule([wbChange("a", "create", ["b"]), wbChange("b", "create", ["a"])])).toThrow(/dependency cycle/);
    expect(() => new ApplySchedule([wbChange("a", "create", ["nope"])])).toThrow(/not a change of the plan/);
  });

  it("is never stuck with a valid graph, whatever fails", () => {
    const changes = [wbChange("a", "create", ["b", "c"]), wbChange("b", "create", ["d"]), wbChange("c", "create"), wbChange("d", "create")];
    for (const failing of [A, B, C, D]) {
      const s = new ApplySchedule(changes);
      for (let guard = 0; guard < 10 && !s.finished(); guard++) {
        expect(s.stuck()).toBe(false);
        for (const a of s.ready()) {
          s.start(a);
          if (a === failing) s.fail(a);
          else s.succeed(a);
        }
      }
      expect(s.finished()).toBe(true);
      expect(s.state(failing).status).toBe("failed");
    }
  });
});
