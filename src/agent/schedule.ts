/**
 * When a stack is reconciled next: one interval after the start of the cycle it ran in, stretched or shortened by
 * that cycle's jitter (about ±10 %, drawn once per cycle, so that agents started together do not all come at once
 * while the stacks of one cycle stay together and keep sharing its listing); sooner when a rollout step is due; and
 * after failures with exponential backoff from `retry_interval` up to `max_retry_interval`. Pure.
 */
import type { AgentStack } from "../model/agent.js";

/** What a step's due time is given beyond it, for the two clocks (the API's, which timed the step, and this one). */
const STEP_MARGIN_MS = 1000;

/** A cycle's jitter factor, from a draw in [0, 1): 0.9 to 1.1. */
export function jitterOf(draw: number): number {
  return 0.9 + 0.2 * draw;
}

/** Milliseconds from `now` until the next reconciliation of `stack`, whose cycle started at `cycleStart` with `jitter`. */
export function nextDelay(
  stack: Pick<AgentStack, "intervalMs" | "retryIntervalMs" | "maxRetryIntervalMs">,
  failures: number,
  nextStepAt: number | null,
  cycle: { start: number; jitter: number },
  now: number,
): number {
  if (failures > 0) return Math.min(stack.retryIntervalMs * 2 ** Math.min(failures - 1, 30), stack.maxRetryIntervalMs);
  const interval = Math.max(0, cycle.start + Math.round(stack.intervalMs * cycle.jitter) - now);
  if (nextStepAt === null) return interval;
  return Math.min(interval, Math.max(0, nextStepAt - now) + STEP_MARGIN_MS);
}
