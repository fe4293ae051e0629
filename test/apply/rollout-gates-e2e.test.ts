/**
 * What a person decides about a rollout, end to end: `{pause: true}` steps, `rollout promote` (past a pause, or
 * `--full` to the manifest's weights), `abort`, `retry` and `status`, and what apply reports when a rollout halts,
 * pauses or a `--wait` is interrupted. The built CLI against one real server shared by the tests, each on a stack
 * of its own; intervals of 1 s, and a loopback HTTP server as the rollout's check.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WeightedBackend } from "../../src/model/wire.js";
import { closeWorlds, HR1, HR2, startWorld, type CliResult, type World } from "./e2e.js";

let w: World;
const check = { status: 200, asked: 0, url: "", close: async (): Promise<void> => {} };

beforeAll(async () => {
  w = await startWorld();
  const server: Server = createServer((_req, res) => {
    check.asked++;
    res.statusCode = check.status;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  check.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthy`;
  check.close = () => new Promise((r) => server.close(() => r()));
});

afterAll(async () => {
  await check.close();
  await closeWorlds();
});

/** The manifest of `web` with these weights and a rollout paced by `pace` (`steps: [...]` or `max_step: N`). */
function web(backends: Record<string, number>, pace: string, withCheck = false, interval = "1s"): string {
  const lines = ["kind: WeightedBackend", "name: web", "backends:", ...Object.entries(backends).map(([k, v]) => `  ${k}: ${v}`)];
  lines.push("rollout:", `  ${pace}`, `  interval: ${interval}`);
  if (withCheck) lines.push("  check:", `    url: ${check.url}`, "    timeout: 1s");
  return `${lines.join("\n")}\n`;
}

interface State {
  from: Record<string, number>;
  step: number;
  at: string;
  halted?: string;
  paused?: string;
  promoted?: number;
}

/** Runs the CLI on `stack`. */
const run = (stack: string, args: string[]) => w.cli(args, { EDGEPLAN_STACK: stack });

async function object(stack: string): Promise<WeightedBackend> {
  const found = (await w.owned(stack)).get("web");
  expect(found, "the weighted backend web exists").toBeDefined();
  return found as WeightedBackend;
}

async function stateOf(stack: string): Promise<State | undefined> {
  return (JSON.parse((await object(stack)).metadata) as { edgeplan: { rollout?: State } }).edgeplan.rollout;
}

