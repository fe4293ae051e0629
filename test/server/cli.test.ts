/**
 * `edgeplan serve` as a user runs it: the built CLI in a child process. Start-up, refusal without keys, clean
 * exit on SIGTERM and SIGINT, the request log, fault announcements, fixtures across restarts, and durability of
 * acknowledged writes across `kill -9`.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { apiClient, fakeId, persistentStoreArgs, runCli, spawnServer, type SpawnedServer } from "../helpers/server.js";

const dir = mkdtempSync(join(tmpdir(), "edgeplan-serve-"));
const FIXTURES = new URL("./fixtures/fixtures.yaml", import.meta.url).pathname;
const IDP = readFileSync(new URL("./fixtures/idp-metadata.xml", import.meta.url), "utf8");
const started: SpawnedServer[] = [];
afterAll(async () => {
  for (const s of started) await s.kill9();
  rmSync(dir, { recursive: true, force: true });
});

async function spawn(...args: Parameters<typeof spawnServer>): Promise<SpawnedServer> {
  const s = await spawnServer(...args);
  started.push(s);
  return s;
}

describe("start and stop", () => {
  it("refuses to start without an API key: exit 1 and a message that says what to do", async () => {
    const r = await runCli(["serve", "--port", "0"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("edgeplan: serve needs at least one API key: pass --api-key KEY or set EDGEPLAN_SERVE_API_KEYS=KEY1,KEY2\n");
  });

  it("prints exactly `listening on http://127.0.0.1:PORT` and exits 0 on SIGTERM", async () => {
    const s = await spawn();
    expect(s.stdout()).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+\n$/);
    expect((await apiClient(s.url, s.apiKey).get("/backends/weighted")).status).toBe(200);
    expect(await s.stop()).toBe(0);
    expect(s.stderr()).not.toContain("Error");
  });

  it("exits 0 on SIGINT", async () => {
    const s = await spawn();
    s.proc.kill("SIGINT");
    expect((await s.exited).code).toBe(0);
  });

  it("takes keys from EDGEPLAN_SERVE_API_KEYS, each its own account", async () => {
    const s = await spawn([], { EDGEPLAN_SERVE_API_KEYS: "ep_env_key_one, ep_env_key_two" }, { noKey: true });
    const one = apiClient(s.url, "ep_env_key_one");
    const two = apiClient(s.url, "ep_env_key_two");
    const created = await one.post("/backends/weighted", { backends: {} });
    expect(created.status).toBe(201);
    expect((await two.get(`/backends/weighted/${created.json.id}`)).status).toBe(404);
    expect((await apiClient(s.url, "ep_env_key_three").get("/backends/weighted")).status).toBe(401);
    await s.stop();
  });

  it("refuses bad flags and a port in use with exit 1 and the reason", async () => {
    const cases: [string[], string][] = [
      [["--fail-rate", "2"], '--fail-rate: expected a probability from 0 to 1 (e.g. 0.1), got "2"'],
      [["--drop-rate", "x"], '--drop-rate: expected a probability from 0 to 1 (e.g. 0.1), got "x"'],
      [["--rate-limit", "lots"], '--rate-limit: expected N/DURATION such as 120/60s, 20/1s or 500/100ms (N >= 1; units ms, s, m, h), or "off"; got "lots"'],
      [["--latency", "50-10"], '--latency: expected MS or MIN-MAX in milliseconds with MIN <= MAX (e.g. 50 or 20-200), got "50-10"'],
      [["--fault-seed", "-1"], '--fault-seed: expected a whole number from 0 to 4294967295, got "-1"'],
      [["--fault-seed", "4294967296"], '--fault-seed: expected a whole number from 0 to 4294967295, got "4294967296"'],
      [["--port", "65536"], '--port: expected a whole number from 0 to 65535, got "65536"'],
      [["--public-url", "nope"], '--public-url "nope" is not a URL'],
      [["--fixtures", join(dir, "absent.yaml")], "cannot read the fixtures file"],
      [
        ["--data", join(dir, "both.db"), "--database", "postgres://u:secret@127.0.0.1:1/db"],
        "edgeplan: --data and --database (or EDGEPLAN_SERVE_DATABASE_URL) both name a store; give one: --data FILE for SQLite, --database URL for PostgreSQL\n",
      ],
      [["--database", "mysql://127.0.0.1/db"], "edgeplan: --database must start with postgres:// or postgresql:// (got mysql://); for a SQLite file use --data FILE\n"],
      [["--pool-size", "0"], '--pool-size: expected a whole number from 1 to 1000, got "0"'],
      [
        ["--database", "postgres://edgeplan:secret-password@127.0.0.1:1/nothing"],
        "edgeplan: cannot open the database postgres://edgeplan:***@127.0.0.1:1/nothing: connect ECONNREFUSED 127.0.0.1:1; check the URL, and that PostgreSQL runs and lets this user in\n",
      ],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(["serve", "--port", "0", "--api-key", "k", ...args]);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stderr).toContain(message);
      expect(r.stderr).not.toContain("secret");
    }
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = await runCli(["serve", "--port", String(port), "--api-key", "k"]);
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(`edgeplan: cannot listen on 127.0.0.1:${port}: the address is in use; pick another --port (0 picks a free one)\n`);
    } finally {
      blocker.close();
    }
  });
});

/** What a server stopped by SIGTERM with --drain-delay 0 and nothing in flight says, at which level. */
const DRAIN_LINES = [
  ["info", "SIGTERM: draining"],
  ["info", "draining: no new connections; the requests in flight have 30000 ms to be answered"],
  ["info", "drained: the store is closed"],
];

