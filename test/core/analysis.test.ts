import { describe, expect, it } from "vitest";
import { judgeAnalysis, judgeMeasurement, judgeMetric, type Measurement } from "../../src/core/analysis.js";
import type { RolloutMetric } from "../../src/model/state.js";

function metric(over: Partial<RolloutMetric> = {}): RolloutMetric {
  return {
    name: "error-rate",
    provider: { kind: "prometheus", address: "https://prometheus.example.com", query: "up", timeout_ms: 1000 },
    success: "result < 0.01",
    failure: "result >= 0.05",
    initial_delay_ms: 0,
    interval_ms: 1000,
    count: 3,
    failure_limit: 1,
    ...over,
  };
}

const ok: Measurement = { metric: "error-rate", value: "0.001", verdict: "success", why: "result < 0.01" };
const bad: Measurement = { metric: "error-rate", value: "0.07", verdict: "failure", why: "result >= 0.05" };
const none: Measurement = { metric: "error-rate", value: null, verdict: "inconclusive", why: "no data" };

describe("one measurement", () => {
  it("is a success, a failure or inconclusive by the expressions", () => {
    const m = metric();
    expect(judgeMeasurement(m, { value: 0.001 })).toEqual(ok);
    expect(judgeMeasurement(m, { value: 0.07 })).toEqual(bad);
    expect(judgeMeasurement(m, { value: 0.02 })).toEqual({ metric: "error-rate", value: "0.02", verdict: "inconclusive", why: "neither result < 0.01 nor result >= 0.05" });
    expect(judgeMeasurement(m, { none: "no data" })).toEqual(none);
  });

  it("with success alone, false is a failure; with failure alone, false is a success", () => {
    expect(judgeMeasurement(metric({ failure: null }), { value: 0.02 })).toMatchObject({ verdict: "failure", why: "not result < 0.01" });
    expect(judgeMeasurement(metric({ success: null }), { value: 0.02 })).toMatchObject({ verdict: "success", why: "not result >= 0.05" });
  });

  it("failure wins when both expressions hold", () => {
    expect(judgeMeasurement(metric({ success: "result > 0.0", failure: "result > 0.5" }), { value: 0.7 }).verdict).toBe("failure");
  });

  it("a whole number stays a double, so it compares with doubles", () => {
    expect(judgeMeasurement(metric({ success: "result == 1.0", failure: null }), { value: 1 }).verdict).toBe("success");
    expect(judgeMeasurement(metric({ success: "result < 0.5", failure: null }), { value: 0 }).verdict).toBe("success");
  });

  it("NaN (a ratio without traffic), an evaluation error or a value of another type is inconclusive", () => {
    expect(judgeMeasurement(metric(), { value: Number.NaN })).toEqual({ metric: "error-rate", value: "NaN", verdict: "inconclusive", why: "the value is NaN (no traffic?)" });
    const text = judgeMeasurement(metric(), { value: "down" });
    expect(text.verdict).toBe("inconclusive");
    expect(text.value).toBe('"down"');
    expect(text.why).toMatch(/^result >= 0\.05: /);
    expect(judgeMeasurement(metric({ success: "result == true", failure: null }), { value: true }).verdict).toBe("success");
    expect(judgeMeasurement(metric({ success: "result.ok", failure: null }), { value: { ok: false } }).verdict).toBe("failure");
  });
});

describe("a metric's measurements", () => {
  it("fail once more of them failed than failure_limit allows, without waiting for the rest", () => {
    const m = metric({ count: 3, failure_limit: 1 });
    expect(judgeMetric(m, [bad])).toBeNull();
    expect(judgeMetric(m, [bad, bad])).toBe("failed");
    expect(judgeMetric(metric({ failure_limit: 0 }), [bad])).toBe("failed");
  });

  it("pass after count measurements with no more failures than allowed and none inconclusive", () => {
    const m = metric({ count: 3, failure_limit: 1 });
    expect(judgeMetric(m, [ok, ok])).toBeNull();
    expect(judgeMetric(m, [ok, bad, ok])).toBe("passed");
    expect(judgeMetric(m, [ok, none, ok])).toBe("inconclusive");
    expect(judgeMetric(m, [bad, none, bad])).toBe("failed");
  });
});

describe("the analysis before a step", () => {
  const health = metric({ name: "health", count: 1, failure_limit: 0 });
  const hOk: Measurement = { ...ok, metric: "health" };
  const hNone: Measurement = { ...none, metric: "health", why: "unreachable after 3 attempts (HTTP 503 from https://status.example.com/)" };

  it("goes on when every metric passed", () => {
    expect(judgeAnalysis([metric(), health], [[ok, ok, ok], [hOk]])).toEqual({ kind: "pass" });
  });

  it("rolls back on a failed metric, naming its last failed value and the expression", () => {
    const second = { ...bad, value: "0.09" };
    expect(judgeAnalysis([metric(), health], [[bad, ok, second], [hNone]])).toEqual({ kind: "rollback", reason: "analysis error-rate failed (0.09, result >= 0.05)" });
  });

  it("pauses on an inconclusive metric when none failed", () => {
    expect(judgeAnalysis([metric(), health], [[ok, ok, ok], [hNone]])).toEqual({
      kind: "pause",
      reason: "inconclusive: health: unreachable after 3 attempts (HTTP 503 from https://status.example.com/)",
    });
    expect(judgeAnalysis([metric()], [[none, ok, ok]])).toEqual({ kind: "pause", reason: "inconclusive: error-rate: no data" });
  });

  it("pauses when the measurements were cut short (fewer than count)", () => {
    expect(judgeAnalysis([metric()], [[ok]])).toEqual({ kind: "pause", reason: "inconclusive: error-rate: not measured" });
  });
});
