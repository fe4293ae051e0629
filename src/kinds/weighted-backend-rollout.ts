/**
 * The rollout state of the weighted backend kind: how it is read from and written into the owner marker, and the
 * digest that tells one rollout's target from another's. Pure.
 */
import { digestOf, isJsonObject as isObject } from "../model/canonical.js";
import type { RolloutState } from "../model/state.js";
import { LIMITS } from "../model/wire.js";

/** Hex characters of the target digest kept in the marker: 64 bits tell two targets apart and spare metadata bytes. */
const DIGEST_CHARS = 16;

/**
 * The digest of a rollout's target: sha256 of the canonical JSON of the manifest's `backends` as written (names of
 * other manifests stay names, so a child created by the same plan keeps the digest the same across runs).
 */
export function rolloutTargetDigest(backends: Readonly<Record<string, number>>): string {
  return digestOf(backends).slice(0, DIGEST_CHARS);
}

const isWeights = (v: unknown): v is Record<string, number> =>
  isObject(v) && Object.values(v).every((w) => Number.isInteger(w) && (w as number) >= 0 && (w as number) <= LIMITS.weightMax);

/** The rollout state of a marker, or undefined when it is absent or not well-formed (then it is ignored). */
export function parseRolloutState(raw: unknown): RolloutState | undefined {
  if (!isObject(raw)) return undefined;
  const { from, target, step, at, halted, paused, promoted } = raw;
  if (!isWeights(from) || typeof target !== "string" || typeof at !== "string" || Number.isNaN(Date.parse(at))) return undefined;
  if (typeof step !== "number" || !Number.isInteger(step) || step < 1) return undefined;
  const state: RolloutState = { from: { ...from }, target, step, at };
  if (typeof halted === "string") state.halted = halted;
  if (typeof paused === "string") state.paused = paused;
  if (typeof promoted === "number" && Number.isInteger(promoted) && promoted >= 1) state.promoted = promoted;
  return state;
}

/** Least grace of a rollout step: the few seconds an apply takes between its plan and its write (lease, reads, check). */
export const MIN_STEP_GRACE_MS = 5000;

/**
 * How long after the time a step's write records it may still be written: a tenth of the interval, at least
 * `MIN_STEP_GRACE_MS`. The next step is due one interval after the recorded time, so two writes of a rollout are
 * never closer than the interval minus this grace.
 */
export function stepGraceMs(intervalMs: number): number {
  return Math.max(MIN_STEP_GRACE_MS, Math.floor(intervalMs / 10));
}
