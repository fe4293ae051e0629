/** What the apply report says of rollout analyses: every measurement, a rollback with its weights, a pause and how to go on. */
import { describe, expect, it } from "vitest";
import type { ApplyReport } from "../../src/model/apply-report.js";
import { buildApplyReportJson, renderApplyMarkdown, renderApplyText } from "../../src/render/apply-report.js";
import { defaultSummaryLine } from "../../src/render/action.js";

const WB = "weighted_backend.checkout";

function report(over: Partial<ApplyReport>): ApplyReport {
  return {
    stack: "default",
    outcome: { results: [], createdIds: {}, interrupted: false, counts: { done: 0, failed: 0, skipped: 0, not_started: 0 } },
    convergence: { checked: true, converged: true, remaining: [] },
    outputs: [],
    against: "manifests",
    ...over,
  };
}

const measured: ApplyReport["analysis"] = [
  { address: WB, step: 2, steps: 3, metric: "error-rate", value: "0.07", verdict: "failure", why: "result >= 0.05" },
  { address: WB, step: 2, steps: 3, metric: "health", value: null, verdict: "inconclusive", why: "no data" },
];

describe("the apply report of an analysis", () => {
  it("a rollback: each measurement, then the weights written back and why, in text and Markdown", () => {
    const r = report({
      analysis: measured,
      halted: [{ address: WB, name: "checkout", reason: "analysis error-rate failed (0.07, result >= 0.05)", weights: { bkdhr_a: 7000, bkdhr_b: 3000 } }],
    });
    const lines = [
      `measured  ${WB}: error-rate before step 2 of 3: 0.07, failure (result >= 0.05)`,
      `measured  ${WB}: health before step 2 of 3: no value, inconclusive (no data)`,
      `halted  ${WB}: rolled back to 7000/3000: analysis error-rate failed (0.07, result >= 0.05)`,
    ];
    expect(renderApplyText(r)).toContain(`Apply halted a rollout: 0 done.\n${lines.map((l) => `  ${l}`).join("\n")}\n\nConverged`);
    // Markdown escapes what GitHub would read as HTML.
    expect(renderApplyMarkdown(r)).toContain(`\n\n${lines.map((l) => `- ${l.replaceAll(">", "&gt;")}`).join("\n")}\n\n`);
    const json = buildApplyReportJson(r);
    expect(json.status).toBe("halted");
    expect(json.analysis).toEqual(measured);
  });

  it("a pause: why, and the commands that go on or roll back; status paused", () => {
    const r = report({
      analysis: [measured[1] as NonNullable<ApplyReport["analysis"]>[number]],
      paused: [{ address: WB, name: "checkout", reason: "inconclusive: health: no data" }],
    });
    expect(renderApplyText(r)).toContain(
      `  paused  ${WB}: inconclusive (health: no data); run "edgeplan rollout promote checkout" to go on or "edgeplan rollout abort checkout" to roll back\n`,
    );
    expect(buildApplyReportJson(r)).toMatchObject({ status: "paused", paused: [{ address: WB, name: "checkout", reason: "inconclusive: health: no data" }] });
    expect(defaultSummaryLine({ command: "apply", stack: "default", exitCode: 4, hasChanges: true, errors: 0 }, undefined)).toBe(
      "The apply of stack default paused a rollout: it waits for edgeplan rollout promote or abort.",
    );
  });

  it("a halt without weights (an older report) reads as before", () => {
    const r = report({ halted: [{ address: WB, name: "checkout", reason: "HTTP 503" }] });
    expect(renderApplyText(r)).toContain(`  halted  ${WB}: HTTP 503; the weights it started from were written back\n`);
  });
});
