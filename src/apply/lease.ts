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
import { buildLeaseBody, CLAIM_LEASE_KEY, ciRunUrl, describeHolder, leaseBlocker, leasesOf } from "./lease-record.js";
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
  /**
   * When given, the first read of the holder waited for comes after this many ms, and each later one after twice the
   * time before, up to `pollMs`: for a lease held briefly (the account's claim lease), a short wait ends soon and a
   * long one costs at most one read per `pollMs`.
   */
  firstPollMs?: number;
  now?: () => number;
  /** How the wait sleeps between two reads (default: a timer); given by tests that move `now` themselves. */
  sleep?: (ms: number) => Promise<void>;
  /** Time between two reminders of who holds the lease while this apply waits (default 30 s). */
  remindMs?: number;
  /** What the lease guards, as messages name it (default `stack "S"`); given only for the account's claim lease. */
  subject?: string;
  /** The flags after `edgeplan unlock STACK` in a message (a leading space): those that reach the same API. */
  unlockWhere?: string;
  /**
   * The API's clock (src/api/api-clock.ts): with it, lease objects of any stack (the claim lease's too) that were never
   * renewed and whose TTL passed, by the API's own `created_at` and clock, are removed from the listing (creates whose
   * answers were lost, by takers that gave up). No two machines' clocks are compared.
   */
  apiNow?: () => number;
  /**
   * What this run has seen of every lease object so far: given to both of an apply's leases, the
   * time a dead holder's claim lease went unrenewed while the apply waited for its stack lease counts too.
   */
  watch?: ExpiryWatch;
}

/** A lease this process holds. */
export interface HeldLease {
  id: string;
  /**
   * Aborted when the lease was taken away (unlocked, or judged expired by another taker): no new write may start.
   * Its reason is an EdgeplanError saying who holds the lease now, or that it was removed.
   */
  lost: AbortSignal;
  /**
   * Resolves once the lease was seen held less than CONFIRM_MS ago (or a third of the TTL, when shorter): at once
   * when a renewal or a check says so, else after one GET of the lease object, which callers waiting at the same
   * time share. When the object is gone, `lost` aborts before it resolves. Never rejects: a check that got no
   * answer leaves the decision to the next one (the writes would get no answer either).
   */
  confirm(): Promise<void>;
  /**
   * Stops renewing and deletes the lease object. Resolves with null when the object is gone, or with the lease
   * left behind when the delete failed (it expires by itself). Never throws.
   */
  release(): Promise<LeftLease | null>;
  /**
   * The listing of the weighted backends that showed the lease held: taken after this apply's candidate was
   * created, so it is the account as this apply starts (a plan that needs only the inventories reads them here).
   */
  listing: readonly WeightedBackend[];
}

/** A lease that could not be given back: it stays valid until `validUntil` (ms since the epoch, this clock). */
export interface LeftLease {
  id: string;
  validUntil: number;
  ttlMs: number;
}

/**
 * How old a confirmation of the lease may be when a change starts. An apply whose lease was removed starts no write
 * later than this after the removal; while changes start, it costs at most one GET of the lease per this interval
 * (docs/reliability.md, "One apply at a time").
 */
export const CONFIRM_MS = 5000;

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

/** How often a wait says again who holds the lease, until when, and how to remove it. */
export const REMIND_MS = 30_000;

/** Attempts to take the lease before giving up even if the timeout allows more (each one waits for a holder to end). */
const MAX_ATTEMPTS = 1000;

/** The holder of this process, as other takers will see it: with the project file's environment it runs in, if any. */
export function currentHolder(env: Readonly<Record<string, string | undefined>>, environment?: string): LeaseHolder {
  const holder: LeaseHolder = {
    host: hostname(),
    pid: process.pid,
    started_at: new Date().toISOString().replace(/\.\d{3}Z$/, "Z"),
    token: randomBytes(9).toString("base64url"),
  };
  const runUrl = ciRunUrl(env);
  if (runUrl !== undefined) holder.run_url = runUrl;
  if (environment !== undefined) holder.environment = environment;
  return holder;
}

/**
 * Takes the lease of `options.stack`, waiting for an older holder up to `options.timeoutMs`. Costs, uncontended:
 * one POST, one listing of the weighted backends, then one PATCH per third of the TTL while held and one DELETE at
 * the end; each wait adds one GET per poll and, once the holder is gone, another attempt.
 */
