/**
 * Progressive rollouts end to end: the built CLI against the real server, with 1 s intervals, and a loopback HTTP
 * server as the rollout's check.
 */
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { WeightedBackend } from "../../src/model/wire.js";
import { closeWorlds, HR1, HR2, startWorld, type World } from "./e2e.js";

afterAll(closeWorlds);

interface Rollout {
  max_step: number;
  interval: string;
  check?: string;
}

function wb(backends: Record<string, number>, rollout?: Rollout): string {
  const lines = ["kind: WeightedBackend", "name: web", "backends:"];
  for (const [k, w] of Object.entries(backends)) lines.push(`  ${k}: ${w}`);
  if (rollout) {
    lines.push("rollout:", `  max_step: ${rollout.max_step}`, `  interval: ${rollout.interval}`);
    if (rollout.check) lines.push("  check:", `    url: ${rollout.check}`, "    timeout: 1s");
  }
  return `${lines.join("\n")}\n`;
}

async function web(w: World): Promise<WeightedBackend> {
  const found = (await w.owned()).get("web");
  expect(found, "the weighted backend web exists").toBeDefined();
  return found as WeightedBackend;
}

function rolloutState(obj: WeightedBackend): { from: Record<string, number>; step: number; at: string; halted?: string } | undefined {
  return (JSON.parse(obj.metadata) as { edgeplan: { rollout?: { from: Record<string, number>; step: number; at: string; halted?: string } } }).edgeplan.rollout;
}

/** Shares in percent of each child of either map. */
function shares(backends: Record<string, number>, keys: string[]): number[] {
  const total = Object.values(backends).reduce((s, x) => s + x, 0);
  return keys.map((k) => ((backends[k] ?? 0) / total) * 100);
}

