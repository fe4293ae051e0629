/**
 * The agent's HTTP listener, started in this process on a free loopback port with a fake AgentControl: every route
 * and status, the access rules (reads open on loopback; a listener that is not on loopback is simulated with
 * `publicReads: false`, as a test cannot count on the machine having another address), webhooks signed or not, the
 * request log (never a token, a query or a body), `/metrics` as promtool checks it, and the CLI's client of it.
 */
import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { connect, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startAgentListener, type AgentControl, type AgentListener, type AgentListenerOptions } from "../../src/agent/http.js";
import { AgentMetrics } from "../../src/agent/metrics.js";
import { agentRequest } from "../../src/commands/agent-client.js";
import type { HistoryEntry, StackStatus } from "../../src/model/agent.js";
import { promtoolCheck, sample } from "../helpers/metrics.js";
import { http } from "../helpers/server.js";

const TOKEN = "canary-token-7f3a9c2e51d84b06";
const SECRET = "canary-hook-secret-0b5e";

function status(name: string): StackStatus {
  return {
    name,
    source: "routing",
    mode: "correct",
    suspended: false,
    conditions: [{ type: "Ready", status: "True", reason: "ReconciliationSucceeded", message: "applied", since: "2026-01-01T00:00:00.000Z" }],
    last_applied_revision: null,
    last_attempted_revision: null,
    drift: [],
    drift_since: null,
    waiting: [],
    rollouts: [],
    last_reconciled_at: null,
    failures: 0,
  };
}

function entry(stack: string, seq: number): HistoryEntry {
  const at = "2026-01-01T00:00:00.000Z";
  return {
    seq,
    stack,
    started_at: at,
    finished_at: at,
    trigger: "interval",
    revision: null,
    result: "in_sync",
    message: "no changes",
    digest: null,
    plan_text: null,
    report: null,
  };
}

/** A fake agent with the stacks `web` and `api` and the sources `routing` (with a webhook secret) and `plain` (without). */
function fakeControl() {
  const calls: string[] = [];
  const stacks = new Map([
    ["web", status("web")],
    ["api", status("api")],
  ]);
  let ready = true;
  const control: AgentControl = {
    stacks: async () => [...stacks.values()],
    stack: async (name) => stacks.get(name) ?? null,
    history: async (name, limit) => {
      calls.push(`history ${name} ${limit}`);
      return [entry(name, 2), entry(name, 1)];
    },
    reconcile: (name) => {
      calls.push(`reconcile ${name}`);
      return stacks.has(name);
    },
    suspend: async (name, suspended) => {
      calls.push(`suspend ${name} ${suspended}`);
      return stacks.has(name);
    },
    ack: async (name, rule, digest, by) => {
      calls.push(`ack ${name} ${rule} ${digest} ${by}`);
      return digest === "sha256:good" ? null : `no rule ${rule} waits on ${name} for the plan ${digest}`;
    },
    webhookSecret: async (source) => (source === "routing" ? SECRET : source === "plain" ? null : undefined),
    fetchNow: (source) => {
      calls.push(`fetch ${source}`);
    },
    ready: () => ready,
  };
  return { calls, control, setReady: (r: boolean) => (ready = r) };
}

const listeners: AgentListener[] = [];
afterEach(async () => {
  await Promise.all(listeners.splice(0).map((l) => l.close()));
});

async function start(options: Partial<AgentListenerOptions> = {}) {
  const fake = fakeControl();
  const lines: string[] = [];
  const metrics = new AgentMetrics();
  const listener = await startAgentListener({
    listen: "127.0.0.1:0",
    token: TOKEN,
    control: fake.control,
    metrics,
    log: (line) => lines.push(line),
    renderIndex: (s) => `<h1>${s.map((x) => x.name).join(",")}</h1>`,
    renderStack: (s, h) => `<h1>${s.name}: ${h.length}</h1>`,
    ...options,
  });
  listeners.push(listener);
  return { ...fake, lines, metrics, url: listener.url, listener };
}

const bearer = (token = TOKEN) => ({ Authorization: `Bearer ${token}` });
const sign = (body: string, secret = SECRET) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

/** Writes `text` on a new connection to `url` and resolves with all that comes back until the server closes it. */
function raw(url: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(url).port), "127.0.0.1", () => socket.write(text));
    let answer = "";
    socket.on("data", (d) => (answer += d.toString()));
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
    setTimeout(() => socket.destroy(), 3_000).unref();
  });
}

