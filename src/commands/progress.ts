/**
 * Progress of an apply on stderr. On a terminal: one live line (cli-progress), with the lines of each change above
 * it. Elsewhere (CI logs): the lines of each change, and a plain `N/M changes done ...` line each time another 10 %
 * of the changes have ended, or 10 seconds after the last one, whichever comes first; none for fewer than 10
 * changes. Time left follows the rate limit: the requests still to send (from the plan's estimate) at the pace the
 * limiter allows, or at the pace seen so far when that is slower.
 */
import { MultiBar, type SingleBar } from "cli-progress";
import type { ApiClient } from "../api/client.js";
import { estimateSeconds, type ApplyBudget } from "../core/estimate.js";
import type { ChangeResult } from "../model/apply-report.js";
import type { Estimate } from "../model/plan.js";
import { renderProgressLine, type ProgressState } from "../render/progress.js";
import type { CommandIO } from "./io.js";

/** Fewer changes than this: no plain progress lines (each change's own line says enough). */
export const PLAIN_PROGRESS_MIN = 10;
/** The longest silence between two plain progress lines. */
export const PLAIN_PROGRESS_MS = 10_000;

export interface ApplyProgress {
  /** A line about one change (`weighted_backend.a: created bkdwd_... (12 ms)`). */
  line(text: string): void;
  /** A change ended. */
  result(result: ChangeResult): void;
  /** The run ended: the last line, timers stopped. */
  stop(): void;
}

export interface ProgressInput {
  total: number;
  estimate: Estimate;
  budget: ApplyBudget;
  client: Pick<ApiClient, "stats">;
  /** Milliseconds now (tests pass their own clock). */
  now?: () => number;
  /** Aborts when the run stops early: the line then says it is stopping instead of a time left. */
  stopping?: AbortSignal;
}

/**
 * When a plain line is due: every `step` changes (10 % of them, at least 1) or `PLAIN_PROGRESS_MS` after the last
 * line, and once at the end; never for fewer than PLAIN_PROGRESS_MIN changes.
 */
export class PlainSchedule {
  private readonly step: number;
  private lastCount = 0;
  private lastAt: number;

  constructor(
    private readonly total: number,
    now: number,
  ) {
    this.step = Math.max(1, Math.floor(total / 10));
    this.lastAt = now;
  }

  /** Whether a line is due now, with `finished` changes ended; marks it printed when it is. */
  take(finished: number, now: number): boolean {
    if (this.total < PLAIN_PROGRESS_MIN) return false;
    const due = finished >= this.lastCount + this.step || (finished === this.total && this.lastCount < this.total) || now - this.lastAt >= PLAIN_PROGRESS_MS;
    if (due) {
      this.lastCount = finished;
      this.lastAt = now;
    }
    return due;
  }
}

/** Counts and pace of a run, for the progress line. */
class Tally {
  finished = 0;
  failed = 0;
  skipped = 0;
  private readonly startAt: number;
  private readonly startRequests: number;

  constructor(private readonly input: ProgressInput) {
    this.startAt = this.now();
    this.startRequests = input.client.stats().requests;
  }

  now(): number {
    return (this.input.now ?? Date.now)();
  }

  add(result: ChangeResult): void {
    this.finished++;
    if (result.status === "failed") this.failed++;
    if (result.status === "skipped") this.skipped++;
  }

  state(): ProgressState {
    const elapsed = Math.max(0.001, (this.now() - this.startAt) / 1000);
    const sent = this.input.client.stats().requests - this.startRequests;
    const rps = sent / elapsed;
    const remaining = Math.max(0, this.input.estimate.requests - sent);
    const rl = this.input.budget.rateLimit;
    const byLimit = rl ? (remaining * rl.windowMs) / rl.count / 1000 : 0;
    const bySeen = sent > 0 && elapsed >= 1 ? remaining / rps : estimateSeconds(remaining, this.input.budget);
    return {
      finished: this.finished,
      failed: this.failed,
      skipped: this.skipped,
      total: this.input.total,
      requestsPerSecond: rps,
      secondsLeft: Math.ceil(Math.max(byLimit, bySeen)),
      stopping: this.input.stopping?.aborted === true,
    };
  }
}

/** Progress on stderr: the live line on a terminal (`io.stderrTerminal`), plain lines elsewhere. */
export function startProgress(io: CommandIO, input: ProgressInput): ApplyProgress {
  return io.stderrTerminal ? liveProgress(io.stderrTerminal, input) : plainProgress(io, input);
}

function plainProgress(io: CommandIO, input: ProgressInput): ApplyProgress {
  const tally = new Tally(input);
  const schedule = new PlainSchedule(input.total, tally.now());
  const maybePrint = (): void => {
    if (schedule.take(tally.finished, tally.now())) io.stderr(`${renderProgressLine(tally.state())}\n`);
  };
  // The heartbeat: a line at least every 10 s, also while a rate limit holds every request back.
  const timer = input.total >= PLAIN_PROGRESS_MIN ? setInterval(maybePrint, 1000) : undefined;
  timer?.unref();
  return {
    line: (text) => io.stderr(`${text}\n`),
    result: (r) => {
      tally.add(r);
      maybePrint();
    },
    stop: () => clearInterval(timer),
  };
}

function liveProgress(stream: NodeJS.WriteStream, input: ProgressInput): ApplyProgress {
  const tally = new Tally(input);
  const bars = new MultiBar(
    { stream, format: "{bar} {line}", barsize: 20, hideCursor: true, clearOnComplete: true, linewrap: false, fps: 5, autopadding: false },
    { barCompleteChar: "#", barIncompleteChar: "-", format: "" },
  );
  const bar: SingleBar = bars.create(input.total, 0, { line: renderProgressLine(tally.state()) });
  const redraw = (): void => bar.update(tally.finished, { line: renderProgressLine(tally.state()) });
  const timer = setInterval(redraw, 1000);
  timer.unref();
  return {
    line: (text) => bars.log(`${text}\n`),
    result: (r) => {
      tally.add(r);
      redraw();
    },
    stop: () => {
      clearInterval(timer);
      redraw();
      // The lines logged since the last frame are written by the next frame: draw it before stopping.
      bars.update();
      bars.stop();
      stream.write(`${renderProgressLine(tally.state())}\n`);
    },
  };
}
