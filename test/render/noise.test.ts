/**
 * Exact texts of what plan, apply and rollout status say, where they used to repeat or contradict themselves: a
 * halted rollout says it was rolled back, the HTML plan says which API it read and when, and the apply report lists
 * a change once when its progress line said it already.
 */
import { describe, expect, it } from "vitest";
import type { ApplyReport } from "../../src/model/apply-report.js";
import type { RolloutStatus } from "../../src/model/rollout-schema.js";
import { renderApplyText } from "../../src/render/apply-report.js";
import { renderHtml } from "../../src/render/html.js";
import { renderRolloutStatusText } from "../../src/render/rollout-status.js";
import { desiredWb, hrId, plan } from "../core/builders.js";

const A = "bkdhr_a";
const B = "bkdhr_b";

function halted(weights: Record<string, number>): RolloutStatus {
  return {
    address: "weighted_backend.web",
    name: "web",
    id: "bkdwd_1",
    status: "halted",
    step: 1,
    steps: 4,
    step_at: "2026-01-01T00:00:00.000Z",
    next_due_at: null,
    weights,
    from: { [A]: 10000, [B]: 0 },
    target: "t1",
    final: { [A]: 0, [B]: 10000 },
    paused: null,
    halted: "check failed: GET https://status.example.com/ answered 503",
    promoted: null,
  };
}

describe("rollout status of a halted rollout", () => {
  it("says it was rolled back to the weights it started from", () => {
    expect(renderRolloutStatusText("default", [halted({ [A]: 10000, [B]: 0 })]).split("\n")[1]).toBe(
      "  weighted_backend.web (bkdwd_1): halted at step 1 of 4: check failed: GET https://status.example.com/ answered 503; " +
        'rolled back to the weights it started from; change the manifest, or run "edgeplan rollout retry web", to start it again',
    );
  });

  it("says when the rollback is not written yet", () => {
    expect(renderRolloutStatusText("default", [halted({ [A]: 7500, [B]: 2500 })]).split("\n")[1]).toBe(
      "  weighted_backend.web (bkdwd_1): halted at step 1 of 4: check failed: GET https://status.example.com/ answered 503; " +
        "not rolled back yet: traffic is still at the step's weights (the next apply writes the starting weights); " +
        'change the manifest, or run "edgeplan rollout retry web", to start it again',
    );
  });
});

describe("the HTML plan's header", () => {
  const p = plan({ wbs: [desiredWb("web", { [hrId(1)]: 100 })] }, {});

  it("names the API and the time without environments", () => {
    const page = renderHtml(p, { api_url: "https://api.example.com", at: "2026-01-01T00:00:00.000Z" });
    expect(page).toContain(
      '<p class="muted">API <code>https://api.example.com</code>, stack <code>default</code>, ' +
        'planned at <time datetime="2026-01-01T00:00:00.000Z">2026-01-01T00:00:00.000Z</time></p>',
    );
  });

  it("names the environment, its API and the time", () => {
    const page = renderHtml({ ...p, environment: { name: "staging", api_url: "https://staging.example.com" } }, { api_url: "x", at: "2026-01-01T00:00:00.000Z" });
    expect(page).toContain(
      '<p class="muted environment">environment <code>staging</code>, API <code>https://staging.example.com</code>, stack <code>default</code>, ' +
        'planned at <time datetime="2026-01-01T00:00:00.000Z">2026-01-01T00:00:00.000Z</time></p>',
    );
  });
});

describe("the apply report after the progress lines", () => {
  const report: ApplyReport = {
    stack: "default",
    against: "manifests",
    outcome: {
      interrupted: false,
      createdIds: { "weighted_backend.a": "bkdwd_1", "weighted_backend.b": "bkdwd_2" },
      counts: { done: 2, failed: 1, skipped: 0, not_started: 0 },
      results: [
        { address: "weighted_backend.a", kind: "weighted_backend", action: "create", status: "done", id: "bkdwd_1", ms: 3, message: "created bkdwd_1" },
        { address: "weighted_backend.b", kind: "weighted_backend", action: "create", status: "done", id: "bkdwd_2", ms: 4, message: "created bkdwd_2" },
        { address: "weighted_backend.c", kind: "weighted_backend", action: "create", status: "failed", id: null, ms: null, message: "POST /backends/weighted: 400 bad" },
      ],
    },
    convergence: { checked: true, converged: false, remaining: [{ address: "weighted_backend.c", reason: "will be created" }] },
    outputs: [],
  };

  it("lists only what was not done, each change once", () => {
    expect(renderApplyText(report, { progressShown: true })).toBe(
      [
        "",
        "Apply finished with failures: 2 done, 1 failed.",
        "  failed  weighted_backend.c: POST /backends/weighted: 400 bad",
        "",
        "Not converged: 1 object does not match the manifests yet (edgeplan plan shows the details):",
        "  weighted_backend.c will be created",
        "",
      ].join("\n"),
    );
  });

  it("lists every change without progress lines (--quiet)", () => {
    expect(renderApplyText(report).split("\n").slice(1, 5)).toEqual([
      "Apply finished with failures: 2 done, 1 failed.",
      "  done    weighted_backend.a: created bkdwd_1 (3 ms)",
      "  done    weighted_backend.b: created bkdwd_2 (4 ms)",
      "  failed  weighted_backend.c: POST /backends/weighted: 400 bad",
    ]);
  });
});