export async function acquireLease(client: ApiClient, options: LeaseOptions): Promise<HeldLease> {
  const now = options.now ?? Date.now;
  if (options.subject === undefined && options.stack === CLAIM_LEASE_KEY) {
    throw new EdgeplanError(`stack "${CLAIM_LEASE_KEY}": this name is reserved for the account's claim lease (docs/ownership.md); choose another stack name`);
  }
  const deadline = now() + options.timeoutMs;
  const watch = options.watch ?? new ExpiryWatch(now);
  const announced = new Set<string>();
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const { lease: candidate, uncertain } = await createCandidate(client, options);
    const renewer = startRenewer(client, candidate, options);
    // A create whose answer was lost may still commit after the listing below: the release looks for it again.
    const release = async (): Promise<LeftLease | null> => {
      const left = await renewer.stop(true);
      if (uncertain) await removeOwnOrphans(client, options, candidate.id, null).catch(() => undefined);
      return left;
    };
    let blocker: Lease | null;
    let listing: WeightedBackend[];
    try {
      listing = await removeAbandoned(client, await client.listWeightedBackends(), options);
      const leases = await removeOwnOrphans(client, options, candidate.id, listing);
      // Every lease of the account is remembered, so that a later wait for another of them (the claim lease's) can
      // count this look too.
      for (const other of listing.map(parseLease)) if (other !== null && other.stack !== options.stack) watch.observe(other);
      for (const l of leases) watch.observe(l);
      blocker = leaseBlocker(candidate.id, leases, watch.gone);
    } catch (err) {
      await release();
      throw err;
    }
    if (blocker === null) return { id: candidate.id, lost: renewer.lost, confirm: renewer.confirm, release, listing };
    await release();
    if (now() >= deadline) throw busyError(blocker, options);
    if (!announced.has(blocker.id)) {
      announced.add(blocker.id);
      options.onWait(waitLine(blocker, watch.validUntil(blocker), options, null));
    }
    await waitForEnd(client, blocker, watch, deadline, options);
  }
  throw new EdgeplanError(`the lease of ${subjectOf(options)} changed hands ${MAX_ATTEMPTS} times while this apply waited; run it again`);
}

/** The lease objects of `stack` (`edgeplan unlock`), oldest first: one listing. */
export async function fetchLeases(client: ApiClient, stack: string): Promise<Lease[]> {
  return leasesOf(await client.listWeightedBackends(), stack);
}

/**
 * Deletes these lease objects (`edgeplan unlock`); one already gone counts as removed. An apply that still holds
 * one stops before its next write: its next check of the lease finds it gone (`HeldLease.confirm`).
 */
export async function removeLeases(client: ApiClient, leases: readonly Lease[]): Promise<void> {
  for (const l of leases) await deleteIfThere(client, l.id);
}

/**
 * Creates this taker's candidate; when the answer was lost, finds it by its token (or creates it again). `uncertain`:
 * an answer was lost, so a create may still commit later (a request held by a slow server), leaving an orphan.
 */
async function createCandidate(client: ApiClient, options: LeaseOptions): Promise<{ lease: Lease; uncertain: boolean }> {
  const create = { method: "POST" as const, path: WEIGHTED_BACKENDS_PATH, body: buildLeaseBody(options.stack, options.holder, options.ttlMs, 0) };
  for (let tries = 0; ; tries++) {
    try {
      return { lease: parseLease(answeredWeightedBackend(await client.send(create), create)) as Lease, uncertain: tries > 0 };
    } catch (err) {
      if (!(err instanceof OutcomeUnknownError) || tries >= 2) throw err;
      const mine = leasesOf(await client.listWeightedBackends(), options.stack).find((l) => l.holder.token === options.holder.token);
      if (mine) return { lease: mine, uncertain: true };
    }
  }
}

/** What `created_at` (whole seconds) and one renewal's round trip may be late by, beyond a lease's TTL. */
const ABANDONED_MARGIN_MS = 2000;

/**
 * Deletes the lease objects of `listing` that were never renewed and whose TTL has passed on the API's clock since
 * the API created them: a holder renews within a third of its TTL, so such an object holds nothing. Returns the
 * listing without them.
 */
async function removeAbandoned(client: ApiClient, listing: WeightedBackend[], options: LeaseOptions): Promise<WeightedBackend[]> {
  if (!options.apiNow) return listing;
  const now = options.apiNow();
  const abandoned = new Set<string>();
  for (const wb of listing) {
    const lease = parseLease(wb);
    if (lease === null || lease.renewals > 0 || lease.holder.token === options.holder.token) continue;
    if (Date.parse(wb.created_at) + lease.ttlMs + ABANDONED_MARGIN_MS <= now) abandoned.add(wb.id);
  }
  for (const id of abandoned) await deleteIfThere(client, id);
  return abandoned.size === 0 ? listing : listing.filter((wb) => !abandoned.has(wb.id));
}

