/**
 * Running the built CLI as a child process for the reliability tests: with a small heap (so that a blow-up fails
 * instead of swapping), a clean environment (nothing of the test runner's leaks in), a working directory of the
 * test's choosing, and an outer time limit after which the child is killed and the test fails.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLI } from "../helpers/server.js";

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  cwd: string;
  /** Added to a minimal environment (PATH and NO_COLOR only). */
  env?: Record<string, string>;
  /** Heap limit of the child, in MB (default 256). */
  heapMb?: number;
  /** Outer limit (default 20 s): past it the child is killed and the promise rejects. */
  timeoutMs?: number;
}

export interface RunningCli {
  proc: ChildProcess;
  /** Output so far. */
  stdout(): string;
  stderr(): string;
  done: Promise<CliResult>;
}

/** Starts `node --max-old-space-size=<heapMb> dist/cli/edgeplan.js ...args`. */
export function startCli(args: string[], options: CliOptions): RunningCli {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", NO_COLOR: "1", ...options.env };
  const proc = spawn(process.execPath, [`--max-old-space-size=${options.heapMb ?? 256}`, CLI, ...args], {
    cwd: options.cwd,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  proc.stdout?.setEncoding("utf8").on("data", (s: string) => (stdout += s));
  proc.stderr?.setEncoding("utf8").on("data", (s: string) => (stderr += s));
  const timeoutMs = options.timeoutMs ?? 20_000;
  const done = new Promise<CliResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`edgeplan ${args.join(" ")} did not end within ${timeoutMs} ms; stderr so far:\n${stderr.slice(0, 2000)}`));
    }, timeoutMs);
    proc.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return { proc, stdout: () => stdout, stderr: () => stderr, done };
}

/** Runs the CLI to its end. */
export function runEdgeplan(args: string[], options: CliOptions): Promise<CliResult> {
  return startCli(args, options).done;
}

/** A fresh temporary folder and its removal. */
export function tempDir(prefix: string): { path: string; remove(): void } {
  const path = mkdtempSync(join(tmpdir(), `edgeplan-${prefix}-`));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/** `edgeplan-canary-<random>`: a value that must never appear in any output. */
export function canary(): string {
  return `edgeplan-canary-${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
}
