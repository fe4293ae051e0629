/**
 * Helpers of the apply end-to-end tests: the real server in this process (its request log kept), the BUILT CLI run
 * as a child process in a temporary folder of manifests, and raw reads of what the server holds.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect } from "vitest";
import type { WeightedBackend } from "../../src/model/wire.js";
import { apiClient, CLI, fakeId, REPO_ROOT, startTestServer, type TestServer } from "../helpers/server.js";

export const EDGE = fakeId("edghts", 8001);
export const R1 = fakeId("edghtsrt", 8001);
export const R2 = fakeId("edghtsrt", 8002);
export const HR1 = fakeId("bkdhr", 8001);
export const HR2 = fakeId("bkdhr", 8002);
export const IDP_XML = readFileSync(join(REPO_ROOT, "examples", "saml", "idp", "okta.xml"), "utf8");

export const FIXTURES = {
  edges: [
    {
      id: EDGE,
      routes: [
        { id: R1, match: "/admin", match_type: "path_prefix" as const },
        { id: R2, match: "/", match_type: "path_prefix" as const },
      ],
    },
  ],
  backends: [
    { id: HR1, type: "http_response" as const },
    { id: HR2, type: "http_response" as const },
  ],
};

export interface LogLine {
  method: string;
  path: string;
  status: number;
  dropped?: boolean;
}

/** A server for one test, with helpers to read it and run the CLI against it. */
export interface World {
  server: TestServer;
  /** A temporary folder: the CLI's working directory, with the manifests in `m/`. */
  dir: string;
  /** Replaces the manifests with these files (relative to `m/`). */
  manifests(files: Record<string, string>): void;
  /** Runs the built CLI in `dir` against the server (no terminal on stdin). */
  cli(args: string[], env?: Record<string, string>): Promise<CliResult>;
  /** Starts the built CLI without waiting for it (`env` added to its environment). */
  spawnCli(args: string[], env?: Record<string, string>): RunningCli;
  /** Every weighted backend of the account, newest first. */
  list(): Promise<WeightedBackend[]>;
  /** The weighted backends that carry stack "default"'s marker, by name. */
  owned(stack?: string): Promise<Map<string, WeightedBackend>>;
  /** Request log lines from index `from` on. */
  log(from?: number): LogLine[];
  /** Writes (POST, PATCH, PUT, DELETE) in the log from index `from` on. */
  writes(from?: number): LogLine[];
  /**
   * The writes of the changes of ONE apply run that began at log index `from`: checks that its first write created
   * its lease and its last deleted it (docs/reliability.md, "One apply at a time"), and returns the writes between.
   */
  changeWrites(from?: number): LogLine[];
  raw: ReturnType<typeof apiClient>;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunningCli {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  done: Promise<CliResult>;
}

const worlds: World[] = [];

/** Starts a server (in memory, with the fixtures above unless others are given) and a temporary folder. Close them with `closeWorlds`. */
export async function startWorld(faults: { dropRate?: number; latency?: [number, number]; faultSeed?: number; fixtures?: typeof FIXTURES } = {}): Promise<World> {
  const server = await startTestServer({ fixtures: FIXTURES, ...faults });
  const dir = mkdtempSync(join(tmpdir(), "edgeplan-apply-"));
  const raw = apiClient(server.url, server.apiKey);
  const env = (): NodeJS.ProcessEnv => {
    const e: NodeJS.ProcessEnv = { ...process.env, EDGEPLAN_API_URL: server.url, EDGEPLAN_API_KEY: server.apiKey, NO_COLOR: "1" };
    delete e.EDGEPLAN_STACK;
    return e;
  };
  const spawnCli = (args: string[], extra: Record<string, string> = {}): RunningCli => {
    const proc = spawn(process.execPath, [CLI, ...args], { cwd: dir, env: { ...env(), ...extra }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    proc.stdout?.setEncoding("utf8").on("data", (s: string) => (out += s));
    proc.stderr?.setEncoding("utf8").on("data", (s: string) => (err += s));
    const done = new Promise<CliResult>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill("SIGKILL");
        reject(new Error(`edgeplan ${args.join(" ")} did not end within 30 s; stderr:\n${err}`));
      }, 30_000);
      proc.once("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout: out, stderr: err });
      });
    });
    return { proc, stdout: () => out, stderr: () => err, done };
  };
  const world: World = {
    server,
    dir,
    raw,
    manifests(files) {
      rmSync(join(dir, "m"), { recursive: true, force: true });
      for (const [name, text] of Object.entries(files)) {
        const file = join(dir, "m", name);
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(file, text);
      }
    },
    cli: (args, extra) => spawnCli(args, extra).done,
    spawnCli: (args, extra) => spawnCli(args, extra),
    async list() {
      const res = await raw.get("/backends/weighted");
      expect(res.status).toBe(200);
      return res.json.backends as WeightedBackend[];
    },
    async owned(stack = "default") {
      const out = new Map<string, WeightedBackend>();
      for (const wb of await world.list()) {
        const marker = markerOf(wb);
        // Lease and inventory objects carry the stack but no name: they are edgeplan's bookkeeping, not objects of the manifests.
        if (marker?.stack !== stack || typeof marker.name !== "string") continue;
        expect(out.has(marker.name), `two objects carry the marker of "${marker.name}"`).toBe(false);
        out.set(marker.name, wb);
      }
      return out;
    },
    log: (from = 0) => (server.logLines as unknown as LogLine[]).slice(from),
    writes: (from = 0) => world.log(from).filter((l) => l.method !== "GET"),
    changeWrites(from = 0) {
      const all = world.writes(from);
      expect(all.length, "an apply writes at least its lease and its release").toBeGreaterThanOrEqual(2);
      expect(`${all[0]?.method} ${all[0]?.path} ${all[0]?.status}`).toBe("POST /backends/weighted 201");
      const last = all[all.length - 1];
      expect(`${last?.method} ${last?.status}`).toBe("DELETE 204");
      expect(last?.path).toMatch(/^\/backends\/weighted\/bkdwd_\w{27}$/);
      return all.slice(1, -1);
    },
  };
  worlds.push(world);
  return world;
}

export async function closeWorlds(): Promise<void> {
  await Promise.all(worlds.map((w) => w.server.close()));
  for (const w of worlds) rmSync(w.dir, { recursive: true, force: true });
}

export function markerOf(wb: WeightedBackend): { stack: string; name: string; protect?: boolean } | null {
  try {
    const m = (JSON.parse(wb.metadata) as { edgeplan?: { stack: string; name: string; protect?: boolean } }).edgeplan;
    return m ?? null;
  } catch {
    return null;
  }
}

/** A WeightedBackend manifest. */
export function wbYaml(name: string, backends: Record<string, number>, extra: Record<string, string | boolean> = {}): string {
  const lines = [`kind: WeightedBackend`, `name: ${name}`];
  for (const [k, v] of Object.entries(extra)) lines.push(`${k}: ${typeof v === "string" ? JSON.stringify(v) : String(v)}`);
  lines.push("backends:");
  for (const [k, w] of Object.entries(backends)) lines.push(`  ${k}: ${w}`);
  return `${lines.join("\n")}\n`;
}

/** POSTs a weighted backend straight to the server (an object edgeplan did not make). */
export async function seed(world: World, body: { description?: string; metadata?: string; backends: Record<string, number> }): Promise<WeightedBackend> {
  const res = await world.raw.post("/backends/weighted", body);
  expect(res.status).toBe(201);
  return res.json as WeightedBackend;
}
