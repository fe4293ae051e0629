/**
 * `edgeplan rollout status|promote|abort|retry`: where the rollouts of a stack stand, and what a person decides about
 * one without editing its manifest (git stays the source of the target). Each action is one write of the object's
 * owner marker (src/core/rollout-status.ts), sent through the client's one executor under the stack's lease, as
 * apply takes it, so that no apply of the stack runs meanwhile; only objects the stack owns are touched.
 *
 * Exit codes: 0 done; 1 an error (no such rollout, a rollout in another state, the API, the lease).
 */
import type { CommonCliOptions } from "../api/options.js";
import { buildLiveState } from "../api/live-state.js";
import { acquireLease, currentHolder } from "../apply/lease.js";
import { buildPlan, DEFAULT_MAX_SHIFT } from "../core/plan.js";
import { buildRolloutWrite } from "../kinds/weighted-backend.js";
import { buildAbort, buildPromote, buildRetry, buildRolloutStatus, findRollout, findRollouts, type OwnedRollout, type RolloutWrite } from "../core/rollout-status.js";
import { EdgeplanError, EXIT } from "../model/errors.js";
import type { Plan, RolloutStep } from "../model/plan.js";
import type { DesiredState } from "../model/state.js";
import type { WeightedBackend } from "../model/wire.js";
import { renderRolloutStatusJson, renderRolloutStatusText } from "../render/rollout-status.js";
import { lockOptionsFrom, showLeftLease } from "./apply.js";
import type { CommandIO } from "./io.js";
import { withProjectFile } from "./project.js";
import { stackWhere, typedStack, whereText } from "./hints.js";
import { loadManifests, openSession } from "./session.js";
import type { ChosenEnvironment } from "../model/project-schema.js";

export interface RolloutCommandOptions extends CommonCliOptions {
  /** Manifest files or folders (`--manifests`, repeatable; default: the project file's paths, else `.`). */
  manifests?: string[];
  /** `status`: text or json. */
  format?: string;
  /** `promote`: straight to the manifest's weights in one write, ending the rollout. */
  full?: boolean;
  lockTimeout?: string;
  lockTtl?: string;
}

export const ROLLOUT_STATUS_FORMATS = ["text", "json"] as const;

/**
 * Runs `rollout status [NAME]`: every rollout of the stack (or NAME's) from one listing. The manifests are read
 * when they load without error, for the steps, when the next is due and the final weights; otherwise the owner
 * markers and the live objects alone are shown. Exit 0.
 */
export async function runRolloutStatus(name: string | undefined, given: RolloutCommandOptions, io: CommandIO): Promise<number> {
  const options = await withProjectFile({ ...given, paths: given.manifests ?? [] }, io);
  const format = options.format ?? "text";
  if (!(ROLLOUT_STATUS_FORMATS as readonly string[]).includes(format)) {
    throw new EdgeplanError(`--format: expected one of ${ROLLOUT_STATUS_FORMATS.join(", ")}, got "${format}"`);
  }
  const session = await openSession(options, io);
  try {
    const listing = await session.client.listWeightedBackends();
    const where = rolloutCommandsWhere(given, options, io);
    const owned = name === undefined ? findRollouts(listing, session.stack) : [findRollout(listing, session.stack, name, where)];
    const desired = await quietManifests(options.paths, io, options.environment ?? null);
    const steps = desired === null ? new Map<string, RolloutStep>() : plannedSteps(planFromListing(desired, listing, session.stack, session.clock.now()));
    const statuses = owned.map((o) => buildRolloutStatus(o, steps.get(o.address)));
    io.stdout(format === "json" ? renderRolloutStatusJson(session.stack, statuses) : renderRolloutStatusText(session.stack, statuses, where));
    return EXIT.ok;
  } finally {
    await session.close();
  }
}

/** The manifests when they load without error (status does without them: one line on stderr says why); null otherwise. */
async function quietManifests(paths: string[], io: CommandIO, vars: ChosenEnvironment | null): Promise<DesiredState | null> {
  const { loadDesired } = await import("../manifest/load.js");
  const loaded = await loadDesired(paths.length > 0 ? paths : ["."], { env: io.env, cwd: io.cwd, vars });
  const errors = loaded.diagnostics.filter((d) => d.severity === "error").length;
  if (errors === 0) return loaded.desired;
  io.stderr(`the manifests have ${errors} error${errors === 1 ? "" : "s"} (edgeplan validate shows them): the rollouts are shown from their owner markers alone\n`);
  return null;
}