/** Sleeps until the rollout's next step is due (its last step's time plus the interval, and a margin). */
async function untilDue(w: World, intervalMs = 1000): Promise<void> {
  const state = rolloutState(await web(w));
  expect(state, "a rollout is under way").toBeDefined();
  const wait = Date.parse(state?.at ?? "") + intervalMs + 50 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

/** Creates `web` at 100/0 (a create is never a rollout), then gives it the manifest of a rollout to 0/100. */
async function startAt100(w: World, rollout: Rollout, env: Record<string, string> = {}): Promise<void> {
  w.manifests({ "web.yaml": wb({ [HR1]: 100, [HR2]: 0 }, rollout) });
  expect((await w.cli(["apply", "m", "--auto-approve"], env)).code).toBe(0);
  expect((await web(w)).backends).toEqual({ [HR1]: 100, [HR2]: 0 });
  w.manifests({ "web.yaml": wb({ [HR1]: 0, [HR2]: 100 }, rollout) });
}

/** A loopback check endpoint whose status can be changed. */
async function checkServer(): Promise<{ url: string; port: number; status: { code: number }; close(): Promise<void> }> {
  const status = { code: 200 };
  const server: Server = createServer((_req, res) => {
    res.statusCode = status.code;
    res.end(status.code === 200 ? "ok" : "down");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/healthy`, port, status, close: () => new Promise((r) => server.close(() => r())) };
}

describe("progressive rollouts against the real server", () => {
  it("moves 100/0 to 0/100 at max_step 25 in four steps, none more than 25 points, the last one exact", async () => {
    const w = await startWorld();
    await startAt100(w, { max_step: 25, interval: "1s" });

    const plan = await w.cli(["plan", "m", "--detailed-exitcode"]);
    expect(plan.code).toBe(2);
    expect(plan.stdout).toContain("# weighted_backend.web will take rollout step 1 of 4");
    expect(plan.stdout).toContain("# rollout: step 1 of 4, at most 25 points per step, at least 1s apart; due now");
    expect(plan.stdout).toContain(`~ ${HR1}: 100 (100%) -> 7500 (75%)`);
    expect(plan.stdout).not.toContain("Risks");
    expect(plan.stdout).not.toContain("traffic-shift");

    const seen: Array<Record<string, number>> = [{ [HR1]: 100, [HR2]: 0 }];
    // No --ack traffic-shift: the whole move is 100 points, each step 25.
    const first = await w.cli(["apply", "m", "--auto-approve"]);
    expect(first.code).toBe(0);
    expect(first.stderr).toMatch(/weighted_backend\.web: rollout step 1 of 4 written \(75%\/25%; next step due at \S+Z\) bkdwd_\w+ \(\d+ ms\)/);
    seen.push((await web(w)).backends);

    for (let step = 2; step <= 4; step++) {
      await untilDue(w);
      const r = await w.cli(["apply", "m", "--auto-approve"]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain(`rollout step ${step} of 4 written`);
      seen.push((await web(w)).backends);
    }
    expect(seen).toEqual([
      { [HR1]: 100, [HR2]: 0 },
      { [HR1]: 7500, [HR2]: 2500 },
      { [HR1]: 5000, [HR2]: 5000 },
      { [HR1]: 2500, [HR2]: 7500 },
      { [HR1]: 0, [HR2]: 100 },
    ]);
    for (let i = 1; i < seen.length; i++) {
      const a = shares(seen[i - 1] as Record<string, number>, [HR1, HR2]);
      const b = shares(seen[i] as Record<string, number>, [HR1, HR2]);
      for (let j = 0; j < a.length; j++) expect(Math.abs((b[j] as number) - (a[j] as number))).toBeLessThanOrEqual(25);
    }
    expect(rolloutState(await web(w))).toBeUndefined();
    expect((await w.cli(["plan", "m", "--detailed-exitcode"])).code).toBe(0);
  });

  it("an apply before the interval has passed changes nothing and says when the next step is due", async () => {
    const w = await startWorld();
    // 60 s: nothing here waits for it, and the three runs after the first apply must all fall before it, which on a
    // loaded machine took more than 5 s.
    await startAt100(w, { max_step: 25, interval: "60s" });
    expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
    const at = Date.parse(rolloutState(await web(w))?.at ?? "");
    const mark = w.log().length;
    const early = await w.cli(["apply", "m", "--auto-approve"]);
    expect(early.code).toBe(0);
    expect(early.stderr).toContain(`weighted_backend.web: rollout step 2 of 4 is due at ${new Date(at + 60_000).toISOString()}\nNothing is due: no change was sent.`);
    // Only the apply's lease was written (docs/reliability.md, section 6).
    expect(w.changeWrites(mark)).toEqual([]);
    const waiting = await w.cli(["plan", "m", "--detailed-exitcode"]);
    expect(waiting.code).toBe(2);
    expect(waiting.stdout).toContain(`# weighted_backend.web rollout step 2 of 4, due at ${new Date(at + 60_000).toISOString()}`);
    expect((await web(w)).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });
  });

  it("apply --wait takes every step in one process, one stderr line per step", async () => {
    const w = await startWorld();
    await startAt100(w, { max_step: 50, interval: "1s" });
    const started = Date.now();
    const r = await w.cli(["apply", "m", "--auto-approve", "--wait"]);
    expect(r.code, r.stderr).toBe(0);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(r.stderr.match(/rollout step \d of 2 written/g)).toEqual(["rollout step 1 of 2 written", "rollout step 2 of 2 written"]);
    expect(r.stdout).toContain("Converged: the live state matches the manifests.");
    expect((await web(w)).backends).toEqual({ [HR1]: 0, [HR2]: 100 });
    expect(rolloutState(await web(w))).toBeUndefined();
  });

  it("apply --wait stops at --wait-timeout, leaving the steps written, and exits 3", async () => {
    const w = await startWorld();
    await startAt100(w, { max_step: 25, interval: "5s" });
    const r = await w.cli(["apply", "m", "--auto-approve", "--wait", "--wait-timeout", "2s"]);
    expect(r.code).toBe(3);
    const at = Date.parse(rolloutState(await web(w))?.at ?? "");
    expect(r.stdout).toContain(
      `--wait-timeout reached: weighted_backend.web: step 2 of 4 is due at ${new Date(at + 5000).toISOString()}, after the --wait-timeout; run apply again to go on`,
    );
    expect((await web(w)).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });
    const bad = await w.cli(["apply", "m", "--auto-approve", "--wait", "--wait-timeout", "soon"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('edgeplan: --wait-timeout: expected a duration such as 30m or 2h, got "soon"');
  });

  it("a check that starts failing halts the rollout, writes back the starting weights and exits 3", async () => {
    const w = await startWorld();
    const check = await checkServer();
    try {
      // A variable may not give the check's address (the plan shows where a check goes): test/reliability/variable-secrets.test.ts.
      const env = {};
      await startAt100(w, { max_step: 25, interval: "1s", check: check.url }, env);
      expect((await w.cli(["apply", "m", "--auto-approve"], env)).code).toBe(0);
      expect((await web(w)).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });

      check.status.code = 503;
      await untilDue(w);
      const halted = await w.cli(["apply", "m", "--auto-approve"], env);
      expect(halted.code).toBe(3);
      expect(halted.stderr).toContain(
        `edgeplan: weighted_backend.web: the rollout is halted: check GET ${check.url} failed 3 times: HTTP 503, expected a 2xx status. ` +
          "The weights it started from were written back. Fix what the check reports, then change the manifest or run apply --retry-rollout web to start it again.",
      );
      const back = await web(w);
      expect(back.backends).toEqual({ [HR1]: 100, [HR2]: 0 });
      expect(rolloutState(back)?.halted).toBe(`check GET ${check.url} failed 3 times: HTTP 503, expected a 2xx status`);

      // Not tried again, even once the check is healthy, until the manifest changes or --retry-rollout.
      check.status.code = 200;
      const mark = w.log().length;
      const again = await w.cli(["apply", "m", "--auto-approve"], env);
      expect(again.code).toBe(3);
      expect(again.stderr).toContain("weighted_backend.web: the rollout is halted (check GET");
      // Only the apply's lease was written (docs/reliability.md, section 6).
      expect(w.changeWrites(mark)).toEqual([]);
      const plan = await w.cli(["plan", "m", "--detailed-exitcode"], env);
      expect(plan.code).toBe(2);
      expect(plan.stdout).toContain("rollout halted before step 2 of 4");

      const retried = await w.cli(["apply", "m", "--auto-approve", "--retry-rollout", "web"], env);
      expect(retried.code, retried.stderr).toBe(0);
      expect((await web(w)).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });
      expect(rolloutState(await web(w))?.halted).toBeUndefined();
    } finally {
      await check.close();
    }
  });

  it("a new process continues an interrupted --wait from the marker", async () => {
    const w = await startWorld();
    await startAt100(w, { max_step: 25, interval: "1s" });
    const running = w.spawnCli(["apply", "m", "--auto-approve", "--wait"]);
    for (let i = 0; i < 200 && !running.stderr().includes("rollout step 2 of 4 written"); i++) await new Promise((r) => setTimeout(r, 50));
    expect(running.stderr()).toContain("rollout step 2 of 4 written");
    running.proc.kill("SIGINT");
    const stopped = await running.done;
    expect(stopped.code).toBe(130);
    const mid = await web(w);
    expect(mid.backends).toEqual({ [HR1]: 5000, [HR2]: 5000 });
    expect(rolloutState(mid)?.step).toBe(2);

    const resumed = await w.cli(["apply", "m", "--auto-approve", "--wait"]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stderr.match(/rollout step \d of 4 written/g)).toEqual(["rollout step 3 of 4 written", "rollout step 4 of 4 written"]);
    expect((await web(w)).backends).toEqual({ [HR1]: 0, [HR2]: 100 });
  });

  it("a saved plan writes its step once it is due, exactly as planned (its time the planned one), and goes stale after it", async () => {
    const w = await startWorld();
    // 10 s: room for the four runs of the CLI between a step and the early apply below, on a loaded machine too.
    await startAt100(w, { max_step: 25, interval: "10s" });
    expect((await w.cli(["plan", "m", "--out", "p1.json"])).code).toBe(0);
    const applied = await w.cli(["apply", "--plan", "p1.json", "--auto-approve"]);
    expect(applied.code, applied.stderr).toBe(0);
    expect((await web(w)).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });
    const stale = await w.cli(["apply", "--plan", "p1.json", "--auto-approve"]);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("stale");

    expect((await w.cli(["plan", "m", "--out", "p2.json"])).code).toBe(0);
    const mark = w.log().length;
    const early = await w.cli(["apply", "--plan", "p2.json", "--auto-approve"]);
    expect(early.code).toBe(0);
    expect(early.stderr, early.stderr).toContain("Nothing is due: no change was sent.");
    // Only the apply's lease was written (docs/reliability.md, section 6).
    expect(w.changeWrites(mark)).toEqual([]);
    await untilDue(w, 10_000);
    const before = Date.now();
    const due = await w.cli(["apply", "--plan", "p2.json", "--auto-approve"]);
    expect(due.code, due.stderr).toBe(0);
    const now = await web(w);
    expect(now.backends).toEqual({ [HR1]: 5000, [HR2]: 5000 });
    // The body the plan holds is the body written: the step's time is the one planned (when it fell due), not the write's.
    const planned = (JSON.parse(readFileSync(join(w.dir, "p2.json"), "utf8")) as { changes: Array<{ request: { body: { metadata: string } } }> }).changes[0];
    expect(now.metadata).toBe(planned?.request.body.metadata);
    expect(Date.parse(rolloutState(now)?.at ?? "")).toBeLessThan(before);

    const refused = await w.cli(["apply", "--plan", "p2.json", "--auto-approve", "--wait"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("edgeplan: --wait and --retry-rollout plan again from the manifests after each step; leave out --plan FILE");
  });

  it("a manifest edited mid-rollout starts a new rollout from the live weights; going back is one step at once", async () => {
    const w = await startWorld();
    await startAt100(w, { max_step: 25, interval: "1s" });
    expect((await w.cli(["apply", "m", "--auto-approve"])).code).toBe(0);
    expect((await web(w)).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });

    w.manifests({ "web.yaml": wb({ [HR1]: 10, [HR2]: 90 }, { max_step: 25, interval: "1s" }) });
    const plan = await w.cli(["plan", "m"]);
    expect(plan.stdout).toContain("# the manifest or the live weights changed during a rollout: a new rollout starts from the live weights");
    expect(plan.stdout).toContain("will take rollout step 1 of 3");
    const r = await w.cli(["apply", "m", "--auto-approve"]);
    expect(r.code, r.stderr).toBe(0);
    const restarted = await web(w);
    expect(rolloutState(restarted)?.from).toEqual({ [HR1]: 7500, [HR2]: 2500 });
    expect(restarted.backends).toEqual({ [HR1]: 5333, [HR2]: 4667 });

    // Back to the weights this rollout started from: one write, without waiting for the interval.
    w.manifests({ "web.yaml": wb({ [HR1]: 7500, [HR2]: 2500 }, { max_step: 25, interval: "1s" }) });
    const back = await w.cli(["apply", "m", "--auto-approve"]);
    expect(back.code, back.stderr).toBe(0);
    expect(back.stderr).toContain("returned to the weights the rollout started from");
    expect((await web(w)).backends).toEqual({ [HR1]: 7500, [HR2]: 2500 });
    expect(rolloutState(await web(w))).toBeUndefined();
  });
});
