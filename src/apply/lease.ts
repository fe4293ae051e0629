/**
 * Taking, keeping and giving back the lease of a stack, so that two applies of one stack never run at once
 * (docs/reliability.md, "One apply at a time"). The lease is an object of the API (src/apply/lease-record.ts): every
 * taker creates a candidate, lists the weighted backends, and holds the lease when no older candidate of the stack
 * is alive; otherwise it deletes its candidate, watches the older one with one GET per poll until it is gone or has
 * expired (its renewal count unchanged for its TTL, measured on the taker's own clock, so no two clocks are
 * compared), and tries again. The holder renews its candidate every third of the TTL and deletes it at the end.
 */
import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { answeredWeightedBackend, type ApiClient } from "../api/client.js";
import { OutcomeUnknownError } from "../api/errors.js";
import { buildLeaseBody, ciRunUrl, describeHolder, leaseBlocker, leasesOf } from "./lease-record.js";
import { parseLease, type Lease, type LeaseHolder } from "../model/lease.js";
import { ApiError, EdgeplanError } from "../model/errors.js";
import { WEIGHTED_BACKENDS_PATH, weightedBackendPath } from "../model/paths.js";
import type { WeightedBackend } from "../model/wire.js";

export interface LeaseOptions {
  stack: string;
  /** Validity of the lease without a renewal (`--lock-ttl`). */
  ttlMs: number;
  /** How long to wait for another holder (`--lock-timeout`); 0 fails at once. */
  timeoutMs: number;
  holder: LeaseHolder;
  /** One line per holder waited for. */
  onWait: (line: string) => void;
  /** Time between two reads of the holder waited for (default: a quarter of its TTL, at most 1 s). */
  pollMs?: number;
  now?: () => number;
}

/** A lease this process holds. */
export interface HeldLease {
  id: string;
  /** Aborted when the lease was taken away (unlocked, or judged expired by another taker): no new write may start. */
  lost: AbortSignal;
  /** Stops renewing and deletes the lease object; never throws (a lease left behind expires). */
  release(): Promise<void>;
  /**
   * The listing of the weighted backends that showed the lease held: taken after this apply's candidate was
   * created, so it is the account as this apply starts (a plan that needs only the inventories reads them here).
   */
  listing: readonly WeightedBackend[];
}

/** Another apply holds the lease and `--lock-timeout` ran out (or is 0). */
export class LeaseBusyError extends EdgeplanError {
  override name = "LeaseBusyError";
  constructor(
    readonly holder: Lease,
    message: string,
  ) {
    super(message);
  }
}

/** Attempts to take the lease before giving up even if the timeout allows more (each one waits for a holder to end). */
const MAX_ATTEMPTS = 1000;

/** The holder of this process, as other takers will see it. */
export function currentHolder(env: Readonly<Record<string, string | undefined>>): LeaseHolder {
  const holder: LeaseHolder = {
    host: hostname(),
    pid: process.pid,
    started_at: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
    token: randomBytes(9).toString("base64url"),
  };
  const runUrl = ciRunUrl(env);
  if (runUrl !== undefined) holder.run_url = runUrl;
  return holder;
}

/**
 * Takes the lease of `options.stack`, waiting for an older holder up to `options.timeoutMs`. Costs, uncontended:
 * one POST, one listing of the weighted backends, then one PATCH per third of the TTL while held and one DELETE at
 * the end; each wait adds one GET per poll and, once the holder is gone, another attempt.
 */
export async function acquireLease(client: ApiClient, options: LeaseOptions): Promise<HeldLease> {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  const watch = new ExpiryWatch(now);
  const announced = new Set<string>();
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const candidate = await createCandidate(client, options);
    const renewer = startRenewer(client, candidate, options);
    let blocker: Lease | null;
    let listing: WeightedBackend[];
    try {
      listing = await client.listWeightedBackends();
      const leases = leasesOf(listing, options.stack);
      for (const l of leases) watch.observe(l);
      blocker = leaseBlocker(candidate.id, leases, watch.gone);
    } catch (err) {
      await renewer.stop(true);
      throw err;
    }
    if (blocker === null) return { id: candidate.id, lost: renewer.lost, release: () => renewer.stop(true), listing };
    await renewer.stop(true);
    if (now() >= deadline) throw busyError(blocker, options);
    if (!announced.has(blocker.id)) {
      announced.add(blocker.id);
      options.onWait(`stack "${options.stack}" is locked by ${describeHolder(blocker)}; waiting for it (--lock-timeout ${formatMs(options.timeoutMs)})`);
    }
    await waitForEnd(client, blocker, watch, deadline, options);
  }
  throw new EdgeplanError(`the lease of stack "${options.stack}" changed hands ${MAX_ATTEMPTS} times while this apply waited; run it again`);
}

/**
 * Deletes every lease object of `stack` (`edgeplan unlock`); returns what it removed. An apply that still runs
 * notices at its next renewal and starts no new write.
 */
export async function removeLeases(client: ApiClient, stack: string): Promise<Lease[]> {
  const leases = leasesOf(await client.listWeightedBackends(), stack);
  for (const l of leases) await deleteIfThere(client, l.id);
  return leases;
}

