/**
 * The data of an apply's report: what happened to each change (src/apply/engine.ts), whether the live side converged
 * (src/apply/verify.ts), and the outputs. The applier fills it; the renderers (src/render/apply-report.ts) only read
 * it.
 */
import type { ApiError } from "./errors.js";
import type { Change, SamlOutput } from "./plan.js";

/** The end of a change in a run. */
export type ResultStatus = "done" | "failed" | "skipped" | "not_started";

/** What happened to one change. */
export interface ChangeResult {
  address: string;
  kind: Change["kind"];
  action: Change["action"];
  status: ResultStatus;
  /** The object's id: the planned one, or the id a create answered (or found by its marker); null for modules. */
  id: string | null;
  /** Time the change took, in ms; null when it did not run. */
  ms: number | null;
  /**
   * Done: what was done (`created bkdwd_...`). Failed: the error, with the manifest position for a 400 on a write.
   * Skipped: which failed change it waited for. Not started: why.
   */
  message: string;
  /** The API error of a failed change. */
  error?: ApiError;
}

export interface ApplyOutcome {
  /** One result per change, in the plan's order. */
  results: ChangeResult[];
  /** The id of every weighted backend the run created, by address. */
  createdIds: Record<string, string>;
  /** True when the signal stopped the run before every change had started. */
  interrupted: boolean;
  counts: Record<ResultStatus, number>;
}

/** One object that does not hold what the manifests (or the saved plan) say, after the run. */
export interface Remaining {
  address: string;
  /** Words that follow the address: `will be created`, `still differs from the plan`. */
  reason: string;
}

/** The convergence check's verdict. */
export interface Convergence {
  /** False when the check could not run (the run was interrupted, or the reads failed); see `error`. */
  checked: boolean;
  converged: boolean;
  remaining: Remaining[];
  /** Rollouts under way whose next step is not due yet: not a difference to fix, a step to wait for. */
  inProgress?: Remaining[];
  /** Rollouts that wait for a person (`edgeplan rollout promote NAME`): why, and how to go on. Not a difference to fix by applying again. */
  paused?: Remaining[];
  /** Why the check did not run, or what went wrong while it ran. */
  error?: string;
}

export interface ApplyReport {
  stack: string;
  outcome: ApplyOutcome;
  convergence: Convergence;
  outputs: SamlOutput[];
  /**
   * The addresses of the outputs this run set or changed (`diffOutputs`): text, Markdown and HTML show only those,
   * and say nothing of the others; JSON holds every output. Absent: all are shown.
   */
  changedOutputs?: string[];
  /** What the convergence was checked against: the manifests, or a saved plan. */
  against: "manifests" | "plan";
  /** The signal that interrupted the run, when one did. */
  interruptedBy?: string;
  /** The plan was targeted (`--target`, `--exclude`): convergence was checked within its scope only. */
  targeted?: boolean;
  /** Rollout steps not due yet or halted, and the changes that wait for them: nothing was sent for them. */
  held?: HeldChange[];
  /** Rollouts this run halted because their check or analysis failed. */
  halted?: StoppedRollout[];
  /** Rollouts this run paused because their analysis was inconclusive: they wait for a person. */
  paused?: StoppedRollout[];
  /** Every measurement of a rollout analysis this run took. */
  analysis?: AnalysisRecord[];
  /** `apply --wait` stopped at its timeout: which step was due when. */
  timedOut?: string;
}

/** A rollout a run halted or paused, and why (the reason kept in its marker). */
export interface StoppedRollout {
  address: string;
  name: string;
  reason: string;
  /** A halt: the weights written back (those the rollout started from), children by id. */
  weights?: Record<string, number>;
  /** A halt whose rollback write failed: why, and the weights traffic is still at (the step's), children by id. */
  rollback_failed?: { message: string; weights: Record<string, number> };
}

/** One measurement of a rollout's analysis: before which step of which object, the metric, the value, the verdict and why. */
export interface AnalysisRecord {
  address: string;
  step: number;
  steps: number;
  metric: string;
  /** The value read, as text; null when none was (no data, unreachable). */
  value: string | null;
  verdict: "success" | "failure" | "inconclusive";
  why: string;
}

/** A change held back from a run, and why (a rollout step not due yet or halted, or a change waiting for one). */
export interface HeldChange {
  address: string;
  /** `waiting` (not due yet, or depends on such a step), `halted`, or `paused` (waits for `edgeplan rollout promote`). */
  status: "waiting" | "halted" | "paused";
  message: string;
}

/** `format_version` of the document `apply --format json` writes (src/model/apply-schema.ts). */
export const APPLY_FORMAT_VERSION = 1;
