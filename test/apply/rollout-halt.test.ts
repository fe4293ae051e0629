/**
 * Rollouts that halt, in this process against the real server: a rollback whose reason is a whole HTML answer, a
 * rollback the API refuses (a proxy in front of the server refuses it), a Prometheus quantile at `+Inf`, and a runner
 * whose clock is two hours fast. Each object is seeded at step 1 of 2 of its rollout, so no test waits for a step.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { request } from "undici";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { runRolloutAnalysis } from "../../src/apply/analysis.js";
import { prepareRolloutRun } from "../../src/apply/rollout.js";
import { runApply } from "../../src/commands/apply.js";
import type { CommandIO } from "../../src/commands/io.js";
import { runPlan } from "../../src/commands/plan.js";
import { HALT_REASON_MAX } from "../../src/core/halt-record.js";
import { buildPlan, DEFAULT_MAX_SHIFT } from "../../src/core/plan.js";
import { rolloutTargetDigest } from "../../src/kinds/weighted-backend-rollout.js";
import type { WeightedBackendChange } from "../../src/model/plan.js";
import type { RolloutMetric, RolloutState } from "../../src/model/state.js";
import type { WeightedBackend } from "../../src/model/wire.js";
import { desiredWb, hrId, liveWb } from "../core/builders.js";
import { closeWorlds, HR1, HR2, seed, startWorld, type World } from "./e2e.js";

const servers: Server[] = [];
afterAll(async () => {
  await closeWorlds();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** A loopback HTTP server of the test's own; its URL. */
async function serve(handler: (req: IncomingMessage, body: string, res: ServerResponse) => unknown): Promise<string> {
  const server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8").on("data", (s: string) => (body += s));
    req.on("end", () => void handler(req, body, res));
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A proxy to the world's server that answers 400 to the PATCH of a weighted backend writing `refused` weights. */
function refusingProxy(w: World, refused: Record<string, number>): Promise<string> {
  return serve(async (req, body, res) => {
    const backends = body === "" ? undefined : (JSON.parse(body) as { backends?: Record<string, number> }).backends;
    if (req.method === "PATCH" && JSON.stringify(backends) === JSON.stringify(refused)) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error_code: "ERR_NGROK_400", status_code: 400, msg: "refused by the test", details: {} }));
      return;
    }
    const headers = { ...req.headers };
    delete headers.host;
    delete headers["content-length"];
    const answer = await request(`${w.server.url}${req.url}`, { method: req.method as "GET", headers, body: body === "" ? null : body });
    const text = await answer.body.text();
    res.writeHead(answer.statusCode, { "content-type": String(answer.headers["content-type"] ?? "application/json") });
    res.end(text);
  });
}

const FROM = { [HR1]: 10000, [HR2]: 0 };
const STEP1 = { [HR1]: 5000, [HR2]: 5000 };
const TARGET = { [HR1]: 0, [HR2]: 100 };

/** A weighted backend of `stack` at step 1 of its rollout from FROM to TARGET (steps [50, 100]), written at `at`. */
async function seedStep1(w: World, stack: string, at: number): Promise<WeightedBackend> {
  const rollout: RolloutState = { from: FROM, target: rolloutTargetDigest(TARGET), step: 1, at: new Date(at).toISOString() };
  return seed(w, { backends: STEP1, metadata: JSON.stringify({ edgeplan: { name: "web", stack, rollout } }) });
}

/** The manifest of `web` moving to TARGET in steps [50, 100], `interval` apart, with these analysis lines. */
function manifest(interval: string, analysis: string[]): string {
  const lines = ["kind: WeightedBackend", "name: web", "backends:", `  ${HR1}: 0`, `  ${HR2}: 100`, "rollout:", "  steps: [50, 100]", `  interval: ${interval}`];
  if (analysis.length > 0) lines.push("  analysis:", ...analysis.map((l) => `    ${l}`));
  return `${lines.join("\n")}\n`;
}

/** A `web` metric of one measurement that fails on anything but a number below 0.05. */
const webMetric = (url: string): string[] => ["- name: errors", `  web: {url: "${url}/ratio?token=s3cret"}`, "  success: 'type(result) == double && result < 0.05'"];

