/**
 * `edgeplan serve` (the built CLI) as it runs in production: the drain on SIGTERM (readiness first, requests in
 * flight answered with `Connection: close`, the port closed after `--drain-delay`, connections cut after
 * `--drain-timeout`, a second signal exits at once), log lines with levels in JSON or text, and the flags' errors.
 */
import { createServer } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { drainOptions } from "../../src/commands/serve.js";
import { apiClient, http, runCli, spawnServer, type SpawnedServer } from "../helpers/server.js";

const running: SpawnedServer[] = [];
afterAll(async () => {
  await Promise.all(running.map((s) => s.kill9()));
});

async function serve(args: string[]): Promise<SpawnedServer> {
  const s = await spawnServer(args);
  running.push(s);
  return s;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** The JSON lines of the server's stderr, as [level, msg]. */
function levelsAndMessages(s: SpawnedServer): [string, string][] {
  return s
    .stderr()
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as { level: string; msg: string })
    .map((l) => [l.level, l.msg]);
}

describe("draining on SIGTERM", () => {
  it("readiness 503 at once, the request in flight answered with Connection: close, then the port refuses, exit 0", async () => {
    const s = await serve(["--quiet", "--latency", "500", "--drain-delay", "700ms", "--admin-listen", "127.0.0.1:0"]);
    const admin = /^admin listening on (http:\/\/\S+) \(\/healthz, \/readyz, \/metrics\)$/m.exec(s.stdout())?.[1] as string;
    expect((await http(admin, "GET", "/readyz")).status).toBe(200);
    const api = apiClient(s.url, s.apiKey);
    const inFlight = api.post("/backends/weighted", { backends: {}, description: "accepted before the signal" });
    await pause(100);
    s.proc.kill("SIGTERM");
    await pause(100);
    expect((await http(admin, "GET", "/readyz")).json).toEqual({ status: "unavailable", reason: "draining: this replica is shutting down; send requests to another one" });
    expect((await http(s.url, "GET", "/readyz")).status).toBe(503);
    const answered = await inFlight;
    expect([answered.status, answered.headers.connection]).toEqual([201, "close"]);
    await pause(800);
    await expect(http(s.url, "GET", "/healthz")).rejects.toThrow(/ECONNREFUSED/);
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(levelsAndMessages(s)).toEqual([
      ["warn", "fault on: every request is delayed 500 ms (--latency)"],
      ["info", "SIGTERM: draining"],
      ["info", "draining: /readyz answers 503; new connections are accepted for 700 ms more, then refused"],
      ["info", "draining: no new connections; the requests in flight have 30000 ms to be answered"],
      ["info", "drained: the store is closed"],
    ]);
  });

  it("cuts the connections still busy after --drain-timeout, and still exits 0", async () => {
    const s = await serve(["--quiet", "--latency", "5000", "--drain-timeout", "300ms"]);
    const inFlight = apiClient(s.url, s.apiKey).get("/backends/weighted");
    await pause(100);
    const signalled = Date.now();
    s.proc.kill("SIGTERM");
    await expect(inFlight).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalled).toBeLessThan(3000);
    expect(levelsAndMessages(s)).toContainEqual(["warn", "draining: 1 connections still busy after 300 ms were cut"]);
  });

  it("a second SIGTERM exits at once with code 1", async () => {
    const s = await serve(["--quiet", "--latency", "5000"]);
    const inFlight = apiClient(s.url, s.apiKey).get("/backends/weighted");
    inFlight.catch(() => undefined);
    await pause(100);
    s.proc.kill("SIGTERM");
    await pause(200);
    const second = Date.now();
    s.proc.kill("SIGTERM");
    expect(await s.exited).toEqual({ code: 1, signal: null });
    expect(Date.now() - second).toBeLessThan(2000);
    expect(levelsAndMessages(s)).toContainEqual(["warn", "SIGTERM while draining: exiting now, without waiting for the requests in flight"]);
  });
});

describe("logs", () => {
  it("--log-format text writes logfmt lines with their level", async () => {
    const s = await serve(["--log-format", "text"]);
    await apiClient(s.url, s.apiKey).get("/backends/weighted?limit=5");
    expect(await s.stop()).toBe(0);
    const lines = s.stderr().trim().split("\n");
    expect(lines[0]).toMatch(
      /^time=\d{4}-\d\d-\d\dT[\d:.]+Z level=info msg=request method=GET path=\/backends\/weighted status=200 ms=[\d.]+ operation_id=op_[0-9A-Za-z]{27}$/,
    );
    expect(lines.slice(1).map((l) => l.replace(/^time=\S+ /, ""))).toEqual([
      'level=info msg="SIGTERM: draining"',
      'level=info msg="draining: no new connections; the requests in flight have 30000 ms to be answered"',
      'level=info msg="drained: the store is closed"',
    ]);
    expect(s.stderr()).not.toContain(s.apiKey);
  });

  it("--log-level warn keeps only the warnings and errors", async () => {
    const s = await serve(["--log-level", "warn", "--fail-rate", "1"]);
    const api = apiClient(s.url, s.apiKey);
    expect((await api.get("/backends/weighted")).status).toBe(503);
    expect(await s.stop()).toBe(0);
    expect(levelsAndMessages(s)).toEqual([
      ["warn", "fault on: 100% of requests are answered 503 before anything is done (--fail-rate)"],
      ["warn", "request"],
    ]);
  });
});

describe("flags", () => {
  it("refuses bad production flags with exit 1 and the reason", async () => {
    const cases: [string[], string][] = [
      [["--log-format", "xml"], "error: option '--log-format <format>' argument 'xml' is invalid. Allowed choices are json, text."],
      [["--log-level", "loud"], "error: option '--log-level <level>' argument 'loud' is invalid. Allowed choices are debug, info, warn, error."],
      [["--admin-listen", "9090"], 'edgeplan: --admin-listen: expected HOST:PORT, e.g. 127.0.0.1:9090 or [::1]:9090 (port 0 picks a free one), got "9090"\n'],
      [["--tls-cert", "cert.pem"], "edgeplan: --tls-cert needs --tls-key: give both PEM files, the certificate and its key\n"],
      [["--drain-delay", "soon"], 'edgeplan: --drain-delay: expected milliseconds from 0 to 600000 (or a duration such as 30s), got "soon"\n'],
      [
        ["--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"],
        "edgeplan: cannot read --tls-cert /nonexistent/cert.pem: ENOENT; give a readable PEM file\n",
      ],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(["serve", "--port", "0", "--api-key", "k", ...args]);
      // commander adds the usage after its own messages: their first line is compared.
      const said = message.startsWith("error:") ? (r.stderr.split("\n")[0] as string) : r.stderr;
      expect([r.code, said], args.join(" ")).toEqual([1, message]);
    }
  });

  it("--drain-delay and --drain-timeout take 0s wherever they take 0", () => {
    expect(drainOptions({ drainDelay: "0s", drainTimeout: "0s" })).toEqual({ delayMs: 0, timeoutMs: 0 });
    expect(drainOptions({ drainDelay: "0", drainTimeout: "0ms" })).toEqual({ delayMs: 0, timeoutMs: 0 });
  });

  it("says when the admin address is in use", async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const r = await runCli(["serve", "--port", "0", "--api-key", "k", "--admin-listen", `127.0.0.1:${port}`]);
      expect([r.code, r.stderr]).toEqual([1, `edgeplan: cannot listen on 127.0.0.1:${port}: the address is in use; pick another --admin-listen port (0 picks a free one)\n`]);
    } finally {
      blocker.close();
    }
  });
});