describe("logs and notices", () => {
  it("writes one JSON line per request on stderr, with its level, never the key; --quiet turns them off", async () => {
    const s = await spawn();
    const api = apiClient(s.url, s.apiKey);
    await api.get("/backends/weighted?limit=5&before_id=secret-looking-value");
    await api.post("/backends/weighted", { backends: {} });
    await apiClient(s.url, "wrong-key-value").get("/backends/weighted");
    expect(await s.stop()).toBe(0);
    const lines = s
      .stderr()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const requests = lines.filter((l) => l.msg === "request");
    expect(requests.map((l) => [l.level, l.method, l.path, l.status])).toEqual([
      ["info", "GET", "/backends/weighted", 200],
      ["info", "POST", "/backends/weighted", 201],
      ["info", "GET", "/backends/weighted", 401],
    ]);
    for (const l of requests) {
      expect(l.operation_id).toMatch(/^op_[0-9A-Za-z]{27}$/);
      expect(typeof l.ms).toBe("number");
    }
    expect(lines.filter((l) => l.msg !== "request").map((l) => [l.level, l.msg])).toEqual(DRAIN_LINES);
    expect(s.stderr()).not.toContain(s.apiKey);
    expect(s.stderr()).not.toContain("wrong-key-value");
    expect(s.stderr()).not.toContain("secret-looking-value");

    const quiet = await spawn(["--quiet"]);
    await apiClient(quiet.url, quiet.apiKey).get("/backends/weighted");
    expect(await quiet.stop()).toBe(0);
    expect(
      quiet
        .stderr()
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).msg),
    ).toEqual(DRAIN_LINES.map(([, msg]) => msg));
  });

  it("announces every fault that is on", async () => {
    const s = await spawn([
      "--quiet",
      "--latency",
      "1-2",
      "--fail-rate",
      "0.25",
      "--drop-rate",
      "0.5",
      "--fault-seed",
      "7",
      "--rate-limit",
      "120/60s",
      "--max-inflight",
      "8",
    ]);
    const lines = s
      .stderr()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { level: string; msg: string });
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ["warn", "fault on: every request is delayed 1-2 ms (--latency)"],
      ["warn", "fault on: 25% of requests are answered 503 before anything is done (--fail-rate)"],
      ["warn", "fault on: 50% of successful writes are committed, then their connection is cut before the answer (--drop-rate)"],
      ["info", "faults are drawn from seed 7: the same requests in the same order meet the same faults (--fault-seed)"],
      ["info", "limit on: 120 requests per 60000 ms per API key, else 429 (--rate-limit)"],
      ["info", "limit on: 8 requests in flight per API key, else 429 (--max-inflight)"],
    ]);
    expect(await s.stop()).toBe(0);
  });

  it("uses --public-url, --sp-base and --version-header", async () => {
    const s = await spawn([
      "--quiet",
      "--public-url",
      "https://edge-api.example.com",
      "--sp-base",
      "https://sp.example.com",
      "--version-header",
      "X-Version",
      "--fixtures",
      FIXTURES,
    ]);
    const api = apiClient(s.url, s.apiKey, "X-Version");
    const created = await api.post("/backends/weighted", { backends: {} });
    expect(created.json.uri).toBe(`https://edge-api.example.com/backends/weighted/${created.json.id}`);
    const saml = await api.put(`/edges/https/${fakeId("edghts", 1)}/routes/${fakeId("edghtsrt", 1)}/saml`, { idp_metadata: IDP });
    expect(saml.json.entity_id).toBe(`https://sp.example.com/saml/${fakeId("edghtsrt", 1)}`);
    expect((await apiClient(s.url, s.apiKey).get("/backends/weighted")).json.error_code).toBe("ERR_NGROK_218");
    await s.stop();
  });
});

