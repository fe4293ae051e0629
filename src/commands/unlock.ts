/**
 * `edgeplan unlock STACK`: removes the lease of a stack that an apply left behind (a killed run, a lost machine),
 * instead of waiting for it to expire. An apply that still holds it notices at its next renewal and starts no new
 * change. Exit 0 whether or not there was a lease.
 */
import type { CommonCliOptions } from "../api/options.js";
import { removeLeases } from "../apply/lease.js";
import { describeHolder } from "../apply/lease-record.js";
import { EXIT } from "../model/errors.js";
import type { CommandIO } from "./io.js";
import { openSession } from "./session.js";

export async function runUnlock(stack: string, options: CommonCliOptions, io: CommandIO): Promise<number> {
  const session = await openSession({ ...options, stack }, io);
  try {
    const removed = await removeLeases(session.client, stack);
    if (removed.length === 0) io.stdout(`stack "${stack}" is not locked: nothing removed\n`);
    for (const lease of removed) io.stdout(`removed the lease of stack "${stack}" held by ${describeHolder(lease)}\n`);
    return EXIT.ok;
  } finally {
    await session.close();
  }
}