describe("probes and routing", () => {
  it("answers /healthz and /readyz without a token, 503 when not ready, and only GET and POST", async () => {
    const a = await start({ publicReads: false });
    expect(a.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const health = await http(a.url, "GET", "/healthz");
    expect([health.status, health.text, health.headers["content-type"]]).toEqual([200, "ok", "text/plain; charset=utf-8"]);
    expect([(await http(a.url, "GET", "/readyz")).status, (await http(a.url, "GET", "/readyz")).text]).toEqual([200, "ready"]);
    a.setReady(false);
    const notReady = await http(a.url, "GET", "/readyz");
    expect([notReady.status, notReady.text]).toEqual([503, "not ready"]);
    for (const method of ["HEAD", "PUT", "DELETE"]) {
      const r = await http(a.url, method, "/healthz");
      expect([r.status, r.headers.allow]).toEqual([405, "GET, POST"]);
    }
  });

  it("answers 404 for an unknown path and 405 with Allow for a known path with another method, as JSON errors", async () => {
    const a = await start();
    const missing = await http(a.url, "GET", "/api/stacks/web/nothing");
    expect([missing.status, missing.json]).toEqual([
      404,
      { error: "not found: the agent serves /, /stacks/NAME, /api/stacks, /hooks/SOURCE, /healthz, /readyz and /metrics" },
    ]);
    const wrong = await http(a.url, "GET", "/api/stacks/web/reconcile");
    expect([wrong.status, wrong.headers.allow, wrong.json]).toEqual([405, "POST", { error: "GET is not allowed here" }]);
    expect((await http(a.url, "GET", "/api/stacks/%E0%A4%A")).json).toEqual({ error: "the path is not valid percent-encoding" });
  });
});

describe("reads", () => {
  it("serve the stacks, one stack, its history and the pages, open on loopback", async () => {
    const a = await start();
    const list = await http(a.url, "GET", "/api/stacks");
    expect([list.status, list.json]).toEqual([200, { stacks: [status("web"), status("api")] }]);
    expect((await http(a.url, "GET", "/api/stacks/web")).json).toEqual(status("web"));
    const unknown = await http(a.url, "GET", "/api/stacks/nope");
    expect([unknown.status, unknown.json]).toEqual([404, { error: `no stack "nope" in this agent's configuration; GET /api/stacks lists them` }]);
    expect((await http(a.url, "GET", "/api/stacks/web/history")).json).toEqual({ history: [entry("web", 2), entry("web", 1)] });
    expect((await http(a.url, "GET", "/api/stacks/web/history?limit=100")).status).toBe(200);
    for (const bad of ["0", "101", "abc", "1.5"]) {
      const r = await http(a.url, "GET", `/api/stacks/web/history?limit=${bad}`);
      expect([r.status, r.json]).toEqual([400, { error: `limit must be a whole number from 1 to 100, got "${bad}"` }]);
    }
    expect((await http(a.url, "GET", "/api/stacks/nope/history")).status).toBe(404);
    expect(a.calls).toEqual(["history web 20", "history web 100"]);
    const index = await http(a.url, "GET", "/");
    expect([index.status, index.text, index.headers["content-type"]]).toEqual([200, "<h1>web,api</h1>", "text/html; charset=utf-8"]);
    expect(index.headers["content-security-policy"]).toBe("default-src 'none'; style-src 'unsafe-inline'; img-src data:");
    expect([index.headers["x-content-type-options"], index.headers["referrer-policy"]]).toEqual(["nosniff", "no-referrer"]);
    expect((await http(a.url, "GET", "/stacks/web")).text).toBe("<h1>web: 2</h1>");
    expect((await http(a.url, "GET", "/stacks/nope")).status).toBe(404);
  });

  it("need the token when reads are not open (a listener off loopback), with WWW-Authenticate on 401", async () => {
    const a = await start({ publicReads: false });
    for (const path of ["/", "/stacks/web", "/api/stacks", "/api/stacks/web", "/api/stacks/web/history", "/metrics"]) {
      const refused = await http(a.url, "GET", path);
      expect([path, refused.status, refused.headers["www-authenticate"]]).toEqual([path, 401, "Bearer"]);
      expect(refused.json).toEqual({ error: "the request has no Authorization header; send Authorization: Bearer TOKEN (the agent's --token-file)" });
      expect((await http(a.url, "GET", path, { headers: bearer("wrong-token-123456") })).status).toBe(401);
      expect((await http(a.url, "GET", path, { headers: bearer() })).status).toBe(200);
    }
    const none = await start({ publicReads: false, token: null });
    const r = await http(none.url, "GET", "/api/stacks");
    expect([r.status, r.json]).toEqual([403, { error: "reads on a non-loopback address need a token: no token is configured; start the agent with --token-file" }]);
  });

  it("without a token, are answered only for a loopback Host, so that a page reached by DNS rebinding reads nothing", async () => {
    const a = await start({ token: null });
    for (const host of ["127.0.0.1:9400", "localhost", "[::1]:80", "127.1.2.3"]) {
      expect([host, (await http(a.url, "GET", "/api/stacks", { headers: { Host: host } })).status]).toEqual([host, 200]);
    }
    for (const host of ["evil.example:9400", "127.0.0.1.evil.example", "[::2]"]) {
      const r = await http(a.url, "GET", "/api/stacks", { headers: { Host: host } });
      expect([host, r.status, r.json]).toEqual([
        host,
        403,
        { error: "reads without a token are answered only for a loopback Host (127.0.0.1, [::1], localhost): no token is configured; start the agent with --token-file" },
      ]);
    }
    const withToken = await start();
    const named = { Host: "agent.example" };
    expect((await http(withToken.url, "GET", "/metrics", { headers: named })).status).toBe(401);
    expect((await http(withToken.url, "GET", "/metrics", { headers: { ...named, ...bearer() } })).status).toBe(200);
    expect((await http(withToken.url, "GET", "/healthz", { headers: named })).status).toBe(200);
  });

  it("answer a failure of the agent with 500 and a sentence, its cause only in the log", async () => {
    const a = await start();
    a.control.stacks = async () => {
      throw new Error("database is locked at /var/lib/edgeplan/agent.db");
    };
    const r = await http(a.url, "GET", "/api/stacks");
    expect([r.status, r.json]).toEqual([500, { error: "the agent failed to answer this request; its log says why" }]);
    expect(JSON.parse(a.lines.at(-1) as string)).toMatchObject({ level: "error", status: 500, error: "database is locked at /var/lib/edgeplan/agent.db" });
  });
});

describe("changes", () => {
  it("are refused with 403 when no token is configured, and nothing is done", async () => {
    const a = await start({ token: null });
    for (const verb of ["reconcile", "suspend", "resume", "ack"]) {
      const r = await http(a.url, "POST", `/api/stacks/web/${verb}`, { headers: bearer() });
      expect([r.status, r.json]).toEqual([403, { error: "changes through the agent's API are refused: no token is configured; start the agent with --token-file" }]);
    }
    expect(a.calls).toEqual([]);
  });

  it("need the bearer token even on loopback: 401 without it or with another, and nothing is done", async () => {
    const a = await start();
    const none = await http(a.url, "POST", "/api/stacks/web/reconcile");
    expect([none.status, none.headers["www-authenticate"]]).toEqual([401, "Bearer"]);
    const wrong = await http(a.url, "POST", "/api/stacks/web/reconcile", { headers: bearer(`${TOKEN}x`) });
    expect([wrong.status, wrong.json]).toEqual([401, { error: "the token is not valid for this agent; send Authorization: Bearer TOKEN with the agent's --token-file" }]);
    const basic = await http(a.url, "POST", "/api/stacks/web/reconcile", { headers: { Authorization: `Basic ${TOKEN}` } });
    expect(basic.status).toBe(401);
    // Node would keep the first of two Authorization headers, a proxy in front perhaps the other: both are refused.
    const twice = await raw(
      a.url,
      `POST /api/stacks/web/reconcile HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKEN}\r\nAuthorization: Bearer x\r\nConnection: close\r\n\r\n`,
    );
    expect(twice).toMatch(/^HTTP\/1\.1 401 Unauthorized\r\n/);
    expect(twice).toContain('{"error":"the request has several Authorization headers; send Authorization: Bearer TOKEN (the agent\'s --token-file)"}');
    expect(a.calls).toEqual([]);
  });

  it("reconcile (202), suspend and resume (200), 404 for an unknown stack", async () => {
    const a = await start();
    const r = await http(a.url, "POST", "/api/stacks/web/reconcile", { headers: bearer() });
    expect([r.status, r.json]).toEqual([202, { accepted: true }]);
    expect((await http(a.url, "POST", "/api/stacks/web/suspend", { headers: bearer() })).json).toEqual({ stack: "web", suspended: true });
    expect((await http(a.url, "POST", "/api/stacks/web/resume", { headers: bearer() })).json).toEqual({ stack: "web", suspended: false });
    expect((await http(a.url, "POST", "/api/stacks/nope/reconcile", { headers: bearer() })).status).toBe(404);
    expect((await http(a.url, "POST", "/api/stacks/nope/suspend", { headers: bearer() })).status).toBe(404);
    expect(a.calls).toEqual(["reconcile web", "suspend web true", "suspend web false", "reconcile nope", "suspend nope true"]);
  });

  it("ack: 200 when the agent records it, 409 with its refusal, 400 for a malformed body, 404 for an unknown stack", async () => {
    const a = await start();
    const ack = (body: unknown, stack = "web") => http(a.url, "POST", `/api/stacks/${stack}/ack`, { headers: bearer(), body });
    const ok = await ack({ rule: "risk.delete", digest: "sha256:good", by: "ana" });
    expect([ok.status, ok.json]).toEqual([200, { stack: "web", rule: "risk.delete", digest: "sha256:good", by: "ana", acknowledged: true }]);
    const refused = await ack({ rule: "risk.delete", digest: "sha256:old" });
    expect([refused.status, refused.json]).toEqual([409, { error: "no rule risk.delete waits on web for the plan sha256:old" }]);
    expect((await ack({ digest: "sha256:good" })).json).toEqual({ error: "rule: expected a string, got nothing" });
    expect((await ack({ rule: "r", digest: 7 })).json).toEqual({ error: "digest: expected a string, got the number 7" });
    expect((await ack({ rule: "r\nforged line", digest: "d" })).json).toEqual({ error: "rule: expected one line of 1 to 200 characters" });
    expect((await ack({ rule: "r", digest: "d", force: true })).json).toEqual({ error: 'unknown field "force": an acknowledgement takes rule, digest and by' });
    const text = await http(a.url, "POST", "/api/stacks/web/ack", { headers: { ...bearer(), "Content-Type": "text/plain" }, rawBody: "rule" });
    expect(text.status).toBe(415);
    expect((await ack({ rule: "r", digest: "sha256:good" }, "nope")).status).toBe(404);
    expect(a.calls).toEqual(["ack web risk.delete sha256:good ana", "ack web risk.delete sha256:old api"]);
  });
});

describe("webhooks", () => {
  const push = JSON.stringify({ ref: "refs/heads/main", after: "0123abcd" });

  it("a body signed with the source's secret (GitHub's header or edgeplan's) fetches the source at once: 202", async () => {
    const a = await start({ token: null, publicReads: false });
    const github = await http(a.url, "POST", "/hooks/routing", { headers: { "X-Hub-Signature-256": sign(push), "X-GitHub-Event": "push" }, rawBody: push });
    expect([github.status, github.json]).toEqual([202, { accepted: true }]);
    const generic = await http(a.url, "POST", "/hooks/routing", {
      headers: { "X-Edgeplan-Signature-256": sign(push).toUpperCase().replace("SHA256", "sha256") },
      rawBody: push,
    });
    expect(generic.status).toBe(202);
    const ping = await http(a.url, "POST", "/hooks/routing", { headers: { "X-Hub-Signature-256": sign("{}"), "X-GitHub-Event": "ping" }, rawBody: "{}" });
    expect([ping.status, ping.json]).toEqual([200, { ok: true }]);
    expect(a.calls).toEqual(["fetch routing", "fetch routing"]);
  });

  it("a missing or bad signature is refused with 401 and nothing is fetched", async () => {
    const a = await start();
    const missing = await http(a.url, "POST", "/hooks/routing", { rawBody: push });
    expect([missing.status, missing.headers["www-authenticate"], missing.json]).toEqual([
      401,
      "Bearer",
      { error: "the request has no X-Hub-Signature-256 or X-Edgeplan-Signature-256 header; sign the body with the source's webhook secret" },
    ]);
    const bad = { error: "the signature does not match the body: check that the sender's secret is the source's webhook_secret" };
    for (const signature of [sign(push, "another-secret"), sign(`${push} `), "sha256=abcd", sign(push).replace("sha256=", "sha1="), "garbage"]) {
      const r = await http(a.url, "POST", "/hooks/routing", { headers: { "X-Hub-Signature-256": signature }, rawBody: push });
      expect([signature, r.status, r.json]).toEqual([signature, 401, bad]);
    }
    // Both headers present: both must hold.
    const mixed = await http(a.url, "POST", "/hooks/routing", { headers: { "X-Hub-Signature-256": sign(push), "X-Edgeplan-Signature-256": sign(push, "x") }, rawBody: push });
    expect(mixed.status).toBe(401);
    expect(a.calls).toEqual([]);
  });

  it("an unknown source and a source without a secret are 404 alike; a body over 1 MiB is 413", async () => {
    const a = await start();
    for (const source of ["nope", "plain"]) {
      const r = await http(a.url, "POST", `/hooks/${source}`, { headers: { "X-Hub-Signature-256": sign(push) }, rawBody: push });
      expect([r.status, r.json]).toEqual([404, { error: `no webhook at /hooks/${source}: no source of that name has a webhook_secret` }]);
    }
    const big = "x".repeat(1024 * 1024 + 1);
    const r = await http(a.url, "POST", "/hooks/routing", { headers: { "X-Hub-Signature-256": sign(big) }, rawBody: big });
    expect([r.status, r.json]).toEqual([413, { error: "the body is larger than the limit of 1048576 bytes" }]);
    expect(a.calls).toEqual([]);
  });
});

describe("the request log", () => {
  it("has one line per request with method, path, status and ms, and never the token, a query, a body or a secret", async () => {
    const a = await start();
    await http(a.url, "GET", `/api/stacks/web/history?limit=3&note=${TOKEN}`, { headers: bearer() });
    await http(a.url, "POST", "/api/stacks/web/ack", { headers: bearer(), body: { rule: "r", digest: "sha256:good", by: TOKEN } });
    await http(a.url, "POST", "/api/stacks/web/reconcile", { headers: bearer(`${TOKEN}-wrong`) });
    await http(a.url, "POST", "/hooks/routing", { headers: { "X-Hub-Signature-256": sign(SECRET) }, rawBody: SECRET });
    const lines = a.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => [l.msg, l.method, l.path, l.status, typeof l.ms])).toEqual([
      ["request", "GET", "/api/stacks/web/history", 200, "number"],
      ["request", "POST", "/api/stacks/web/ack", 200, "number"],
      ["request", "POST", "/api/stacks/web/reconcile", 401, "number"],
      ["request", "POST", "/hooks/routing", 202, "number"],
    ]);
    const all = a.lines.join("\n");
    expect(all).not.toContain("canary");
    expect(all).not.toContain("limit=");
  });

  it("answers a request whose headers come too slowly with 408 and a JSON error", async () => {
    const a = await start({ headersTimeoutMs: 200, requestTimeoutMs: 200 });
    const answer = await raw(a.url, "GET /api/stacks HTTP/1.1\r\nHost: x\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(answer.endsWith('{"error":"the request did not arrive in time; send it again"}')).toBe(true);
  });
});