/** Sleeps until the rollout's next step is due: its last step's time plus the 1 s interval, and a margin. */
async function untilDue(stack: string): Promise<void> {
  const state = await stateOf(stack);
  const wait = Date.parse(state?.at ?? "") + 1050 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

/** Creates web at 100/0 on `stack` (a create is never a rollout), then gives it a rollout to 0/100 and takes step 1. */
async function firstStep(stack: string, pace: string, withCheck = false): Promise<CliResult> {
  w.manifests({ "web.yaml": web({ [HR1]: 100, [HR2]: 0 }, pace, withCheck) });
  expect((await run(stack, ["apply", "m", "--auto-approve"])).code).toBe(0);
  w.manifests({ "web.yaml": web({ [HR1]: 0, [HR2]: 100 }, pace, withCheck) });
  return run(stack, ["apply", "m", "--auto-approve"]);
}

describe("rollout gates against the real server", () => {
  it("a pause step stops apply (exit 4) until rollout promote; the step after it is taken with no check", async () => {
    // The step before a pause is written, and the run says the rollout now waits for a person.
    const first = await firstStep("pause", "steps: [10, {pause: true}, 50, 100]", true);
    expect(first.code, first.stderr).toBe(4);
    expect(first.stdout).toContain('  # then pause step 2 of 4: no step after it until "edgeplan rollout promote web" (once this one is written)\n');
    expect((await object("pause")).backends).toEqual({ [HR1]: 9000, [HR2]: 1000 });
    await untilDue("pause");

    const plan = await run("pause", ["plan", "m", "--detailed-exitcode"]);
    expect(plan.stdout).toContain('  # paused: pause step 2 of 4; run "edgeplan rollout promote web" to go on\n');
    const mark = w.log().length;
    const held = await run("pause", ["apply", "m", "--auto-approve"]);
    expect(held.code).toBe(4);
    expect(held.stderr).toContain(
      'weighted_backend.web: the rollout is paused before step 2 of 4 (pause step 2 of 4); run "edgeplan rollout promote web" to go on\nNothing is due: no change was sent.\n',
    );
    expect(w.writes(mark).filter((l) => l.method === "PATCH")).toEqual([]);

    const id = (await object("pause")).id;
    const state = (await stateOf("pause")) as State & { target: string };
    const status = await run("pause", ["rollout", "status", "--manifests", "m"]);
    expect(status.stdout).toBe(
      [
        'Rollouts of stack "pause" (1):',
        `  weighted_backend.web (${id}): step 1 of 4 written; paused: pause step 2 of 4; run "edgeplan rollout promote web" to go on`,
        `    weights now: ${HR1} 9000 (90%), ${HR2} 1000 (10%)`,
        `    started from: ${HR1} 100 (100%), ${HR2} 0 (0%)`,
        `    final: ${HR1} 0 (0%), ${HR2} 100 (100%) (target ${state.target})`,
        `    last step written at ${state.at}`,
        "",
      ].join("\n"),
    );
    expect(status.code).toBe(0);
    const json = await run("pause", ["rollout", "status", "web", "--manifests", "m", "--format", "json"]);
    expect(JSON.parse(json.stdout)).toEqual({
      format_version: 1,
      kind: "rollout_status",
      stack: "pause",
      rollouts: [
        {
          address: "weighted_backend.web",
          name: "web",
          id,
          status: "paused",
          step: 1,
          steps: 4,
          step_at: state.at,
          next_due_at: null,
          weights: { [HR1]: 9000, [HR2]: 1000 },
          from: { [HR1]: 100, [HR2]: 0 },
          target: state.target,
          final: { [HR1]: 0, [HR2]: 100 },
          paused: "pause step 2 of 4",
          halted: null,
          promoted: null,
        },
      ],
    });

    const promoted = await run("pause", ["rollout", "promote", "web"]);
    expect(promoted.stdout).toBe("weighted_backend.web: promoted past step 1: the next apply takes the step after it, with no pause or check before it\n");
    expect(promoted.code).toBe(0);
    expect(await stateOf("pause")).toMatchObject({ step: 1, promoted: 1 });
    expect((await stateOf("pause"))?.paused).toBeUndefined();

    // A failing check does not stop the promoted step: it is not asked.
    check.status = 503;
    const asked = check.asked;
    const third = await run("pause", ["apply", "m", "--auto-approve"]);
    expect(third.code, third.stderr).toBe(0);
    expect(check.asked).toBe(asked);
    expect((await object("pause")).backends).toEqual({ [HR1]: 5000, [HR2]: 5000 });
    expect(await stateOf("pause")).toMatchObject({ step: 3 });
    expect((await stateOf("pause"))?.promoted).toBeUndefined();
    check.status = 200;

    const rest = await run("pause", ["apply", "m", "--auto-approve", "--wait"]);
    expect(rest.code, rest.stderr).toBe(0);
    expect((await object("pause")).backends).toEqual({ [HR1]: 0, [HR2]: 100 });
  });

  it("rollout abort writes back the starting weights and halts; apply holds (exit 3); rollout retry starts again", async () => {
    expect((await firstStep("abort", "max_step: 25")).code).toBe(0);
    expect((await object("abort")).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });
    const aborted = await run("abort", ["rollout", "abort", "web"]);
    expect(aborted.stdout).toBe(
      'weighted_backend.web: rollout aborted: the weights it started from were written back; it stays halted until the manifest changes or "edgeplan rollout retry web"\n',
    );
    expect(aborted.code).toBe(0);
    expect((await object("abort")).backends).toEqual({ [HR1]: 100, [HR2]: 0 });
    expect((await stateOf("abort"))?.halted).toBe("aborted by edgeplan rollout abort");

    await untilDue("abort");
    const mark = w.log().length;
    const held = await run("abort", ["apply", "m", "--auto-approve"]);
    expect(held.code).toBe(3);
    expect(held.stderr).toContain(
      "weighted_backend.web: the rollout is halted (aborted by edgeplan rollout abort); change the manifest, or run apply --retry-rollout web, to start it again\n",
    );
    expect(w.writes(mark).filter((l) => l.method === "PATCH")).toEqual([]);
    // Status reads the manifests under the working folder by default; a halted rollout says why and how to go on.
    const state = (await stateOf("abort")) as State & { target: string };
    const status = await run("abort", ["rollout", "status", "--format", "json"]);
    expect(JSON.parse(status.stdout).rollouts).toEqual([
      {
        address: "weighted_backend.web",
        name: "web",
        id: (await object("abort")).id,
        status: "halted",
        step: 1,
        steps: 4,
        step_at: state.at,
        next_due_at: null,
        weights: { [HR1]: 100, [HR2]: 0 },
        from: { [HR1]: 100, [HR2]: 0 },
        target: state.target,
        final: { [HR1]: 0, [HR2]: 100 },
        paused: null,
        halted: "aborted by edgeplan rollout abort",
        promoted: null,
      },
    ]);
    // As text: where it stopped, and that traffic is back at the weights it started from.
    expect((await run("abort", ["rollout", "status"])).stdout.split("\n")[1]).toBe(
      `  weighted_backend.web (${(await object("abort")).id}): halted at step 1 of 4: aborted by edgeplan rollout abort; ` +
        'rolled back to the weights it started from; change the manifest, or run "edgeplan rollout retry web", to start it again',
    );
    const again = await run("abort", ["rollout", "abort", "web"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe("edgeplan: weighted_backend.web: the rollout is halted already (aborted by edgeplan rollout abort); nothing to abort\n");

    const retried = await run("abort", ["rollout", "retry", "web"]);
    expect(retried.stdout).toBe("weighted_backend.web: the halted rollout was cleared: the next apply starts it again from the live weights\n");
    expect(await stateOf("abort")).toBeUndefined();
    const restarted = await run("abort", ["apply", "m", "--auto-approve"]);
    expect(restarted.code, restarted.stderr).toBe(0);
    expect((await object("abort")).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });
    expect(await stateOf("abort")).toMatchObject({ step: 1, from: { [HR1]: 100, [HR2]: 0 } });
  });

  it("rollout promote --full writes the manifest's weights in one write and ends the rollout", async () => {
    expect((await firstStep("full", "max_step: 25")).code).toBe(0);
    const mark = w.log().length;
    const promoted = await run("full", ["rollout", "promote", "web", "--full", "--manifests", "m"]);
    expect(promoted.stdout).toBe("weighted_backend.web: promoted to the manifest's weights in one write; the rollout ended\n");
    expect(promoted.code).toBe(0);
    expect(w.changeWrites(mark).map((l) => l.method)).toEqual(["PATCH"]);
    expect((await object("full")).backends).toEqual({ [HR1]: 0, [HR2]: 100 });
    expect(await stateOf("full")).toBeUndefined();
    expect((await run("full", ["plan", "m", "--detailed-exitcode"])).code).toBe(0);
    const none = await run("full", ["rollout", "status"]);
    expect(none.stdout).toBe('Stack "full" has no rollout under way or halted.\n');
  });

  it("reports: a halted rollout is not also under way; --wait says nothing of zero changes; Ctrl-C during --wait says where it stands", async () => {
    expect((await firstStep("report", "max_step: 50", true)).code).toBe(0);
    check.status = 503;
    await untilDue("report");
    const halted = await run("report", ["apply", "m", "--auto-approve"]);
    check.status = 200;
    expect(halted.code).toBe(3);
    expect(reportOf(halted.stdout)).toBe(
      [
        // The change done was shown by its progress line; the report names what it came to.
        "Apply halted a rollout: 1 done.",
        `  halted  weighted_backend.web: rolled back to 100/0: check GET ${check.url} failed 3 times: HTTP 503, expected a 2xx status`,
        "",
        "Not converged: 1 object does not match the manifests yet (edgeplan plan shows the details):",
        "  weighted_backend.web rollout halted before step 2 of 2",
        "",
      ].join("\n"),
    );

    // Step 1 of a new rollout, then --wait interrupted while it sleeps until step 2 is due (5 s: room for a
    // process that starts slowly on a loaded machine).
    w.manifests({ "web.yaml": web({ [HR1]: 50, [HR2]: 50 }, "max_step: 25", false, "5s") });
    expect((await run("report", ["apply", "m", "--auto-approve"])).code).toBe(0);
    const at = (await stateOf("report"))?.at ?? "";
    const waiting = w.spawnCli(["apply", "m", "--auto-approve", "--wait"], { EDGEPLAN_STACK: "report" });
    for (let i = 0; i < 250 && !waiting.stdout().includes("Estimate:"); i++) await new Promise((r) => setTimeout(r, 20));
    expect(waiting.stdout(), "apply --wait printed its plan").toContain("Estimate:");
    await new Promise((r) => setTimeout(r, 300));
    waiting.proc.kill("SIGINT");
    const stopped = await waiting.done;
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).not.toContain("Applying 0 changes");
    expect(stopped.stderr).not.toContain("held back");
    const due = new Date(Date.parse(at) + 5000).toISOString();
    expect(reportOf(stopped.stdout)).toBe(
      [
        "Apply interrupted (SIGINT): 0 done.",
        `  waiting  weighted_backend.web: step 1 of 2 is written; step 2 of 2 is due at ${due}; run apply --wait again to go on`,
        "",
        "Not checked for convergence: the run was interrupted. Run apply again to finish it (nothing is created twice).",
        "",
      ].join("\n"),
    );
    expect((await object("report")).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });
  });
});

/** The report apply prints after its plan (from the line after `Estimate:`), with durations as `MS`. */
function reportOf(stdout: string): string {
  return stdout.slice(stdout.indexOf("\n", stdout.indexOf("Estimate:")) + 2).replace(/\(\d+ ms\)/g, "(MS)");
}