describe("persistence", () => {
  it("loads fixtures into the first key's account, and a restart on the same data file duplicates nothing", async () => {
    const data = await persistentStoreArgs(join(dir, "fixtures.db"));
    const key = "ep_test_fixture_restart_key";
    const first = await spawn(["--quiet", ...data, "--fixtures", FIXTURES], {}, { apiKey: key });
    expect(first.stderr()).toContain("fixtures: 2 edges, 4 routes, 4 backends in the first key's account (10 created now, 0 already there)");
    const before = await apiClient(first.url, key).get("/edges/https");
    expect(before.json.https_edges).toHaveLength(2);
    expect(await first.stop()).toBe(0);

    const second = await spawn(["--quiet", ...data, "--fixtures", FIXTURES], {}, { apiKey: key });
    expect(second.stderr()).toContain("(0 created now, 10 already there)");
    const after = await apiClient(second.url, key).get("/edges/https");
    const strip = (body: { https_edges: unknown[] }): string => JSON.stringify(body.https_edges).replaceAll(first.url, "").replaceAll(second.url, "");
    expect(strip(after.json)).toBe(strip(before.json));
    // Fixture backends are usable as children.
    const wb = await apiClient(second.url, key).post("/backends/weighted", { backends: { [fakeId("bkdhr", 1)]: 1 } });
    expect(wb.status).toBe(201);
    await second.stop();
  });

  it("every acknowledged write survives kill -9", async () => {
    const data = await persistentStoreArgs(join(dir, "durable.db"));
    const key = "ep_test_durability_key";
    const s = await spawn(["--quiet", ...data, "--fixtures", FIXTURES], {}, { apiKey: key });
    const api = apiClient(s.url, key);
    const acknowledged = new Map<string, { description: string; metadata: string; backends: Record<string, number> }>();
    let previous: string | undefined;
    for (let i = 0; i < 40; i++) {
      const body = { description: `write ${i}`, metadata: `{"n":${i}}`, backends: previous ? { [previous]: i } : {} };
      const r = await api.post("/backends/weighted", body);
      expect(r.status).toBe(201);
      acknowledged.set(r.json.id as string, body);
      previous = r.json.id as string;
    }
    // Updates too: the last answer of each is what must be there.
    const ids = [...acknowledged.keys()];
    for (const id of ids.slice(0, 10)) {
      const body = { description: `patched ${id}`, metadata: "", backends: {} };
      const r = await api.patch(`/backends/weighted/${id}`, body);
      expect(r.status).toBe(200);
      acknowledged.set(id, body);
    }
    const cbPath = `/edges/https/${fakeId("edghts", 1)}/routes/${fakeId("edghtsrt", 1)}/circuit_breaker`;
    const cb = { enabled: false, tripped_duration: 9, rolling_window: 8, num_buckets: 7, volume_threshold: 6, error_threshold_percentage: 0.5 };
    expect((await api.put(cbPath, cb)).status).toBe(200);
    await s.kill9();
    expect(s.proc.signalCode).toBe("SIGKILL");

    const again = await spawn(["--quiet", ...data, "--fixtures", FIXTURES], {}, { apiKey: key });
    const api2 = apiClient(again.url, key);
    for (const [id, body] of acknowledged) {
      const r = await api2.get(`/backends/weighted/${id}`);
      expect(r.status, id).toBe(200);
      expect(r.json).toMatchObject(body);
    }
    expect((await api2.get(cbPath)).json).toEqual(cb);
    // Ids made after the restart still sort after every earlier one.
    const next = await api2.post("/backends/weighted", { backends: {} });
    expect(ids.every((id) => id < next.json.id)).toBe(true);
    expect(await again.stop()).toBe(0);
  });
});