describe("/metrics", () => {
  it("reports reconciliations, drift, waiting rules, readiness, API requests and fetches, and promtool accepts it", async () => {
    const a = await start();
    const m = a.metrics;
    m.reconciled("web", "applied", 0.3);
    m.reconciled("web", "in_sync", 0.1);
    m.reconciled("api", "waiting", 2);
    m.drift("web", 3);
    m.waiting("api", 2);
    m.ready("web", true);
    m.ready("api", false);
    m.ready("gone", true);
    m.ready("gone", null);
    m.apiRequest(200);
    m.apiRequests("201", 4);
    m.apiRequests("429", 2);
    m.apiRequest("none");
    m.apiRequests("network", 1);
    m.fetched("routing");
    m.fetchError("routing");
    m.fetchError("routing");
    const r = await http(a.url, "GET", "/metrics");
    expect([r.status, r.headers["content-type"]]).toEqual([200, "text/plain; version=0.0.4; charset=utf-8"]);
    const t = r.text;
    expect(sample(t, "edgeplan_agent_reconciliations_total", { stack: "web", result: "applied" })).toBe(1);
    expect(sample(t, "edgeplan_agent_reconciliations_total", { stack: "api", result: "waiting" })).toBe(1);
    expect(sample(t, "edgeplan_agent_reconciliation_duration_seconds_count", { stack: "web" })).toBe(2);
    expect(sample(t, "edgeplan_agent_reconciliation_duration_seconds_sum", { stack: "web" })).toBeCloseTo(0.4);
    expect([sample(t, "edgeplan_agent_drift_objects", { stack: "web" }), sample(t, "edgeplan_agent_waiting_rules", { stack: "api" })]).toEqual([3, 2]);
    expect([sample(t, "edgeplan_agent_stack_ready", { stack: "web" }), sample(t, "edgeplan_agent_stack_ready", { stack: "api" })]).toEqual([1, 0]);
    expect(sample(t, "edgeplan_agent_stack_ready", { stack: "gone" })).toBeUndefined();
    const codes = ["2xx", "4xx", "none"].map((code) => sample(t, "edgeplan_agent_api_requests_total", { code }));
    expect(codes).toEqual([5, 2, 2]);
    expect(sample(t, "edgeplan_agent_git_fetches_total", { source: "routing" })).toBe(1);
    expect(sample(t, "edgeplan_agent_git_fetch_errors_total", { source: "routing" })).toBe(2);
    expect(sample(t, "process_resident_memory_bytes")).toBeGreaterThan(0);
    const check = promtoolCheck(t);
    expect([check.code, check.output]).toEqual([0, ""]);
  });
});

