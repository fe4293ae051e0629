/**
 * Rollouts judged by metrics, end to end: the built CLI against the real server, a REAL Prometheus scraping a gauge
 * the test sets (one per file, shared), and a loopback HTTP server answering JSON for the `web` provider. Each test
 * has a stack of its own, so that the tests share the server without seeing each other's objects.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, type TestContext } from "vitest";
import type { WeightedBackend } from "../../src/model/wire.js";
import { startPrometheus, type Prometheus } from "../helpers/prometheus.js";
import { closeWorlds, HR1, HR2, startWorld, type World } from "./e2e.js";

let w: World;
let prometheus: Prometheus | undefined;
let missing = "";

beforeAll(async () => {
  const [started, world] = await Promise.all([startPrometheus(), startWorld()]);
  if ("missing" in started) missing = started.missing;
  else prometheus = started;
  w = world;
}, 40_000);

afterAll(async () => {
  await prometheus?.close();
  await closeWorlds();
});

/** The Prometheus of the file; without one the test is skipped with a notice, or fails under CI. */
function needPrometheus(ctx: TestContext): Prometheus {
  if (prometheus) return prometheus;
  if (process.env.CI === "true") throw new Error(missing);
  console.warn(`notice: skipped, ${missing}`);
  ctx.skip();
  throw new Error("unreachable");
}

const RATIO = "edgeplan_test_error_ratio";

/** A manifest of `name` moving to `backends`, in two steps (50%, 100%) a second apart, with this analysis (YAML lines). */
function manifest(name: string, backends: Record<string, number>, analysis: string[]): string {
  const lines = ["kind: WeightedBackend", `name: ${name}`, "backends:", ...Object.entries(backends).map(([k, v]) => `  ${k}: ${v}`)];
  lines.push("rollout:", "  steps: [50, 100]", "  interval: 1s", "  analysis:", ...analysis.map((l) => `    ${l}`));
  return `${lines.join("\n")}\n`;
}

function errorRate(p: Prometheus, query: string, extra: string[] = []): string[] {
  return [
    "- name: error-rate",
    `  prometheus: {address: "${p.url}", query: "${query}", timeout: 2s}`,
    "  success: 'result < 0.01'",
    "  failure: 'result >= 0.05'",
    "  interval: 1s",
    ...extra.map((l) => `  ${l}`),
  ];
}

async function object(stack: string, name: string): Promise<WeightedBackend> {
  const found = (await w.owned(stack)).get(name);
  expect(found, `the weighted backend ${name} exists in stack ${stack}`).toBeDefined();
  return found as WeightedBackend;
}

const rolloutOf = (o: WeightedBackend) => (JSON.parse(o.metadata) as { edgeplan: { rollout?: Record<string, unknown> } }).edgeplan.rollout;

/** Creates `name` at 100/0 in `stack` (a create is never a rollout), then gives it the manifest of a rollout to 0/100. */
async function startRollout(stack: string, name: string, analysis: string[], env: Record<string, string> = {}): Promise<void> {
  const e = { EDGEPLAN_STACK: stack, ...env };
  w.manifests({ "wb.yaml": manifest(name, { [HR1]: 100, [HR2]: 0 }, analysis) });
  const created = await w.cli(["apply", "m", "--auto-approve"], e);
  expect(created.code, created.stderr).toBe(0);
  w.manifests({ "wb.yaml": manifest(name, { [HR1]: 0, [HR2]: 100 }, analysis) });
}

