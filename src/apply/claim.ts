/**
 * The account's claim lease (docs/ownership.md, "Claims under races"). The stack lease serialises the applies of ONE
 * stack, but a route module's owner is whichever stack's inventory records it, and two stacks, or a `--takeover` and
 * the owner's own apply, would otherwise both write a module and its entries from what each read earlier. So every
 * apply that writes an inventory takes one more lease, with the same mechanism as the stack lease on an account-wide
 * key, reads the inventories of every stack again under it, and runs its changes only if no module it writes or
 * records was recorded by another stack meanwhile; its inventory writes are made again from what it just read, so no
 * entry another stack wrote is lost. An apply that writes no inventory takes no claim lease and sends nothing more.
 */
import { liveWeightedBackend } from "../api/live-state.js";
import type { ApiClient } from "../api/client.js";
import { canonicalJson } from "../model/canonical.js";
import { EdgeplanError } from "../model/errors.js";
import type { LeaseHolder } from "../model/lease.js";
import type { Change, Plan } from "../model/plan.js";
import type { LiveWeightedBackend } from "../model/state.js";
import { readInventories, rebaseInventoryChanges, type ClaimConflict } from "../core/inventory.js";
import { acquireLease, type ExpiryWatch, type HeldLease } from "./lease.js";
import { CLAIM_LEASE_KEY } from "./lease-record.js";

/**
 * Validity of a claim lease without a renewal: the apply's `--lock-ttl`, kept between these two. At most 15 s, so a
 * killed apply's claim blocks the other stacks' claims no longer; at least 2 s, so that its renewals (every third of
 * it, each a request under the client's rate budget) take little of that budget when `--lock-ttl` is short.
 */
export const CLAIM_TTL_MS = 15_000;
const CLAIM_TTL_MIN_MS = 2_000;
/**
 * Reads of a claim lease waited for: the first after 25 ms (most claims last a few requests), then twice as long
 * each time, up to one read a second (a claim held for a long run costs the waiter no more than a stack lease does).
 */
const CLAIM_POLL = { firstPollMs: 25, pollMs: 1000 };

/** A claim lease this apply holds, with the plan made again under it. */
export interface HeldClaim {
  /** The plan whose inventory writes were made from the inventories read under the lease. */
  plan: Plan;
  /** The listing of weighted backends read under the lease: the account as the claim starts. */
  listing: LiveWeightedBackend[];
  lost: AbortSignal;
  confirm(): Promise<void>;
  /** Gives the lease back (once; later calls do nothing). Never throws: a lease left behind expires by itself. */
  release(): Promise<void>;
}

export interface ClaimOptions {
  holder: LeaseHolder;
  /** How long to wait for another apply's claim (`--lock-timeout`). */
  timeoutMs: number;
  /** The apply's `--lock-ttl`: the claim lease's validity, kept between 2 s and `CLAIM_TTL_MS`. */
  ttlMs?: number;
  onWait: (line: string) => void;
  /** A saved plan: its inventory writes must be the ones it shows, or it is refused as stale. */
  saved: string | null;
  /** The flags after the `unlock` command a message prints (`LeaseOptions.unlockWhere`). */
  unlockWhere?: string;
  /** What the apply saw of the leases while it took its stack's (`LeaseOptions.watch`). */
  watch?: ExpiryWatch;
}

/**
 * Takes the account's claim lease when `plan` writes an inventory (else resolves with null, at no cost), and checks
 * the plan against the inventories read under it. Throws, with the lease given back and nothing sent, when a module
 * of the plan is now recorded by another stack (naming it, as a plan would), or when a saved plan's inventory writes
 * are no longer the ones it shows. Costs, uncontended: one POST, one listing, one DELETE at release.
 */
export async function claimModules(client: ApiClient, plan: Plan, options: ClaimOptions): Promise<HeldClaim | null> {
  if (!plan.changes.some((c) => c.kind === "inventory")) return null;
  const lease = await acquireClaimLease(client, options);
  try {
    const listing = lease.listing.map(liveWeightedBackend);
    const rebased = rebaseInventoryChanges(plan.changes, plan.stack, readInventories(listing));
    if (rebased.conflicts.length > 0) throw buildClaimRefusal(rebased.conflicts);
    if (options.saved !== null && !sameInventoryWrites(plan.changes, rebased.changes)) throw buildSavedClaimStale(options.saved);
    return { plan: { ...plan, changes: rebased.changes }, listing, lost: lease.lost, confirm: lease.confirm, release: releaseOnce(lease) };
  } catch (err) {
    await lease.release();
    throw err;
  }
}

/**
 * Takes the account's claim lease (waiting for another holder up to `timeoutMs`): for any write of an inventory, so
 * that no two run at once. Its listing is the account as the claim starts.
 */
export function acquireClaimLease(client: ApiClient, options: Pick<ClaimOptions, "holder" | "timeoutMs" | "ttlMs" | "onWait" | "unlockWhere" | "watch">): Promise<HeldLease> {
  return acquireLease(client, {
    stack: CLAIM_LEASE_KEY,
    subject: "module ownership (the account's claim lease)",
    ttlMs: Math.max(CLAIM_TTL_MIN_MS, Math.min(CLAIM_TTL_MS, options.ttlMs ?? CLAIM_TTL_MS)),
    timeoutMs: options.timeoutMs,
    ...CLAIM_POLL,
    holder: options.holder,
    onWait: options.onWait,
    ...(options.unlockWhere === undefined ? {} : { unlockWhere: options.unlockWhere }),
    ...(options.watch === undefined ? {} : { watch: options.watch }),
  });
}

function releaseOnce(lease: HeldLease): () => Promise<void> {
  let released: Promise<unknown> | null = null;
  return async () => {
    released ??= lease.release();
    await released;
  };
}

function sameInventoryWrites(a: readonly Change[], b: readonly Change[]): boolean {
  const writes = (changes: readonly Change[]) => canonicalJson(changes.filter((c) => c.kind === "inventory").map((c) => [c.address, c.request]));
  return writes(a) === writes(b);
}

/** The refusal of a plan whose modules another stack recorded after the plan read the inventories. */
export function buildClaimRefusal(conflicts: readonly ClaimConflict[]): EdgeplanError {
  const lines = conflicts.map((c) => (c.source ? `${c.source}: ${c.message}` : c.message));
  return new EdgeplanError(
    `${lines.join("\n")}\n(another stack recorded ${conflicts.length === 1 ? "this module" : "these modules"} after this plan was made.) No change was sent.`,
  );
}

function buildSavedClaimStale(file: string): EdgeplanError {
  return new EdgeplanError(
    `${file}: the saved plan is stale: an inventory it writes was changed by another stack since it was made (a module claimed, taken over or released). ` +
      "No change was sent; make the plan again (or apply it with --refresh).",
  );
}