describe("the CLI's client", () => {
  it("returns the answer's JSON, sends the token, and says why the agent refused", async () => {
    const a = await start();
    expect(await agentRequest(a.url, "GET", "/api/stacks/web", null)).toEqual(status("web"));
    expect(await agentRequest(`${a.url}/`, "POST", "/api/stacks/web/ack", TOKEN, { rule: "r", digest: "sha256:good" })).toMatchObject({ acknowledged: true });
    await expect(agentRequest(a.url, "POST", "/api/stacks/web/ack", TOKEN, { rule: "r", digest: "sha256:old" })).rejects.toThrow(
      `the agent at ${a.url} refused POST /api/stacks/web/ack (409): no rule r waits on web for the plan sha256:old`,
    );
    await expect(agentRequest(a.url, "POST", "/api/stacks/web/reconcile", null)).rejects.toThrow(
      `the agent at ${a.url} refused POST /api/stacks/web/reconcile (401): the request has no Authorization header; send Authorization: Bearer TOKEN (the agent's --token-file); pass --token-file with the agent's token`,
    );
    await expect(agentRequest("ftp://x", "GET", "/api/stacks", null)).rejects.toThrow(
      'the agent URL "ftp://x" is not an http:// or https:// URL; give one like http://127.0.0.1:9400 (--agent-url or EDGEPLAN_AGENT_URL)',
    );
  });

  it("says there is no agent when nothing listens, or nothing answers within the timeout", async () => {
    const a = await start();
    await a.listener.close();
    await expect(agentRequest(a.url, "GET", "/api/stacks", null)).rejects.toThrow(
      `no agent at ${a.url} (connection refused): is \`edgeplan agent\` running? (--agent-url or EDGEPLAN_AGENT_URL)`,
    );
    const silent = createServer(() => undefined);
    await new Promise<void>((done) => silent.listen(0, "127.0.0.1", done));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      await expect(agentRequest(url, "GET", "/api/stacks", null, undefined, 200)).rejects.toThrow(`no agent at ${url} (no answer within the timeout): is`);
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });
});

describe("starting", () => {
  it("refuses a malformed address, an address in use, and an empty token", async () => {
    const a = await start();
    const base = { token: TOKEN, control: fakeControl().control, metrics: new AgentMetrics(), log: () => undefined, renderIndex: () => "", renderStack: () => "" };
    await expect(startAgentListener({ ...base, listen: "localhost" })).rejects.toThrow(
      '--listen: expected HOST:PORT, e.g. 127.0.0.1:9090 or [::1]:9090 (port 0 picks a free one), got "localhost"',
    );
    const taken = a.url.replace("http://", "");
    await expect(startAgentListener({ ...base, listen: taken })).rejects.toThrow(
      `cannot listen on ${taken}: the address is in use; pick another --listen port (0 picks a free one)`,
    );
    await expect(startAgentListener({ ...base, listen: "127.0.0.1:0", token: "" })).rejects.toThrow(
      "the agent's token is empty: write one into the --token-file (e.g. openssl rand -hex 32)",
    );
  });
});