/** Sleeps until the rollout's next step is due (its last step's time plus the 1 s interval, and a margin). */
async function untilDue(stack: string, name: string): Promise<void> {
  const at = Date.parse(String(rolloutOf(await object(stack, name))?.at));
  const wait = at + 1050 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

describe("rollout analysis against a real Prometheus", () => {
  it("promotes step by step while the error ratio is low, every measurement in the report", async (ctx) => {
    const p = needPrometheus(ctx);
    p.set(RATIO, 0.001);
    await p.until(RATIO, "0.001");
    await startRollout("promote", "web", errorRate(p, RATIO, ["count: 2"]));
    const env = { EDGEPLAN_STACK: "promote" };

    const r = await w.cli(["apply", "m", "--auto-approve", "--wait"], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr.match(/rollout step \d of 2 written|rollout finished: the analysis passed/g)).toEqual([
      "rollout step 1 of 2 written",
      "rollout step 2 of 2 written",
      "rollout finished: the analysis passed",
    ]);
    const measured = "measured  weighted_backend.web: error-rate before step 2 of 2: 0.001, success (result < 0.01)";
    expect(r.stdout.split("\n").filter((l) => l.includes("measured  "))).toEqual([`  ${measured}`, `  ${measured}`, `  ${measured}`, `  ${measured}`]);
    expect(r.stdout).toContain("Converged: the live state matches the manifests.");
    const done = await object("promote", "web");
    expect(done.backends).toEqual({ [HR1]: 0, [HR2]: 100 });
    expect(rolloutOf(done)).toBeUndefined();
  });

  it("rolls back when the ratio rises past failure_limit: the starting weights, the marker halted, exit 3", async (ctx) => {
    const p = needPrometheus(ctx);
    p.set(RATIO, 0.001);
    await p.until(RATIO, "0.001");
    await startRollout("rollback", "web", errorRate(p, RATIO, ["count: 3", "failure_limit: 1"]));
    const env = { EDGEPLAN_STACK: "rollback" };
    expect((await w.cli(["apply", "m", "--auto-approve"], env)).code).toBe(0);
    expect((await object("rollback", "web")).backends).toEqual({ [HR1]: 5000, [HR2]: 5000 });

    p.set(RATIO, 0.07);
    await p.until(RATIO, "0.07");
    await untilDue("rollback", "web");
    const r = await w.cli(["apply", "m", "--auto-approve"], env);
    expect(r.code, r.stderr).toBe(3);
    const reason = "analysis error-rate failed (0.07, result >= 0.05)";
    // Two failures are more than the one allowed: the third measurement is not taken.
    const measured = "  measured  weighted_backend.web: error-rate before step 2 of 2: 0.07, failure (result >= 0.05)";
    expect(r.stdout).toContain(`${measured}\n${measured}\n  halted  weighted_backend.web: rolled back to 100/0: ${reason}\n`);
    expect(r.stderr).toContain(
      `edgeplan: weighted_backend.web: the rollout is halted: ${reason}. The weights it started from were written back. ` +
        "Fix what the analysis reports, then change the manifest or run apply --retry-rollout web to start it again.\n",
    );
    const back = await object("rollback", "web");
    expect(back.backends).toEqual({ [HR1]: 100, [HR2]: 0 });
    expect(rolloutOf(back)?.halted).toBe(reason);
  });

  it("pauses when the query has no data: exit 4, the marker paused, nothing rolled back; rollout promote goes on", async (ctx) => {
    const p = needPrometheus(ctx);
    await startRollout("pause", "web", errorRate(p, "edgeplan_test_not_scraped"));
    const env = { EDGEPLAN_STACK: "pause" };
    expect((await w.cli(["apply", "m", "--auto-approve"], env)).code).toBe(0);
    await untilDue("pause", "web");

    const r = await w.cli(["apply", "m", "--auto-approve"], env);
    expect(r.code, r.stderr).toBe(4);
    expect(r.stderr).toContain(
      'edgeplan: weighted_backend.web: paused: inconclusive (error-rate: no data); run "edgeplan rollout promote web" to go on or "edgeplan rollout abort web" to roll back\n',
    );
    expect(r.stdout).toContain("  measured  weighted_backend.web: error-rate before step 2 of 2: no value, inconclusive (no data)\n");
    const paused = await object("pause", "web");
    expect(paused.backends).toEqual({ [HR1]: 5000, [HR2]: 5000 });
    expect(rolloutOf(paused)).toMatchObject({ step: 1, paused: "inconclusive: error-rate: no data" });
    expect(rolloutOf(paused)?.halted).toBeUndefined();

    // Paused, the next apply takes no step and measures nothing; a person's promote lets the step go on, unmeasured.
    const held = await w.cli(["apply", "m", "--auto-approve"], env);
    expect(held.code, held.stderr).toBe(4);
    expect(held.stdout).not.toContain("measured  ");
    expect((await object("pause", "web")).backends).toEqual({ [HR1]: 5000, [HR2]: 5000 });
    const promoted = await w.cli(["rollout", "promote", "web"], env);
    expect(promoted.code, promoted.stderr).toBe(0);
    const next = await w.cli(["apply", "m", "--auto-approve"], env);
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).not.toContain("measured  ");
    expect((await object("pause", "web")).backends).toEqual({ [HR1]: 0, [HR2]: 100 });
    expect(rolloutOf(await object("pause", "web"))).toMatchObject({ step: 2 });
  });
});

/** A loopback status endpoint answering JSON to requests that carry the token. */
async function statusServer(token: string): Promise<{ url: string; healthy: { value: boolean }; close(): Promise<void> }> {
  const healthy = { value: true };
  const server: Server = createServer((req, res) => {
    res.statusCode = req.headers.authorization === `Bearer ${token}` ? 200 : 401;
    res.end(JSON.stringify({ service: "checkout", checks: [{ name: "db", healthy: healthy.value }] }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/status`, healthy, close: () => new Promise((r) => server.close(() => r())) };
}

describe("a web metric", () => {
  it("reads a value at a JSON path, with a header from an EDGEPLAN_VAR_ variable, and rolls back when it turns false", async () => {
    const status = await statusServer("s3cret");
    try {
      const analysis = [
        "- name: health",
        `  web: {url: "${status.url}", json_path: "$.checks[0].healthy", headers: {Authorization: "Bearer \${EDGEPLAN_VAR_STATUS_TOKEN}"}, timeout: 1s}`,
        "  success: 'result == true'",
      ];
      const env = { EDGEPLAN_STACK: "web", EDGEPLAN_VAR_STATUS_TOKEN: "s3cret" };
      await startRollout("web", "web", analysis, env);
      expect((await w.cli(["apply", "m", "--auto-approve"], env)).code).toBe(0);
      await untilDue("web", "web");
      const passed = await w.cli(["apply", "m", "--auto-approve"], env);
      expect(passed.code, passed.stderr).toBe(0);
      expect(passed.stdout).toContain("  measured  weighted_backend.web: health before step 2 of 2: true, success (result == true)\n");
      expect((await object("web", "web")).backends).toEqual({ [HR1]: 0, [HR2]: 100 });

      // After the last step, the analysis runs once more before the rollout ends: false rolls back.
      status.healthy.value = false;
      await untilDue("web", "web");
      const failed = await w.cli(["apply", "m", "--auto-approve", "--format", "json"], env);
      expect(failed.code, failed.stderr).toBe(3);
      const report = JSON.parse(failed.stdout).report;
      expect(report.status).toBe("halted");
      const reason = "analysis health failed (false, not result == true)";
      expect(report.halted).toEqual([{ address: "weighted_backend.web", name: "web", reason, weights: { [HR1]: 100, [HR2]: 0 } }]);
      expect(report.analysis).toEqual([
        { address: "weighted_backend.web", step: 2, steps: 2, metric: "health", value: "false", verdict: "failure", why: "not result == true" },
      ]);
      expect((await object("web", "web")).backends).toEqual({ [HR1]: 100, [HR2]: 0 });
    } finally {
      await status.close();
    }
  });
});
