/**
 * Progress of apply on stderr. A non-terminal run of 150 changes (the built CLI against the real server) prints a
 * plain `N/150 changes done ...` line at every 10 % of the changes; fewer than 10 changes print none; `--quiet`
 * prints no progress at all. The heartbeat every 10 s and the live line of a terminal are checked without a network.
 */
import { PassThrough } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { PlainSchedule, startProgress } from "../../src/commands/progress.js";
import { captureIO } from "../../src/commands/io.js";
import type { ChangeResult } from "../../src/model/apply-report.js";
import { closeWorlds, HR1, startWorld, wbYaml } from "./e2e.js";

afterAll(closeWorlds);

const PROGRESS = /^(\d+)\/(\d+) changes done(?: \(.*\))?, \d+\.\d requests\/s, (?:about \d+ (?:s|min) left|finished|time left unknown)$/;
const manifestsOf = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`w${i}.yaml`, wbYaml(`w${i}`, { [HR1]: 100 })]));
const done = (address: string): ChangeResult => ({ address, kind: "weighted_backend", action: "create", status: "done", id: null, ms: 1, message: "created" });

describe.concurrent("apply progress in a CI log (no terminal)", { timeout: 90_000 }, () => {
  it("prints N/150 changes done at every 10 % of a 150-change run, the last one finished", async () => {
    const w = await startWorld();
    w.manifests(manifestsOf(150));
    const run = await w.cli(["apply", "m", "--auto-approve", "--rate-limit", "off"]);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stderr.split("\n").filter((l) => /^\d+\/\d+ changes done/.test(l));
    for (const l of lines) expect(l).toMatch(PROGRESS);
    // Lines every 15 changes; a line of another count could only be the 10-second heartbeat of a slow machine.
    const tenths = lines.map((l) => Number(PROGRESS.exec(l)?.[1])).filter((n) => n % 15 === 0);
    expect(tenths).toEqual([15, 30, 45, 60, 75, 90, 105, 120, 135, 150]);
    expect(lines.at(-1)).toMatch(/^150\/150 changes done, \d+\.\d requests\/s, finished$/);
    // Each change still has its own line, and the progress comes after the 15th change's line.
    expect(run.stderr.match(/^weighted_backend\.w\d+: created bkdwd_\w+ \(\d+ ms\)$/gm)?.length).toBe(150);
    const before = run.stderr.slice(0, run.stderr.indexOf("15/150 changes done"));
    expect(before.match(/: created bkdwd_/g)?.length).toBe(15);
  });

  it("prints no progress line for fewer than 10 changes, and no progress at all with --quiet", async () => {
    const w = await startWorld();
    w.manifests(manifestsOf(9));
    const few = await w.cli(["apply", "m", "--auto-approve", "--rate-limit", "off"]);
    expect(few.code).toBe(0);
    expect(few.stderr).not.toMatch(/changes done/);
    expect(few.stderr.match(/: created bkdwd_/g)?.length).toBe(9);
    w.manifests(manifestsOf(30));
    const quiet = await w.cli(["apply", "m", "--auto-approve", "--rate-limit", "off", "--quiet"]);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).toBe("");
    expect(quiet.stdout).toContain("\nApply complete: 21 done.\n");
  });
});

describe("PlainSchedule", () => {
  it("is due at every tenth, at the end, and 10 s after the last line even when nothing ended", () => {
    const s = new PlainSchedule(150, 0);
    expect(s.take(14, 1000)).toBe(false);
    expect(s.take(15, 2000)).toBe(true);
    expect(s.take(16, 11_999)).toBe(false);
    expect(s.take(16, 12_000)).toBe(true); // 10 s after the last line
    expect(s.take(30, 13_000)).toBe(false); // the next tenth counts from the last line
    expect(s.take(31, 13_000)).toBe(true);
    expect(s.take(150, 14_000)).toBe(true);
    expect(new PlainSchedule(9, 0).take(9, 60_000)).toBe(false);
  });

  it("for 155 changes, prints every 15 (never more than 10 % apart) and at 155", () => {
    const s = new PlainSchedule(155, 0);
    const printed = Array.from({ length: 155 }, (_, i) => i + 1).filter((n) => s.take(n, 0));
    expect(printed).toEqual([15, 30, 45, 60, 75, 90, 105, 120, 135, 150, 155]);
  });
});

describe("the live line on a terminal", () => {
  it("draws one line that it redraws in place, and ends with the last count", () => {
    const out = new PassThrough();
    let written = "";
    out.on("data", (b: Buffer) => (written += b.toString()));
    const cursorCall = (sequence: string, cb?: () => void): boolean => {
      if (sequence !== "") out.write(sequence);
      cb?.();
      return true;
    };
    const tty = Object.assign(out, {
      isTTY: true,
      columns: 120,
      rows: 40,
      cursorTo: (_x: number, _y?: unknown, cb?: () => void) => cursorCall("\x1b[G", cb),
      moveCursor: (_dx: number, _dy: number, cb?: () => void) => cursorCall("", cb),
      clearLine: (_dir: number, cb?: () => void) => cursorCall("\x1b[2K", cb),
      clearScreenDown: (cb?: () => void) => cursorCall("", cb),
      getWindowSize: () => [120, 40],
    }) as unknown as NodeJS.WriteStream;
    const io = { ...captureIO(), stderrTerminal: tty };
    let requests = 0;
    const estimate = { requests: 11, writes: 10, reads: 1, seconds: 1, rate_limit: null, concurrency: 4 };
    const progress = startProgress(io, {
      total: 10,
      estimate,
      budget: { rateLimit: null, concurrency: 4 },
      client: { stats: () => ({ requests, retries: 0, byStatus: {}, status429: 0 }) },
    });
    for (let i = 0; i < 10; i++) {
      requests++;
      progress.line(`weighted_backend.w${i}: created`);
      progress.result(done(`weighted_backend.w${i}`));
    }
    progress.stop();
    expect(io.err).toBe("");
    expect(written).toContain("weighted_backend.w9: created\n");
    expect(written).toMatch(/10\/10 changes done, \d+\.\d requests\/s, finished\n$/);
    expect(written).toContain("\x1b[2K");
    expect(written).toMatch(/[#-]{20} \d+\/10 changes done/);
  });
});

describe("progress once the run is stopping", () => {
  it("says it is stopping instead of a time left", () => {
    const io = captureIO();
    const stopping = new AbortController();
    let now = 0;
    let requests = 0;
    const progress = startProgress(io, {
      total: 10,
      estimate: { requests: 10, writes: 10, reads: 0, seconds: 10, rate_limit: null, concurrency: 1 },
      budget: { rateLimit: { count: 1, windowMs: 1000 }, concurrency: 1 },
      client: { stats: () => ({ requests, retries: 0, byStatus: {}, status429: 0 }) },
      now: () => now,
      stopping: stopping.signal,
    });
    const end = (i: number): void => {
      now += 1000;
      requests++;
      progress.result(done(`weighted_backend.w${i}`));
    };
    end(0);
    stopping.abort();
    end(1);
    progress.stop();
    expect(io.err).toBe("1/10 changes done, 1.0 requests/s, about 9 s left\n2/10 changes done, 1.0 requests/s, stopping: finishing the writes in flight\n");
  });
});
