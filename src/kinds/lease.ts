/**
 * The stack lease as an object of the API: a weighted backend with no children whose metadata holds
 * `{"edgeplan": {"stack": S, "lease": {...}}}`. Every apply of a stack creates one (a candidate); the candidate with
 * the smallest id among those still alive holds the lease, because the server's ids sort in the order the creates
 * committed (docs/reliability.md, "One apply at a time"). Plans, exports and prunes leave these objects out.
 * Pure: building bodies, reading them back, deciding who holds.
 */
import { canonicalJson, isJsonObject } from "../model/canonical.js";
import type { WeightedBackendBody } from "../model/plan.js";
import { MARKER_KEY } from "../model/state.js";

/** Who runs the apply that holds (or wants) the lease. */
export interface LeaseHolder {
  host: string;
  pid: number;
  /** The CI run's URL, when the apply runs in one (GitHub Actions). */
  run_url?: string;
  /** When this apply started, as the holder's clock says (shown to people; never compared). */
  started_at: string;
  /** Random, per apply: finds the candidate again when the answer to its create was lost. */
  token: string;
}

/** What a lease object says. */
export interface Lease {
  id: string;
  stack: string;
  holder: LeaseHolder;
  /** How long the lease stays valid without a renewal, in ms (the holder's `--lock-ttl`). */
  ttlMs: number;
  /** Renewals so far: a taker that sees this number unchanged for `ttlMs` of its own clock takes the lease as expired. */
  renewals: number;
}

/** The body of the lease object of `stack` (create, and every renewal: a PATCH always sends the full body). */
export function buildLeaseBody(stack: string, holder: LeaseHolder, ttlMs: number, renewals: number): WeightedBackendBody {
  const lease = { holder: { ...holder }, renewals, ttl_ms: ttlMs };
  return {
    description: `edgeplan lease of stack ${stack}: an apply is running (remove a stuck one with: edgeplan unlock ${stack})`,
    metadata: canonicalJson({ [MARKER_KEY]: { lease, stack } }),
    backends: {},
  };
}

/** Cheap test before parsing: every lease's metadata holds this text, as canonicalJson writes it. */
const LEASE_HINT = '"lease":{';

/** The lease an object holds, or null when it is not a lease object (a manifest's object, a foreign one). */
export function parseLease(wb: { id: string; metadata: string }): Lease | null {
  if (!wb.metadata.includes(LEASE_HINT)) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(wb.metadata);
  } catch {
    return null;
  }
  const marker = isJsonObject(parsed) ? parsed[MARKER_KEY] : undefined;
  if (!isJsonObject(marker) || typeof marker.stack !== "string" || !isJsonObject(marker.lease)) return null;
  const { holder, ttl_ms, renewals } = marker.lease;
  if (!isJsonObject(holder) || typeof ttl_ms !== "number" || typeof renewals !== "number") return null;
  const h: LeaseHolder = {
    host: String(holder.host ?? "?"),
    pid: Number(holder.pid ?? 0),
    started_at: String(holder.started_at ?? ""),
    token: String(holder.token ?? ""),
  };
  if (typeof holder.run_url === "string") h.run_url = holder.run_url;
  return { id: wb.id, stack: marker.stack, holder: h, ttlMs: ttl_ms, renewals };
}

/** Whether an object is a lease object (of any stack): plans, exports and prunes leave these out. */
export function isLeaseObject(wb: { id: string; metadata: string }): boolean {
  return parseLease(wb) !== null;
}

/** The lease objects of `stack` among `objects`, oldest (smallest id) first. */
export function leasesOf<T extends { id: string; metadata: string }>(objects: readonly T[], stack: string): Lease[] {
  const found: Lease[] = [];
  for (const wb of objects) {
    const lease = parseLease(wb);
    if (lease !== null && lease.stack === stack) found.push(lease);
  }
  return found.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * Who is in the way of candidate `ownId`: the oldest lease of the stack with a smaller id that is not known to have
 * expired, or null when `ownId` holds the lease. Ids sort in commit order, so of two candidates that both exist,
 * every taker agrees that the smaller one goes first.
 */
export function leaseBlocker(ownId: string, leases: readonly Lease[], expired: ReadonlySet<string>): Lease | null {
  return leases.find((l) => l.id < ownId && !expired.has(l.id)) ?? null;
}

/** The holder as people read it: `host H, process P, run URL` (the URL when there is one). */
export function describeHolder(lease: Lease): string {
  const { host, pid, run_url, started_at } = lease.holder;
  return `host ${host}, process ${pid}${run_url ? `, run ${run_url}` : ""}${started_at ? `, started ${started_at}` : ""} (lease ${lease.id})`;
}

/** The CI run's URL from GitHub Actions' variables, when all three are set. */
export function ciRunUrl(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repo, GITHUB_RUN_ID: run } = env;
  return server && repo && run ? `${server.replace(/\/+$/, "")}/${repo}/actions/runs/${run}` : undefined;
}
