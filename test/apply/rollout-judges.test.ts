/**
 * A rollout judged as any write, in `plan` and `apply` run in this process against the real server: a rollout that
 * moves 90 points in one step needs `--ack traffic-shift`, one whose steps are each within `--max-shift` does not, and
 * a deny policy over plain changes refuses a rollout whose end state it denies, from manifests and from a saved plan.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runApply } from "../../src/commands/apply.js";
import type { CommandIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import { closeWorlds, HR1, HR2, startWorld, type World } from "./e2e.js";

afterAll(closeWorlds);

function io(world: World): CommandIO & { out: string; err: string } {
  const rec = {
    out: "",
    err: "",
    stdout(text: string) {
      rec.out += text;
    },
    stderr(text: string) {
      rec.err += text;
    },
    env: { EDGEPLAN_API_URL: world.server.url, EDGEPLAN_API_KEY: world.server.apiKey },
    cwd: world.dir,
    stdoutIsTTY: false,
    stdinIsTTY: false,
    prompt: async () => "",
  };
  return rec;
}

function web(a: number, b: number, maxStep?: number): string {
  const rollout = maxStep === undefined ? "" : `rollout:\n  max_step: ${maxStep}\n  interval: 1s\n`;
  return `kind: WeightedBackend\nname: web\nbackends:\n  ${HR1}: ${a}\n  ${HR2}: ${b}\n${rollout}`;
}

/** A world whose `web` is live at 90/10, created by an apply (a create is never a rollout). */
async function at90(): Promise<World> {
  const w = await startWorld();
  w.manifests({ "web.yaml": web(9000, 1000) });
  expect((await runApply({ paths: ["m"], autoApprove: true, rateLimit: "off" }, io(w))).exitCode).toBe(0);
  return w;
}

const weights = async (w: World) => (await w.owned()).get("web")?.backends;

describe("a rollout judged by what it commits to", () => {
  it("a 90-point rollout with max_step 100 needs --ack traffic-shift; one whose steps are within --max-shift does not", async () => {
    const w = await at90();
    w.manifests({ "web.yaml": web(0, 10000, 100) });
    const from = w.log().length;
    await expect(runApply({ paths: ["m"], autoApprove: true, rateLimit: "off" }, io(w))).rejects.toThrow(
      "the rollout moves traffic by more than 50 percentage points to its final weights, in a step of more than 50",
    );
    expect(w.writes(from).filter((l) => l.method === "PATCH")).toEqual([]);
    const acked = await runApply({ paths: ["m"], autoApprove: true, rateLimit: "off", ack: ["traffic-shift"] }, io(w));
    expect(acked.exitCode).toBe(0);
    expect(await weights(w)).toEqual({ [HR1]: 0, [HR2]: 10000 });

    // Back to 90/10 in steps of at most 50 points: the rollout is its own safety.
    w.manifests({ "web.yaml": web(9000, 1000, 50) });
    const stepped = await runApply({ paths: ["m"], autoApprove: true, rateLimit: "off" }, io(w));
    expect(stepped.exitCode).toBe(0);
    expect(stepped.plan?.risks).toEqual([]);
    expect(await weights(w)).toEqual({ [HR1]: 4500, [HR2]: 5500 });
  });

  it("a deny rule over create and update refuses a rollout to one child, in plan, at apply and for a saved plan", async () => {
    const w = await at90();
    w.manifests({ "web.yaml": web(0, 10000, 50) });
    // Saved before the project had the policy: applying it judges the policies as they are now.
    expect((await runPlan({ paths: ["m"], out: "saved.json", rateLimit: "off" }, io(w))).exitCode).toBe(0);
    writeFileSync(
      join(w.dir, "edgeplan.yaml"),
      `policies:
  - name: two-live-children
    description: A split keeps at least two children with traffic.
    level: deny
    match: {kinds: [weighted_backend], actions: [create, update]}
    expression: 'change.after.backends.filter(k, change.after.backends[k] > 0).size() >= 2'
`,
    );
    const rec = io(w);
    const plan = await runPlan({ paths: ["m"], rateLimit: "off" }, rec);
    expect(plan.exitCode).toBe(1);
    expect(rec.out).toContain(
      "Policies: 1 rule, 1 check: 0 passed, 1 failed (deny 1).\n" +
        "  x two-live-children (deny: the plan cannot be applied): weighted_backend.web: at the end state the rollout commits to (its final weights): A split keeps at least two children with traffic.\n",
    );
    const from = w.log().length;
    await expect(runApply({ paths: ["m"], autoApprove: true, rateLimit: "off" }, io(w))).rejects.toThrow("two-live-children");
    await expect(runApply({ paths: [], plan: "saved.json", autoApprove: true, rateLimit: "off" }, io(w))).rejects.toThrow("two-live-children");
    expect(w.writes(from).filter((l) => l.method === "PATCH")).toEqual([]);
    expect(await weights(w)).toEqual({ [HR1]: 9000, [HR2]: 1000 });
  });
});
