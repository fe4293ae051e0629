/** The reason a halted or paused rollout keeps in its owner marker: bounded, no body, no URL query or credentials. */
import { describe, expect, it } from "vitest";
import { boundReason, HALT_REASON_MAX, summarizeValue } from "../../src/core/halt-record.js";

describe("boundReason", () => {
  it("keeps a URL without its query, fragment or credentials", () => {
    expect(boundReason("check GET https://u:pw@status.example.com/health?token=s3cret#x failed 3 times: HTTP 503, expected a 2xx status")).toBe(
      "check GET https://status.example.com/health?… failed 3 times: HTTP 503, expected a 2xx status",
    );
    expect(boundReason("inconclusive: p99: unreachable after 3 attempts (GET http://127.0.0.1:9090/q?x=1: ECONNREFUSED)")).toBe(
      "inconclusive: p99: unreachable after 3 attempts (GET http://127.0.0.1:9090/q?… ECONNREFUSED)",
    );
  });

  it("flattens control characters and cuts a long reason at HALT_REASON_MAX characters", () => {
    expect(boundReason("a\r\n\tb\u0000c")).toBe("a b c");
    const long = boundReason(`check ${"x".repeat(5000)}`);
    expect([...long].length).toBe(HALT_REASON_MAX);
    expect(long.endsWith("…")).toBe(true);
    expect(boundReason(long)).toBe(long);
  });
});

describe("summarizeValue", () => {
  it("shows numbers, booleans and short words; says what any other value is, never its content", () => {
    expect([1.5, Number.POSITIVE_INFINITY, true, null, "degraded"].map(summarizeValue)).toEqual(["1.5", "Infinity", "true", "null", '"degraded"']);
    expect(summarizeValue("<html><body>secret</body></html>")).toBe("a text of 32 characters, not a number");
    expect(summarizeValue([1, 2])).toBe("a list of 2 items, not a number");
    expect(summarizeValue({ token: "s3cret" })).toBe("an object, not a number");
  });
});