/** Creates this taker's candidate; when the answer was lost, finds it by its token (or creates it again). */
async function createCandidate(client: ApiClient, options: LeaseOptions): Promise<Lease> {
  const create = { method: "POST" as const, path: WEIGHTED_BACKENDS_PATH, body: buildLeaseBody(options.stack, options.holder, options.ttlMs, 0) };
  for (let tries = 0; ; tries++) {
    try {
      return parseLease(answeredWeightedBackend(await client.send(create), create)) as Lease;
    } catch (err) {
      if (!(err instanceof OutcomeUnknownError) || tries >= 2) throw err;
      const mine = leasesOf(await client.listWeightedBackends(), options.stack).find((l) => l.holder.token === options.holder.token);
      if (mine) return mine;
    }
  }
}

interface Renewer {
  lost: AbortSignal;
  /** Stops renewing; with `remove`, deletes the lease object (errors swallowed: a lease left behind expires). */
  stop(remove: boolean): Promise<void>;
}

/** Renews `lease` every third of its TTL (one PATCH with the full body); a 404 means the lease was taken away. */
function startRenewer(client: ApiClient, lease: Lease, options: LeaseOptions): Renewer {
  const controller = new AbortController();
  let renewals = lease.renewals;
  let inFlight: Promise<void> = Promise.resolve();
  const renew = async (): Promise<void> => {
    try {
      const body = buildLeaseBody(options.stack, options.holder, options.ttlMs, renewals + 1);
      await client.send({ method: "PATCH", path: weightedBackendPath(lease.id), body });
      renewals++;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        clearInterval(timer);
        controller.abort(new EdgeplanError(`the lease of stack "${options.stack}" was removed while this apply held it (edgeplan unlock, or it expired)`));
      }
      // Any other failure: the next tick tries again; the TTL leaves room for two misses.
    }
  };
  const timer = setInterval(
    () => {
      inFlight = inFlight.then(renew);
    },
    Math.max(1, Math.floor(options.ttlMs / 3)),
  );
  timer.unref();
  return {
    lost: controller.signal,
    async stop(remove) {
      clearInterval(timer);
      await inFlight;
      if (remove) await deleteIfThere(client, lease.id).catch(() => undefined);
    },
  };
}

/**
 * Remembers when each lease's renewal count was last seen to change, on this process's clock: a lease whose count
 * stays the same for its TTL has expired (its holder died, or cannot reach the API).
 */
class ExpiryWatch {
  private readonly seen = new Map<string, { renewals: number; since: number }>();
  /** Leases found expired and deleted. */
  readonly gone = new Set<string>();
  constructor(private readonly now: () => number) {}

  /** Records what a read showed; returns whether the lease has expired. */
  observe(lease: Lease): boolean {
    const last = this.seen.get(lease.id);
    if (last === undefined || last.renewals !== lease.renewals) {
      this.seen.set(lease.id, { renewals: lease.renewals, since: this.now() });
      return false;
    }
    return this.now() - last.since >= lease.ttlMs;
  }
}

/**
 * Reads `blocker` again and again until it is gone (released) or has expired (then deletes it); throws
 * LeaseBusyError when the deadline comes first.
 */
async function waitForEnd(client: ApiClient, blocker: Lease, watch: ExpiryWatch, deadline: number, options: LeaseOptions): Promise<void> {
  const now = options.now ?? Date.now;
  const pollMs = options.pollMs ?? Math.min(1000, Math.max(50, Math.floor(blocker.ttlMs / 4)));
  // At most one read per poll until the deadline, and a dead holder expires within its TTL: both bound this loop.
  const maxPolls = Math.ceil((deadline - now()) / pollMs) + 2;
  let current = blocker;
  for (let poll = 0; poll < maxPolls; poll++) {
    await sleep(Math.max(0, Math.min(pollMs, deadline - now())));
    const read = await client.getWeightedBackend(current.id);
    const lease = read === null ? null : parseLease(read);
    if (lease === null) return;
    current = lease;
    if (watch.observe(lease)) {
      await deleteIfThere(client, lease.id);
      watch.gone.add(lease.id);
      options.onWait(`the lease ${lease.id} of ${describeHolder(lease)} expired (no renewal for ${formatMs(lease.ttlMs)}); removed it`);
      return;
    }
    if (now() >= deadline) break;
  }
  throw busyError(current, options);
}

async function deleteIfThere(client: ApiClient, id: string): Promise<void> {
  try {
    await client.send({ method: "DELETE", path: weightedBackendPath(id), body: null });
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
  }
}

function busyError(holder: Lease, options: LeaseOptions): LeaseBusyError {
  const waited = options.timeoutMs === 0 ? "--lock-timeout 0: not waiting" : `waited ${formatMs(options.timeoutMs)} (--lock-timeout)`;
  return new LeaseBusyError(
    holder,
    `stack "${options.stack}" is locked by another apply: ${describeHolder(holder)}; ${waited}. No change was sent. ` +
      `Run again when it is done (or with a longer --lock-timeout); if that apply is gone, its lease expires ${formatMs(holder.ttlMs)} after its last renewal, ` +
      `or remove it now with: edgeplan unlock ${options.stack}`,
  );
}

/** `5m`, `30s`, `1500ms`: the shortest exact form. */
export function formatMs(ms: number): string {
  if (ms > 0 && ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms > 0 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms > 0 && ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
