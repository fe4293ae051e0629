/**
 * `edgeplan state list` shows what a stack owns (weighted backends by name and id, route modules by address, and the
 * ids of its inventory and lease objects), from one listing of the weighted backends. `edgeplan state release
 * ADDRESS` stops managing one object without deleting it, under the stack's lease so that no apply of the stack
 * writes its inventory meanwhile; the object can then be adopted by another stack.
 */
import type { CommonCliOptions } from "../api/options.js";
import { acquireClaimLease } from "../apply/claim.js";
import { acquireLease, currentHolder, type HeldLease } from "../apply/lease.js";
import { parseModuleAddress } from "../core/inventory.js";
import { showLeftLease } from "./apply.js";
import { buildRelease, buildStackState, type StackState } from "../core/state-list.js";
import { closest } from "../model/suggest.js";
import { EdgeplanError, EXIT } from "../model/errors.js";
import { renderStackStateJson, renderStackStateText } from "../render/state.js";
import type { CommandIO } from "./io.js";
import { withProjectFile } from "./project.js";
import { stackWhere, typedStack, whereText } from "./hints.js";
import { openSession } from "./session.js";

export type StateFormat = "text" | "json";
export const STATE_FORMATS: readonly StateFormat[] = ["text", "json"];

/** Runs `state list`: prints what the stack owns. Exit 0. */
export async function runStateList(given: CommonCliOptions & { format?: string }, io: CommandIO): Promise<number> {
  const options = await withProjectFile({ ...given, paths: [] }, io);
  const format = (options.format ?? "text") as StateFormat;
  if (!STATE_FORMATS.includes(format)) throw new EdgeplanError(`--format: expected one of ${STATE_FORMATS.join(", ")}, got "${format}"`);
  const session = await openSession(options, io);
  try {
    const state = buildStackState(await session.client.listWeightedBackends(), session.stack);
    io.stdout(format === "json" ? renderStackStateJson(state) : renderStackStateText(state));
    return EXIT.ok;
  } finally {
    await session.close();
  }
}

/** How long `state release` waits for an apply of the stack to end, and how long its own lease lasts. */
const RELEASE_LOCK = { timeoutMs: 60_000, ttlMs: 60_000 };

/** Runs `state release ADDRESS`: one write, said on stdout. Exit 0; an address the stack does not own is an error. */
export async function runStateRelease(address: string, given: CommonCliOptions, io: CommandIO): Promise<number> {
  const options = await withProjectFile({ ...given, paths: [] }, io);
  const session = await openSession(options, io);
  const holder = currentHolder(io.env, options.environment?.name);
  const onWait = (line: string): void => io.stderr(`${line}\n`);
  const unlockWhere = whereText(given, options.environment?.name, io.env);
  const lease = await acquireLease(session.client, { ...RELEASE_LOCK, stack: session.stack, holder, onWait, unlockWhere }).catch(async (err: unknown) => {
    await session.close();
    throw err;
  });
  let claim: HeldLease | null = null;
  try {
    // A module's entry leaves an inventory object that a --takeover of another stack may be writing: under the claim lease.
    if (parseModuleAddress(address) !== null) claim = await acquireClaimLease(session.client, { holder, timeoutMs: RELEASE_LOCK.timeoutMs, onWait, unlockWhere });
    const release = buildRelease((claim ?? lease).listing, session.stack, address);
    const where = stackWhere(given, options.environment?.name, io.env, typedStack(given, io.env));
    if (release === null) throw unknownAddress(buildStackState(lease.listing, session.stack), address, where);
    await session.client.send(release.request);
    io.stdout(`${release.done}\n`);
    return EXIT.ok;
  } finally {
    await claim?.release();
    showLeftLease(await lease.release(), session.stack, io, unlockWhere);
    await session.close();
  }
}

/**
 * The error for an address the stack does not own: what it owns, the closest address when one is close, and the
 * `state list` that reaches the same API and stack (`where`).
 */
function unknownAddress(state: StackState, address: string, where: string): EdgeplanError {
  const addresses = [...new Set([...state.weighted_backends.map((w) => w.address), ...state.modules.map((m) => m.address)])];
  const near = closest(address, addresses);
  const owns = addresses.length > 0 ? `it owns ${addresses.join(", ")}` : "it owns nothing";
  return new EdgeplanError(
    `state release: stack "${state.stack}" does not own ${address}${near ? ` (did you mean ${near}?)` : ""}; ${owns} (see: edgeplan state list${where})`,
  );
}
