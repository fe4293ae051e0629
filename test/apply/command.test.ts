/**
 * `runApply` in this process (as the GitHub Action calls it), against the real server: the question on a terminal,
 * the JSON output, the result's fields, and a caller's AbortSignal.
 */
import { afterAll, describe, expect, it } from "vitest";
import { APPROVAL_QUESTION } from "../../src/apply/approval.js";
import { renderMarkdown } from "../../src/render/markdown.js";
import { runApply } from "../../src/commands/apply.js";
import type { CommandIO } from "../../src/commands/io.js";
import { ApplyDocumentSchema } from "../../src/model/apply-schema.js";
import { UnsafePlanError } from "../../src/model/errors.js";
import { closeWorlds, HR1, HR2, startWorld, wbYaml, type World } from "./e2e.js";

afterAll(closeWorlds);

function io(world: World, answer?: string): CommandIO & { out: string; err: string; questions: string[] } {
  const rec = {
    out: "",
    err: "",
    questions: [] as string[],
    stdout(text: string) {
      rec.out += text;
    },
    stderr(text: string) {
      rec.err += text;
    },
    env: { EDGEPLAN_API_URL: world.server.url, EDGEPLAN_API_KEY: world.server.apiKey },
    cwd: world.dir,
    stdoutIsTTY: false,
    stdinIsTTY: answer !== undefined,
    async prompt(question: string) {
      rec.questions.push(question);
      return answer ?? "";
    },
  };
  return rec;
}

describe("runApply", () => {
  it("asks on a terminal and applies after 'yes'", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
    const rec = io(w, "yes\n");
    const result = await runApply({ paths: ["m"], rateLimit: "off" }, rec);
    expect(rec.questions).toEqual(["Do you want to apply these changes? Only 'yes' is accepted: "]);
    expect(APPROVAL_QUESTION).toBe(rec.questions[0]);
    expect(result.exitCode).toBe(0);
    expect(result.hasChanges).toBe(true);
    expect(result.plan?.summary.create).toBe(1);
    expect(renderMarkdown(result.plan!)).toContain("### edgeplan plan: stack `default`");
    expect(result.summaryMarkdown).toContain("### edgeplan apply: stack `default`\n\n**Apply complete: 1 done.**\n");
    expect(result.summaryMarkdown).toContain("Converged: the live state matches the manifests.");
    expect((await w.owned()).has("x")).toBe(true);
  });

  it("anything but 'yes' cancels, and no change is sent", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
    const rec = io(w, "y");
    await expect(runApply({ paths: ["m"], rateLimit: "off" }, rec)).rejects.toThrow(new UnsafePlanError(`apply cancelled: "y" is not 'yes'; no change was sent`, "declined"));
    expect(rec.out).toContain("Plan: 1 to create, 0 to update, 0 to delete.");
    expect(w.changeWrites()).toEqual([]);
  });

  it("--format json prints one document holding the plan and the report, valid against its schema", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 60, [HR2]: 40 }) });
    const rec = io(w);
    const result = await runApply({ paths: ["m"], autoApprove: true, format: "json", rateLimit: "off" }, rec);
    expect(result.exitCode).toBe(0);
    const doc = JSON.parse(rec.out) as { format_version: number; kind: string; plan: Record<string, unknown>; report: unknown };
    expect(ApplyDocumentSchema.safeParse(doc).error).toBeUndefined();
    expect(Object.keys(doc)).toEqual(["format_version", "kind", "plan", "report"]);
    expect(doc).toMatchObject({ format_version: 1, kind: "apply" });
    expect(doc.plan).toMatchObject({ format_version: 1, stack: "default", summary: { create: 1, total: 1 } });
    // The plan for the person asked goes to stderr, as text.
    expect(rec.err).toContain("Plan: 1 to create, 0 to update, 0 to delete.");
    const id = (await w.owned()).get("x")?.id;
    expect(doc.report).toEqual({
      stack: "default",
      status: "converged",
      counts: { done: 1, failed: 0, skipped: 0, not_started: 0 },
      changes: [{ address: "weighted_backend.x", kind: "weighted_backend", action: "create", status: "done", id, ms: expect.any(Number), message: `created ${id}` }],
      convergence: { against: "manifests", checked: true, converged: true, remaining: [], in_progress: [] },
      held: [],
      halted: [],
      paused: [],
      analysis: [],
      outputs: [],
    });
  });

  it("--format json with nothing to change prints one document whose report is null", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }) });
    await runApply({ paths: ["m"], autoApprove: true, rateLimit: "off" }, io(w));
    const rec = io(w);
    const result = await runApply({ paths: ["m"], autoApprove: true, format: "json", rateLimit: "off" }, rec);
    expect(result.exitCode).toBe(0);
    const doc = JSON.parse(rec.out) as { plan: { summary: { total: number } }; report: unknown };
    expect(ApplyDocumentSchema.safeParse(doc).error).toBeUndefined();
    expect(doc.plan.summary.total).toBe(0);
    expect(doc.report).toBeNull();
  });

  it("a caller's aborted signal starts nothing and exits 130", async () => {
    const w = await startWorld();
    w.manifests({ "x.yaml": wbYaml("x", { [HR1]: 100 }), "y.yaml": wbYaml("y", { [HR2]: 100 }) });
    const rec = io(w);
    const controller = new AbortController();
    controller.abort();
    const result = await runApply({ paths: ["m"], autoApprove: true, signal: controller.signal, rateLimit: "off" }, rec);
    expect(result.exitCode).toBe(130);
    expect(rec.out).toContain("\nApply interrupted: 0 done, 2 not started.\n");
    expect(result.summaryMarkdown).toContain("| `weighted_backend.x` | not started | the run was interrupted before it started |");
    expect(w.changeWrites()).toEqual([]);
  });
});