/**
 * Deletes this taker's other lease objects of the stack (creates whose answers were lost, committed after all) among
 * `listing` (read afresh when null), and returns the stack's leases without them: a taker never waits for itself.
 */
async function removeOwnOrphans(client: ApiClient, options: LeaseOptions, keepId: string, listing: WeightedBackend[] | null): Promise<Lease[]> {
  const leases = leasesOf(listing ?? (await client.listWeightedBackends()), options.stack);
  const orphans = leases.filter((l) => l.id !== keepId && l.holder.token === options.holder.token);
  for (const o of orphans) await deleteIfThere(client, o.id);
  return leases.filter((l) => !orphans.includes(l));
}

interface Renewer {
  lost: AbortSignal;
  confirm(): Promise<void>;
  /** Stops renewing; with `remove`, deletes the lease object and says what is left behind (errors swallowed). */
  stop(remove: boolean): Promise<LeftLease | null>;
}

/**
 * Renews `lease` every third of its TTL (one PATCH with the full body), and confirms it on demand (one GET); a 404
 * to either means the lease was taken away.
 */
function startRenewer(client: ApiClient, lease: Lease, options: LeaseOptions): Renewer {
  const now = options.now ?? Date.now;
  const controller = new AbortController();
  const confirmMs = Math.min(CONFIRM_MS, Math.floor(options.ttlMs / 3));
  let renewals = lease.renewals;
  // Starts of the last request that found the lease held, and of the last that renewed it.
  let confirmedAt = now();
  let renewedAt = confirmedAt;
  let inFlight: Promise<void> = Promise.resolve();
  let checking: Promise<void> | null = null;
  const lose = async (): Promise<void> => {
    clearInterval(timer);
    if (!controller.signal.aborted) controller.abort(await lostError(client, lease, options));
  };
  const renew = async (): Promise<void> => {
    const started = now();
    try {
      const body = buildLeaseBody(options.stack, options.holder, options.ttlMs, renewals + 1);
      await client.send({ method: "PATCH", path: weightedBackendPath(lease.id), body });
      renewals++;
      confirmedAt = renewedAt = started;
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) await lose();
      // Any other failure: the next tick tries again; the TTL leaves room for two misses.
    }
  };
  const check = async (): Promise<void> => {
    const started = now();
    try {
      if ((await client.getWeightedBackend(lease.id)) === null) await lose();
      else confirmedAt = started;
    } catch {
      // No answer: the next change's check asks again.
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
    async confirm() {
      if (controller.signal.aborted || now() - confirmedAt < confirmMs) return;
      checking ??= check().finally(() => (checking = null));
      await checking;
    },
    async stop(remove) {
      clearInterval(timer);
      await inFlight;
      await checking;
      if (!remove || controller.signal.aborted) return null;
      try {
        await deleteIfThere(client, lease.id);
        return null;
      } catch {
        return { id: lease.id, validUntil: renewedAt + options.ttlMs, ttlMs: options.ttlMs };
      }
    },
  };
}

/** Why the lease is gone: who holds the stack's lease now, when a listing shows one, else "removed". */
async function lostError(client: ApiClient, lease: Lease, options: LeaseOptions): Promise<EdgeplanError> {
  let taker: Lease | undefined;
  try {
    taker = leasesOf(await client.listWeightedBackends(), options.stack).find((l) => l.holder.token !== options.holder.token);
  } catch {
    // Who took it stays unknown; that it is gone is certain.
  }
  const what = taker ? `was taken by ${describeHolder(taker)}` : "was removed (by edgeplan unlock, or by another apply that found it expired)";
  return new EdgeplanError(`the lease of ${subjectOf(options)} (lease ${lease.id}) ${what} while this apply held it`);
}

/**
 * Remembers when each lease's renewal count was last seen to change, on this process's clock: a lease whose count
 * stays the same for its TTL has expired (its holder died, or cannot reach the API).
 */
export class ExpiryWatch {
  private readonly seen = new Map<string, { renewals: number; since: number }>();
  /** Leases found expired and deleted. */
  readonly gone = new Set<string>();
  constructor(private readonly now: () => number) {}

