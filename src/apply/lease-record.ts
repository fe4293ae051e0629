/**
 * The stack lease as an object of the API: a weighted backend with no children whose metadata holds
 * `{"edgeplan": {"stack": S, "lease": {...}}}`. Every apply of a stack creates one (a candidate); the candidate with
 * the smallest id among those still alive holds the lease, because the server's ids sort in the order the creates
 * committed (docs/reliability.md, "One apply at a time"). Reading a lease object back (`parseLease`) is in
 * src/model/lease.ts, since plans and exports leave these objects out. Pure: building bodies, deciding who holds.
 */
import { canonicalJson } from "../model/canonical.js";
import { parseLease, type Lease, type LeaseHolder } from "../model/lease.js";
import type { WeightedBackendBody } from "../model/plan.js";
import { MARKER_KEY } from "../model/state.js";

/**
 * The key of the account's claim lease, in the place of a stack's name: one lease for all the stacks of the account,
 * held while an apply claims, takes over or forgets route modules in inventories (src/apply/claim.ts). No stack may
 * use this name.
 */
export const CLAIM_LEASE_KEY = "edgeplan:claims";

/** The body of the lease object of `stack` (create, and every renewal: a PATCH always sends the full body). */
export function buildLeaseBody(stack: string, holder: LeaseHolder, ttlMs: number, renewals: number): WeightedBackendBody {
  const lease = { holder: { ...holder }, renewals, ttl_ms: ttlMs };
  return {
    description: `edgeplan lease of stack ${stack}: an apply is running (remove a stuck one with: edgeplan unlock ${stack})`,
    metadata: canonicalJson({ [MARKER_KEY]: { lease, stack } }),
    backends: {},
  };
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

/** The holder as people read it: `environment E, host H, process P, run URL` (the environment and URL when there are). */
export function describeHolder(lease: Lease): string {
  const { host, pid, run_url, started_at, environment } = lease.holder;
  return `${environment ? `environment ${environment}, ` : ""}host ${host}, process ${pid}${run_url ? `, run ${run_url}` : ""}${started_at ? `, started ${started_at}` : ""} (lease ${lease.id})`;
}

/** The CI run's URL from GitHub Actions' variables, when all three are set. */
export function ciRunUrl(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const { GITHUB_SERVER_URL: server, GITHUB_REPOSITORY: repo, GITHUB_RUN_ID: run } = env;
  return server && repo && run ? `${server.replace(/\/+$/, "")}/${repo}/actions/runs/${run}` : undefined;
}
