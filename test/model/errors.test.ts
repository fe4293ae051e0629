/** errorOutcome: what an error means for the CLI and the Action alike, read from its class and fields only. */
import { describe, expect, it } from "vitest";
import { ApiError, EdgeplanError, errorOutcome, ExitError, InternalError, ManifestError, UnsafePlanError } from "../../src/model/errors.js";
import { buildDeclinedRefusal, buildNoTerminalRefusal, buildRiskRefusal } from "../../src/apply/approval.js";

describe("errorOutcome", () => {
  it("names the rules of a risk refusal, whatever its message says", () => {
    const risk = buildRiskRefusal([
      { rule: "traffic-shift", addresses: ["weighted_backend.a"], message: "90 points move" },
      { rule: "auth-removal", addresses: ["edge_route.e/r.saml"], message: "SAML goes" },
    ]);
    expect(errorOutcome(risk)).toEqual({ exitCode: 1, message: risk.message, diagnostics: [], unacknowledged: ["auth-removal", "traffic-shift"], internal: false });
    // Refusals for other reasons have no rules to acknowledge, even when their message mentions --ack.
    expect(errorOutcome(buildNoTerminalRefusal()).unacknowledged).toEqual([]);
    expect(errorOutcome(buildDeclinedRefusal("no")).unacknowledged).toEqual([]);
    expect(errorOutcome(new UnsafePlanError("use --ack traffic-shift", "declined")).unacknowledged).toEqual([]);
  });

  it("carries manifest diagnostics, exit codes, and tells internal errors apart", () => {
    const diagnostics = [{ severity: "error" as const, pos: { file: "m.yaml", line: 1, col: 2 }, message: "bad" }];
    expect(errorOutcome(new ManifestError(diagnostics))).toMatchObject({ exitCode: 1, message: "m.yaml:1:2: bad", diagnostics });
    expect(errorOutcome(new ExitError(3))).toEqual({ exitCode: 3, message: "", diagnostics: [], unacknowledged: [], internal: false });
    expect(errorOutcome(new ApiError("GET", "/x", 500, undefined, "boom", undefined)).exitCode).toBe(1);
    expect(errorOutcome(new InternalError("a bug")).internal).toBe(true);
    expect(errorOutcome(new EdgeplanError("plain")).internal).toBe(false);
    const thrown = errorOutcome(new TypeError("x is undefined"));
    expect(thrown).toMatchObject({ exitCode: 1, internal: true });
    expect(thrown.message.startsWith("internal error: TypeError: x is undefined\n    at ")).toBe(true);
    expect(errorOutcome("a string")).toMatchObject({ exitCode: 1, message: "internal error: a string", internal: true });
  });
});