  /** Until when the lease is valid without another renewal, on this clock (since its count was last seen to change). */
  validUntil(lease: Lease): number {
    return (this.seen.get(lease.id)?.since ?? this.now()) + lease.ttlMs;
  }

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
  const pause = options.sleep ?? sleep;
  const remindMs = options.remindMs ?? REMIND_MS;
  const start = now();
  let remindedAt = start;
  const pollMs = options.pollMs ?? Math.min(1000, Math.max(50, Math.floor(blocker.ttlMs / 4)));
  const firstPollMs = Math.min(options.firstPollMs ?? pollMs, pollMs);
  // At most one read per poll until the deadline, and a dead holder expires within its TTL: both bound this loop.
  const maxPolls = Math.ceil((deadline - now()) / firstPollMs) + 2;
  let current = blocker;
  for (let poll = 0, delay = firstPollMs; poll < maxPolls; poll++, delay = Math.min(pollMs, delay * 2)) {
    await pause(Math.max(0, Math.min(delay, deadline - now())));
    const read = await client.getWeightedBackend(current.id);
    const lease = read === null ? null : parseLease(read);
    if (lease === null) return;
    current = lease;
    if (watch.observe(lease)) {
      await deleteIfThere(client, lease.id);
      watch.gone.add(lease.id);
      options.onWait(`the lease of ${describeHolder(lease)} expired (no renewal for ${formatMs(lease.ttlMs)}); removed it`);
      return;
    }
    if (now() >= deadline) break;
    if (now() - remindedAt >= remindMs) {
      remindedAt = now();
      options.onWait(waitLine(lease, watch.validUntil(lease), options, remindedAt - start));
    }
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
  const { who, hint, dead } = holderState(holder, null, options);
  const again = dead ? "Run again once its lease has expired" : "Run again when it is done";
  return new LeaseBusyError(
    holder,
    `${subjectOf(options)} is locked by another apply: ${who}; ${waited}. No change was sent. ${again} (or with a longer --lock-timeout)${hint}`,
  );
}

/**
 * What a wait says when it starts (`elapsed` null) and every `remindMs` after: who holds the lease, until when, and
 * the `unlock` command, as the `--lock-timeout 0` error says them.
 */
function waitLine(holder: Lease, validUntil: number, options: LeaseOptions, elapsed: number | null): string {
  const { who, hint } = holderState(holder, validUntil, options);
  const timeout = `--lock-timeout ${formatMs(options.timeoutMs)}`;
  if (elapsed === null) return `${subjectOf(options)} is locked by ${who}; waiting for it (${timeout})${hint}`;
  return `still waiting (${Math.round(elapsed / 1000)}s of ${timeout}): ${subjectOf(options)} is locked by ${who}${hint}`;
}

/**
 * The holder as the lock messages name it, and how its lease ends: a holder that is a dead process of this host is
 * said to be dead, but its lease is never broken for that (a pid is reused, and another container may bear the same
 * host name): it expires on its own, or a person runs `unlock`. `validUntil`: on this clock, when known.
 */
function holderState(holder: Lease, validUntil: number | null, options: LeaseOptions): { who: string; hint: string; dead: boolean } {
  const ttl = formatMs(holder.ttlMs);
  const unlock = `edgeplan unlock ${options.stack} --lease-id ${holder.id}${options.unlockWhere ?? ""}`;
  if (deadOnThisHost(holder.holder)) {
    const until = validUntil === null ? `${ttl} after its last renewal` : `at ${isoSeconds(validUntil)}`;
    return {
      who: `${describeHolder(holder)} (process ${holder.holder.pid} on this host is no longer running; the lease expires ${until}, or run: ${unlock})`,
      hint: "",
      dead: true,
    };
  }
  const until = validUntil === null ? `${ttl} after its last renewal` : `at ${isoSeconds(validUntil)} (${ttl} after its last renewal)`;
  return { who: describeHolder(holder), hint: `; if that apply is gone, its lease expires ${until}, or remove it now with: ${unlock}`, dead: false };
}

/**
 * True when the holder ran on this host (by name) and its process is gone: signal 0 checks a pid without touching
 * it, and ESRCH means no such process (EPERM: one that is someone else's, alive).
 */
export function deadOnThisHost(holder: LeaseHolder): boolean {
  if (holder.host !== hostname() || !Number.isSafeInteger(holder.pid) || holder.pid <= 0) return false;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function subjectOf(options: LeaseOptions): string {
  return options.subject ?? `stack "${options.stack}"`;
}

/** `5m`, `30s`, `1500ms`: the shortest exact form. */
export function formatMs(ms: number): string {
  if (ms > 0 && ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms > 0 && ms % 60_000 === 0) return `${ms / 60_000}m`;
  if (ms > 0 && ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}
