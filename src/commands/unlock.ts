/**
 * `edgeplan unlock STACK`: reads the project file as apply does (for the API), and removes the lease of a stack that an apply left behind (a killed run, a lost machine),
 * instead of waiting for it to expire. It names the holder once: before asking, or in the line of the removal. On a terminal it asks (y/N); without one it needs
 * `--lease-id ID` (the id the lock error and this command print), which removes that lease only, or `--force`,
 * which removes every lease of the stack. An apply that still holds the lease stops before its next write and
 * exits 1. Exit 0 when the lease was removed or there was none; 1 when nothing was removed (declined, no terminal
 * and neither flag, or an id that is not a lease of the stack).
 */
import type { CommonCliOptions } from "../api/options.js";
import { fetchLeases, removeLeases } from "../apply/lease.js";
import { describeHolder } from "../apply/lease-record.js";
import { EdgeplanError, EXIT } from "../model/errors.js";
import type { Lease } from "../model/lease.js";
import type { CommandIO } from "./io.js";
import { withProjectFile } from "./project.js";
import { openSession } from "./session.js";

export interface UnlockOptions extends CommonCliOptions {
  /** Remove only the lease with this id, without asking. */
  leaseId?: string;
  /** Remove every lease of the stack without asking. */
  force?: boolean;
}

export async function runUnlock(stack: string, options: UnlockOptions, io: CommandIO): Promise<number> {
  if (options.leaseId !== undefined && options.force === true) {
    throw new EdgeplanError("--lease-id and --force cannot be combined: --lease-id removes that lease only, --force every lease of the stack");
  }
  // The project file gives the API (and the client's settings) as it does to apply; the stack is the argument.
  const settings = await withProjectFile({ ...options, paths: [] }, io);
  const session = await openSession({ ...settings, stack }, io);
  try {
    const leases = await fetchLeases(session.client, stack);
    if (leases.length === 0) {
      io.stdout(`stack "${stack}" is not locked: nothing removed\n`);
      return EXIT.ok;
    }
    // The holder is named once: in the line of the removal when a flag chose the lease, else above the question
    // (or the refusal), which the removal line then refers to.
    const byFlag = options.force === true || leases.some((l) => l.id === options.leaseId);
    if (!byFlag) for (const lease of leases) io.stderr(`stack "${stack}" is locked by ${describeHolder(lease)}\n`);
    const chosen = await chooseLeases(stack, leases, options, io);
    if (chosen.length === 0) {
      io.stderr("nothing removed\n");
      return EXIT.error;
    }
    await removeLeases(session.client, chosen);
    for (const lease of chosen) {
      io.stdout(`removed the lease of stack "${stack}" ${byFlag ? `held by ${describeHolder(lease)}` : `shown above (lease ${lease.id})`}\n`);
    }
    return EXIT.ok;
  } finally {
    await session.close();
  }
}

/** The leases to remove: the one `--lease-id` names, all with `--force`, else all when a person says yes. */
async function chooseLeases(stack: string, leases: readonly Lease[], options: UnlockOptions, io: CommandIO): Promise<readonly Lease[]> {
  const ids = leases.map((l) => l.id).join(", ");
  if (options.leaseId !== undefined) {
    const named = leases.filter((l) => l.id === options.leaseId);
    if (named.length === 0) {
      throw new EdgeplanError(`--lease-id ${options.leaseId}: stack "${stack}" has no such lease (its lease: ${ids}); nothing removed`);
    }
    return named;
  }
  if (options.force === true) return leases;
  if (!io.stdinIsTTY) {
    throw new EdgeplanError(
      `no terminal to ask on, so nothing removed: pass --lease-id ${leases[0]?.id} to remove the lease shown above ` +
        `(an apply that still holds it stops before its next write), or --force to remove every lease of stack "${stack}"`,
    );
  }
  const plural = leases.length === 1 ? "this lease" : `these ${leases.length} leases`;
  const answer = await io.prompt(`Remove ${plural}? An apply that still holds it stops before its next write. [y/N] `);
  return /^y(es)?$/i.test(answer.trim()) ? leases : [];
}
