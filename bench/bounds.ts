/**
 * The time the fewest requests need, from the latency of one request and the client's concurrency (or the
 * server's rate limit). Only the server's latency counts: transport, JSON, schema checks and the plan itself are
 * what a run may spend on top (the targets allow 1.2 times the bound). Pure.
 */
import { CONFIRM_MS } from "../src/apply/lease.js";
import { readsEdgePage } from "../src/model/reads.js";

/**
 * A chain of `chain` requests that must run one after the other (list pages: each names the next) beside
 * `parallel` independent requests (edge reads), on `concurrency` slots, each request taking `latencyMs`: the chain
 * holds one slot throughout and the others share the rest, so the makespan is
 * `max(chain, ceil((chain + parallel) / concurrency))` latencies.
 */
export function overlappedBoundMs(chain: number, parallel: number, concurrency: number, latencyMs: number): number {
  if (chain + parallel === 0) return 0;
  const c = Math.max(1, Math.floor(concurrency));
  return Math.max(chain, Math.ceil((chain + parallel) / c)) * latencyMs;
}

/** Changes run level by level of the dependency graph, `concurrency` at a time: the sum of `ceil(level / c)`. */
export function levelsBoundMs(levelSizes: readonly number[], concurrency: number, latencyMs: number): number {
  const c = Math.max(1, Math.floor(concurrency));
  return levelSizes.reduce((sum, n) => sum + Math.ceil(n / c), 0) * latencyMs;
}

/**
 * The earliest the last of `requests` requests can be answered under a limit of `count` requests per rolling
 * `windowMs`: the first `count` go at once, and each later group of `count` one window after the group before.
 */
export function rateBoundMs(requests: number, count: number, windowMs: number, latencyMs = 0): number {
  if (requests === 0) return 0;
  return Math.floor((requests - 1) / count) * windowMs + latencyMs;
}

/**
 * The edge reads of `plan`: the first page of the account's edge list (`pageSize` edges with their routes and
 * modules), read while the manifests load whatever they name, then one read per named edge that page does not hold.
 * The fleets' accounts hold exactly the `edges` their manifests name.
 */
export function planEdgeReads(edges: number, pageSize = 100): number {
  return 1 + Math.max(0, edges - pageSize);
}

/**
 * The edge reads of `apply` and of its convergence check, which know the edges they read: when `readsEdgePage` says
 * so (src/model/reads.ts, the client's rule), the first page of the edge list and one read per named edge beyond it,
 * else one read per edge.
 */
export function applyEdgeReads(edges: number, pageSize = 100): number {
  return readsEdgePage(edges) ? planEdgeReads(edges, pageSize) : edges;
}

/** Pages a list of `items` takes at `pageSize` (an empty list still takes one). */
export function listPages(items: number, pageSize = 100): number {
  return Math.max(1, Math.ceil(items / pageSize));
}

/**
 * The requests of the stack lease of one apply (docs/reliability.md, section 6) when no other apply runs: its create,
 * the listing of the `accountObjects` weighted backends the account holds (its own lease among them), its delete.
 * The benchmarks run apply with a TTL longer than the run, so no renewal happens.
 */
export function leaseRequests(accountObjects: number): { writes: number; pages: number } {
  return { writes: 2, pages: listPages(accountObjects + 1) };
}

/**
 * The requests of a run that its plan decides: all of them but the checks of the stack lease, which an apply makes
 * once before its first change and then at most once every `CONFIRM_MS` (src/apply/lease.ts), so their number
 * follows the run's time. Checks beyond that bound are counted, so that a run that checks too often misses its target.
 */
export function planRequests(traffic: { requests: number; spanMs: number; leaseChecks: number }): number {
  const allowed = 1 + Math.floor(traffic.spanMs / CONFIRM_MS);
  return traffic.requests - (traffic.leaseChecks <= allowed ? traffic.leaseChecks : 0);
}