/** The plan of the manifests' weighted backends against the listing (no route is read): where each rollout stands at `now` (the API's clock). */
function planFromListing(desired: DesiredState, listing: readonly WeightedBackend[], stack: string, now: number): Plan {
  const scoped: DesiredState = { weightedBackends: desired.weightedBackends, edgeRoutes: [] };
  return buildPlan(scoped, buildLiveState([...listing], []), { stack, prune: false, takeover: false, maxShift: DEFAULT_MAX_SHIFT, now });
}

function plannedSteps(plan: Plan): Map<string, RolloutStep> {
  const steps = new Map<string, RolloutStep>();
  for (const c of plan.changes) if (c.kind === "weighted_backend" && c.rollout) steps.set(c.address, c.rollout);
  return steps;
}

/** Runs `rollout promote NAME [--full]`: past the rollout's gate, or with `--full` to the manifest's weights at once. Exit 0. */
export async function runRolloutPromote(name: string, given: RolloutCommandOptions, io: CommandIO): Promise<number> {
  const options = await withProjectFile({ ...given, paths: given.manifests ?? [] }, io);
  const desired = options.full === true ? (await loadManifests(options.paths, io, options.environment ?? null)).desired : null;
  const where = rolloutCommandsWhere(given, options, io);
  return underLease(options, io, (listing, stack, now) => {
    const owned = findRollout(listing, stack, name, where);
    return desired === null ? buildPromote(owned, where) : buildFullPromote(owned, planFromListing(desired, listing, stack, now));
  });
}

/** Runs `rollout abort NAME`: the starting weights written back, the rollout halted. Exit 0. */
export async function runRolloutAbort(name: string, given: RolloutCommandOptions, io: CommandIO): Promise<number> {
  const options = await withProjectFile({ ...given, paths: [] }, io);
  const where = rolloutCommandsWhere(given, options, io);
  return underLease(options, io, (listing, stack, now) => buildAbort(findRollout(listing, stack, name, where), now, where));
}

/** Runs `rollout retry NAME`: a halted rollout starts again from the live weights at the next apply. Exit 0. */
export async function runRolloutRetry(name: string, given: RolloutCommandOptions, io: CommandIO): Promise<number> {
  const options = await withProjectFile({ ...given, paths: [] }, io);
  const where = rolloutCommandsWhere(given, options, io);
  return underLease(options, io, (listing, stack) => buildRetry(findRollout(listing, stack, name, where), where));
}

/** The flags that take the rollout commands a message names to this API and stack (`stackWhere`). */
function rolloutCommandsWhere(given: RolloutCommandOptions, options: { environment?: ChosenEnvironment | null }, io: CommandIO): string {
  return stackWhere(given, options.environment?.name, io.env, typedStack(given, io.env));
}

/**
 * `promote --full`: the manifest's weights and the marker without rollout state, in one write (no check before
 * it: a person decided). The plan of the manifests tells the weights, references resolved to ids.
 */
function buildFullPromote(owned: OwnedRollout, plan: Plan): RolloutWrite {
  const change = plan.changes.find((c) => c.kind === "weighted_backend" && c.address === owned.address);
  if (change?.kind !== "weighted_backend" || change.after === null || change.before === null) {
    throw new EdgeplanError(`${owned.address}: the manifests name no other weights for it (it holds them already, or no manifest declares it); nothing to promote`);
  }
  if (Object.keys(change.refs).length > 0) {
    throw new EdgeplanError(`${owned.address}: its manifest names weighted backends not created yet (${Object.keys(change.refs).join(", ")}); run apply first`);
  }
  // A rollout change's `after` is the step it takes; where the rollout ends is `final`.
  const { request } = buildRolloutWrite(change, change.rollout?.final ?? change.after.backends, undefined);
  return {
    request: { ...request, method: "PATCH" },
    done: `${owned.address}: promoted to the manifest's weights in one write; the rollout ended`,
  };
}

/** Takes the stack's lease, builds the one write from the listing it read, sends it and says what it did. */
async function underLease(
  options: RolloutCommandOptions & { paths: string[]; environment?: ChosenEnvironment | null },
  io: CommandIO,
  build: (listing: readonly WeightedBackend[], stack: string, now: number) => RolloutWrite,
): Promise<number> {
  const lock = lockOptionsFrom(options);
  const session = await openSession(options, io);
  try {
    const lease = await acquireLease(session.client, {
      ...lock,
      stack: session.stack,
      holder: currentHolder(io.env, options.environment?.name),
      onWait: (line) => io.stderr(`${line}\n`),
      unlockWhere: whereText(options, options.environment?.name, io.env),
    });
    try {
      const write = build(lease.listing, session.stack, session.clock.now());
      await session.client.send(write.request);
      io.stdout(`${write.done}\n`);
      return EXIT.ok;
    } finally {
      showLeftLease(await lease.release(), session.stack, io, whereText(options, options.environment?.name, io.env));
    }
  } finally {
    await session.close();
  }
}
