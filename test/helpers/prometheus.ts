/**
 * A real Prometheus for end-to-end tests (Debian's prometheus package; .ci/run installs it): started on a free
 * loopback port with its data in a temporary folder, scraping every second a tiny HTTP target whose gauges the test
 * sets. Without the binary, or when it does not start, the tests skip with a notice; under CI=true they fail.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const PROMETHEUS = "/usr/bin/prometheus";

/** A running Prometheus, and the target it scrapes. */
export interface Prometheus {
  url: string;
  /** Sets a gauge of the target (exposed as `name value` on its /metrics). */
  set(name: string, value: number): void;
  /** The value of an instant query as Prometheus answers it now ("" when it has no series). */
  query(q: string): Promise<string>;
  /** Waits (at most 15 s) until the query's value is `value`: the scrapes caught up with `set`. */
  until(q: string, value: string): Promise<void>;
  close(): Promise<void>;
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return (server.address() as AddressInfo).port;
}

/** A port free a moment ago (Prometheus binds it itself). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  const port = await listen(probe);
  await new Promise((r) => probe.close(r));
  return port;
}

async function poll(what: string, ms: number, ok: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await ok().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`${what} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Starts the target and Prometheus, and waits until Prometheus is ready and has scraped the target once. Returns
 * why not when the binary is missing or does not start (the caller skips, or fails under CI).
 */
export async function startPrometheus(): Promise<Prometheus | { missing: string }> {
  if (!existsSync(PROMETHEUS)) return { missing: `${PROMETHEUS} is missing: install Debian's prometheus package (.ci/run does)` };
  const gauges = new Map<string, number>([["edgeplan_test_up", 1]]);
  const target = createServer((_req, res) => {
    res.setHeader("content-type", "text/plain; version=0.0.4");
    res.end([...gauges].map(([k, v]) => `# TYPE ${k} gauge\n${k} ${v}\n`).join(""));
  });
  const targetPort = await listen(target);
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-prometheus-"));
  const config = `global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: app\n    static_configs:\n      - targets: ["127.0.0.1:${targetPort}"]\n`;
  writeFileSync(join(dir, "prometheus.yml"), config);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let log = "";
  const proc: ChildProcess = spawn(
    PROMETHEUS,
    [`--config.file=${join(dir, "prometheus.yml")}`, `--storage.tsdb.path=${join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=warn"],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  proc.stderr?.setEncoding("utf8").on("data", (s: string) => (log = (log + s).slice(-2000)));
  const close = async (): Promise<void> => {
    proc.kill("SIGTERM");
    if (proc.exitCode === null) await new Promise((r) => proc.once("exit", r));
    await new Promise((r) => target.close(r));
    rmSync(dir, { recursive: true, force: true });
  };
  const query = async (q: string): Promise<string> => {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(q)}`);
    const body = (await res.json()) as { data?: { result?: Array<{ value: [number, string] }> } };
    return body.data?.result?.[0]?.value[1] ?? "";
  };
  const prometheus: Prometheus = {
    url,
    set: (name, value) => gauges.set(name, value),
    query,
    until: (q, value) => poll(`${q} did not become ${value}`, 15_000, async () => (await query(q)) === value),
    close,
  };
  try {
    await poll("Prometheus was not ready", 20_000, async () => proc.exitCode === null && (await fetch(`${url}/-/ready`)).ok);
    await prometheus.until("edgeplan_test_up", "1");
    return prometheus;
  } catch (err) {
    await close();
    return { missing: `${PROMETHEUS} did not start: ${(err as Error).message}; its log: ${log.trim() || "(empty)"}` };
  }
}