function io(w: World, stack: string, apiUrl = w.server.url): CommandIO & { out: string; err: string } {
  const rec = {
    out: "",
    err: "",
    stdout(t: string) {
      rec.out += t;
    },
    stderr(t: string) {
      rec.err += t;
    },
    env: { EDGEPLAN_API_URL: apiUrl, EDGEPLAN_API_KEY: w.server.apiKey, EDGEPLAN_STACK: stack },
    cwd: w.dir,
    stdoutIsTTY: false,
    stdinIsTTY: false,
    prompt: async () => "",
  };
  return rec;
}

const rolloutOf = (o: WeightedBackend | undefined) => (JSON.parse(o?.metadata ?? "{}") as { edgeplan: { rollout?: RolloutState } }).edgeplan.rollout;
const HTML = `<!doctype html><html><body>${"<p>maintenance</p>".repeat(380)}</body></html>`;

describe("a rollout halted by its analysis", () => {
  it("rolls back on a 6 KB HTML answer: the starting weights live, a bounded reason without the body or the query", async () => {
    const w = await startWorld();
    const status = await serve((_req, _body, res) => res.writeHead(200, { "content-type": "text/html" }).end(HTML));
    await seedStep1(w, "html", Date.now() - 2000);
    w.manifests({ "web.yaml": manifest("1s", webMetric(status)) });
    const rec = io(w, "html");
    const result = await runApply({ paths: ["m"], autoApprove: true, rateLimit: "off" }, rec);
    expect(HTML.length).toBeGreaterThan(6000);
    expect(result.exitCode).toBe(3);
    const live = (await w.owned("html")).get("web");
    expect(live?.backends).toEqual(FROM);
    const reason = `analysis errors failed (a text of ${HTML.length} characters, not a number, not type(result) == double && result < 0.05)`;
    expect(rolloutOf(live)).toMatchObject({ step: 1, halted: reason });
    expect(reason.length).toBeLessThanOrEqual(HALT_REASON_MAX);
    expect(live?.metadata).not.toContain("maintenance");
    expect(rec.out).toContain(`halted  weighted_backend.web: rolled back to 10000/0: ${reason}`);
    // The report's measurement describes the body; no output shows it.
    expect(rec.out).toContain(`errors before step 2 of 2: a text of ${HTML.length} characters, not a number, failure`);
    expect(rec.err + rec.out).not.toContain("maintenance");
    expect(rec.err + rec.out).not.toContain("s3cret");
  });

  it("a rollback the API refuses exits 3 and says traffic is still at the step; the next plan and apply write the rollback", async () => {
    const w = await startWorld();
    const status = await serve((_req, _body, res) => res.writeHead(200).end("0.2"));
    const seeded = await seedStep1(w, "refused", Date.now() - 2000);
    w.manifests({ "web.yaml": manifest("1s", webMetric(status)) });
    const rec = io(w, "refused", await refusingProxy(w, FROM));
    const result = await runApply({ paths: ["m"], autoApprove: true, rateLimit: "off" }, rec);
    expect(result.exitCode).toBe(3);
    expect(result.summaryMarkdown).toContain("**Apply finished with failures: 0 done, 1 failed.**");
    const reason = "analysis errors failed (0.2, not type(result) == double && result < 0.05)";
    expect(rec.out).toContain(
      `halted  weighted_backend.web: ${reason}; the rollback failed (m/web.yaml:1:1: PATCH /backends/weighted/${seeded.id}: 400 ERR_NGROK_400: refused by the test): ` +
        "traffic is still at 5000/5000, the step's weights; the next run writes the rollback again",
    );
    const live = (await w.owned("refused")).get("web");
    expect(live?.backends).toEqual(STEP1);
    expect(rolloutOf(live)).toMatchObject({ step: 1, halted: reason });

    const planned = io(w, "refused");
    const plan = await runPlan({ paths: ["m"], rateLimit: "off", out: "rollback.json" }, planned);
    expect(planned.out).toContain("weighted_backend.web rollout halted: the weights it started from are written back");
    const change = plan.plan?.changes[0] as WeightedBackendChange;
    expect(change.rollout).toMatchObject({ phase: "halt", status: "due", halted_reason: reason });
    expect(change.after?.backends).toEqual(FROM);
    const retried = io(w, "refused");
    const again = await runApply({ paths: [], plan: "rollback.json", autoApprove: true, rateLimit: "off" }, retried);
    expect(again.exitCode).toBe(3);
    expect(retried.out).toContain(`halted  weighted_backend.web: rolled back to 10000/0: ${reason}`);
    expect((await w.owned("refused")).get("web")?.backends).toEqual(FROM);
  });
});

describe("Prometheus infinities", () => {
  const [A, B] = [hrId(1), hrId(2)];
  const target = { [A]: 0, [B]: 100 };

  /** The change of `web` at step 2 of 2, due, whose analysis asks the Prometheus at `address`. */
  function step2(address: string): WeightedBackendChange {
    const metric: RolloutMetric = {
      name: "p99",
      provider: { kind: "prometheus", address, query: "histogram_quantile(0.99, rate(latency_bucket[1m]))", timeout_ms: 2000 },
      success: "result < 0.5",
      failure: "result >= 1",
      initial_delay_ms: 0,
      interval_ms: 1000,
      count: 1,
      failure_limit: 0,
    };
    const spec = { max_step: 50, shares: null, interval: "1s", interval_ms: 1000, check: null, analysis: [metric] };
    const state: RolloutState = { from: { [A]: 100, [B]: 0 }, target: rolloutTargetDigest(target), step: 1, at: new Date(Date.now() - 2000).toISOString() };
    const live = liveWb(1, { backends: { [A]: 5000, [B]: 5000 }, metadata: JSON.stringify({ edgeplan: { name: "web", stack: "default", rollout: state } }) });
    const plan = buildPlan(
      { weightedBackends: [{ ...desiredWb("web", { backends: target }), rollout: spec }], edgeRoutes: [] },
      { weightedBackends: [live], routes: [] },
      { stack: "default", prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT, now: Date.now() },
    );
    return plan.changes[0] as WeightedBackendChange;
  }

  it("a quantile at +Inf rolls back, -Inf passes, NaN pauses (no data)", async () => {
    let value = "+Inf";
    const prometheus = await serve((_req, _body, res) => {
      const answer = { status: "success", data: { resultType: "vector", result: [{ metric: {}, value: [1767225600, value] }] } };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
    });
    const run = () => prepareRolloutRun([step2(prometheus)], async () => ({ ok: true }), Date.now, undefined, { analyzer: runRolloutAnalysis });
    const inf = await run();
    expect(inf.halted.map((h) => h.reason)).toEqual(["analysis p99 failed (Infinity, result >= 1)"]);
    expect((inf.changes[0] as WeightedBackendChange).request.body?.backends).toEqual({ [A]: 100, [B]: 0 });
    value = "-Inf";
    const negative = await run();
    expect([negative.halted, negative.paused, negative.analysis.map((m) => m.verdict)]).toEqual([[], [], ["success"]]);
    value = "NaN";
    expect((await run()).paused.map((p) => p.reason)).toEqual(["inconclusive: p99: the value is NaN (no traffic?)"]);
  });
});

describe("a step's interval", () => {
  it("is measured by the API's clock: a runner two hours fast does not take step 2 at once", async () => {
    const w = await startWorld();
    await seedStep1(w, "clock", Date.now() - 10_000);
    w.manifests({ "web.yaml": manifest("1h", []) });
    // This machine's clock runs two hours ahead; the server dates its answers with `new Date()`, left as it is.
    const real = Date.now.bind(Date);
    vi.spyOn(Date, "now").mockImplementation(() => real() + 2 * 3600_000);
    const rec = io(w, "clock");
    const result = await runApply({ paths: ["m"], autoApprove: true, rateLimit: "off" }, rec);
    vi.restoreAllMocks();
    expect(result.exitCode).toBe(0);
    expect(rec.err).toMatch(/weighted_backend\.web: rollout step 2 of 2 is due at \S+/);
    const live = (await w.owned("clock")).get("web");
    expect(live?.backends).toEqual(STEP1);
    expect(rolloutOf(live)?.step).toBe(1);
  });
});
